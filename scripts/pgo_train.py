"""Training for scripts/pgo.sh's wheel: trajkit's Python calls on each group of inputs.

Usage: PYTHONPATH=<unpacked instrumented wheel> python3 scripts/pgo_train.py IN... [-- IN...]
Each group (split at `--`) is read as Arrow and as dicts, inspected, validated, converted,
built into a library and queried, as a user's script would.
"""

import os
import shutil
import sys
import tempfile
from typing import List

import trajkit


def train(paths: List[str], work: str) -> None:
    """Runs each Python entry point once on `paths`."""
    trajkit.read_arrow(paths).read_all()
    for _ in trajkit.read(paths):
        pass
    trajkit.inspect(paths)
    trajkit.validate(paths)
    trajkit.convert(paths, os.path.join(work, "out.jsonl.zst"))
    lib = os.path.join(work, "lib")
    trajkit.build(paths, out=lib)
    trajkit.Library(lib).query("SELECT status, count(*) FROM trajectories GROUP BY status")
    shutil.rmtree(lib)


def main() -> None:
    """Splits the arguments into groups at `--` and trains on each in a scratch folder."""
    args = sys.argv[1:]
    groups, group = [], []
    for a in args:
        if a == "--":
            groups.append(group)
            group = []
        else:
            group.append(a)
    groups.append(group)
    work = tempfile.mkdtemp()
    try:
        for g in filter(None, groups):
            train(g, work)
    finally:
        shutil.rmtree(work)


if __name__ == "__main__":
    main()
