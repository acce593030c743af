"""The ``trajkit`` console script: the Rust CLI itself, run in this process."""

import signal
import sys

from trajkit import _native


def main() -> None:
    """Runs ``trajkit`` with ``sys.argv`` and exits with its status (0, 1 or 2)."""
    # Ctrl-C ends the command as it ends the binary (atomic outputs leave no partial file).
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    sys.exit(_native.run_cli(["trajkit", *sys.argv[1:]]))
