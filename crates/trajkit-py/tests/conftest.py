"""Shared paths for the Python package's tests: the repository, its real fixtures, and
the Rust binary the figures are compared with (built by `cargo test`/`cargo build`)."""

import os
import pathlib
import shutil

import pytest

REPO = pathlib.Path(__file__).resolve().parents[3]
FIXTURES = REPO / "tests" / "fixtures" / "real"
FAMILIES = sorted(p.name for p in FIXTURES.iterdir() if p.is_dir())


def rust_binary() -> str:
    """The cargo-built `trajkit` binary (TRAJKIT_BIN overrides); the parity tests compare with it."""
    explicit = os.environ.get("TRAJKIT_BIN")
    if explicit:
        return explicit
    for profile in ("debug", "release"):
        candidate = REPO / "target" / profile / "trajkit"
        if candidate.is_file():
            return str(candidate)
    pytest.fail("no cargo-built trajkit binary: run `cargo build -p trajkit` first or set TRAJKIT_BIN")


def wheel_command() -> str:
    """The `trajkit` console script installed with the package."""
    found = shutil.which("trajkit", path=os.path.dirname(os.path.realpath(os.sys.executable)))
    if found is None:
        found = shutil.which("trajkit")
    assert found is not None, "the package's `trajkit` command is not installed"
    return found
