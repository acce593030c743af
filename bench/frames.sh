#!/usr/bin/env bash
# Measures the canonical shards' zstd frame size (crates/trajkit-library/examples/frame_sizes.rs,
# release build): rewrites the records of a built library with frames of 64 KiB to 256 MiB
# (one frame per shard: what shards were before they had frames) and prints, per size, the
# shards' size, the writer's time and the mean time to read one sampled record by seeking.
# Usage: bench/frames.sh LIBRARY [WORK_DIR]   (default WORK_DIR /tmp/trajkit-bench-frames)
set -euo pipefail
cd "$(dirname "$0")/.."
lib=$1
work=${2:-/tmp/trajkit-bench-frames}
mkdir -p "$work"
cargo build --release -q -p trajkit-library --example frame_sizes
/usr/bin/time -v "${CARGO_TARGET_DIR:-target}"/release/examples/frame_sizes "$lib" "$work" ${FRAME_KIB:-} 2>"$work/time.txt"
grep -E "Maximum resident|Elapsed" "$work/time.txt"
