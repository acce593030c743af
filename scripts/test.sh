#!/usr/bin/env bash
# Every test of the repository: the Rust workspace, then the Python package built with
# the dev profile (it reuses `cargo test`'s compiled dependencies) and its pytest suite.
# Needs Python >= 3.9 with pip; installs maturin, pytest and the ecosystem packages the
# tests use when they are missing.
set -euo pipefail
cd "$(dirname "$0")/.."

cargo test --workspace --locked

py=${PYTHON:-python3}
need=()
for mod in maturin pytest pyarrow pandas polars duckdb datasets; do
  "$py" -c "import $mod" 2>/dev/null || need+=("$mod")
done
# The Ray tests (tests/test_ray*.py) run on a real local Ray: Ray Data and its deps (~630 MB).
"$py" -c "import ray.data" 2>/dev/null || need+=("ray[data]")
if [ ${#need[@]} -gt 0 ]; then
  # Debian's own Python refuses installs outside a virtualenv unless told otherwise (PEP 668).
  "$py" -m pip install --quiet "${need[@]}" 2>/dev/null ||
    "$py" -m pip install --quiet --break-system-packages "${need[@]}"
fi
# The parity tests compare with the binary `cargo test` built above for the CLI's
# integration tests. A separate `cargo build -p trajkit` would compile the dependencies
# again with another feature set (4 of CI's 30 minutes on a slow machine).
export TRAJKIT_BIN="${CARGO_TARGET_DIR:-$PWD/target}/debug/trajkit"
MATURIN_PEP517_ARGS="--profile dev" "$py" -m pip install --quiet --no-build-isolation --force-reinstall --no-deps ./crates/trajkit-py 2>/dev/null ||
  MATURIN_PEP517_ARGS="--profile dev" "$py" -m pip install --quiet --no-build-isolation --force-reinstall --no-deps --break-system-packages ./crates/trajkit-py
# Ray 2.60 turns on token authentication by default; the local test clusters do not need it.
RAY_AUTH_MODE=disabled "$py" -m pytest crates/trajkit-py/tests -p no:cacheprovider
