#!/usr/bin/env bash
# Runs every fuzz target for a bounded time (FUZZ_SECONDS each, default 15) with a fixed seed
# (FUZZ_SEED, default 1); exits 1 when a target finds a crash or a slow input (saved under
# fuzz/artifacts/TARGET/; replay with `target/debug/trajkit-fuzz TARGET --replay FILE`).
# .ci/run calls it; see fuzz/README.md.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${FUZZ_SECONDS:-15}
seed=${FUZZ_SEED:-1}
cargo build -p trajkit-fuzz --locked --quiet
status=0
for target in formats canonical zip parquet sqlite npy redact; do
  target/debug/trajkit-fuzz "$target" --seconds "$seconds" --seed "$seed" || status=1
done
exit "$status"
