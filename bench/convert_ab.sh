#!/usr/bin/env bash
# A/B of two trajkit binaries on `convert` (for example the build as shipped against one with
# a temporary local patch): `bench/ab.sh` on convert. Used for the fsync figure in
# docs/PERFORMANCE.md.
# Usage: bench/convert_ab.sh BIN_A BIN_B INPUT [THREADS]
set -euo pipefail
[ $# -ge 3 ] || { echo "usage: $0 BIN_A BIN_B INPUT [THREADS]" >&2; exit 2; }
THREADS=${4:-2} exec "$(dirname "$0")/ab.sh" "$1" "$2" convert "$3"
