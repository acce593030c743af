#!/usr/bin/env bash
# Issue 14's title measured: CPU per byte of the code at an earlier commit (default 6559c8e,
# main before the issue's first step landed) against this tree's release build, on each job
# the issue names: ATIF `validate` and `inspect`, Gym `inspect`, `validate` and `convert`,
# `build` of the whole corpus. Each job is bench/ab.sh (earlier build as A, interleaved);
# the last table gives every job's B/A ratios and how many times less CPU per byte B takes.
# The earlier commit is built once, in a git worktree under WORK (its cold release build
# takes about 5 minutes on 2 cores), and reused; `git worktree remove --force WORK/src-REV`
# and `rm -rf WORK` clean up after it.
# Usage: bench/since.sh CORPUS [REV]   (CORPUS made by bench/make_corpus.py: atif/ and gym/;
# WORK=/tmp/trajkit-since, RUNS=9 and BUILD_RUNS=5 runs each; TRAJKIT=BINARY times that
# binary, say scripts/pgo.sh's, instead of building target/release/trajkit)
set -euo pipefail
[ $# -ge 1 ] || { echo "usage: $0 CORPUS [REV]" >&2; exit 2; }
cd "$(dirname "$0")/.."
corpus=$1 rev=$(git rev-parse --short "${2:-6559c8e}")
work=${WORK:-/tmp/trajkit-since}
bin=${TRAJKIT:-${CARGO_TARGET_DIR:-target}/release/trajkit}
[ -n "${TRAJKIT:-}" ] || cargo build --release -q
gym=$(find "$corpus/gym" -type f | sort | head -1)
[ -d "$corpus/atif" ] && [ -n "$gym" ] || { echo "$corpus has no atif/ folder or gym/ file" >&2; exit 2; }

# The earlier commit's release binary, built once in its own worktree and target folder.
old="$work/trajkit-$rev"
if [ ! -x "$old" ]; then
  mkdir -p "$work"
  [ -d "$work/src-$rev" ] || git worktree add -f --detach "$work/src-$rev" "$rev" >/dev/null
  CARGO_TARGET_DIR="$work/target-$rev" cargo build --release -q -p trajkit --manifest-path "$work/src-$rev/Cargo.toml"
  cp "$work/target-$rev/release/trajkit" "$old"
fi

ratios=$(mktemp)
trap 'rm -f "$ratios"' EXIT
# One job through bench/ab.sh; its table printed, its ratios kept for the summary.
job() {
  local name=$1 runs=$2
  shift 2
  local log
  log=$(RUNS=$runs bash bench/ab.sh "$old" "$bin" "$@")
  printf '%s\n\n' "$log"
  printf '%s %s\n' "$(echo "$log" | awk '/^B\/A wall/ {print $3, $6}')" "$name" >>"$ratios"
}
job "ATIF validate" "${RUNS:-9}" validate "$corpus/atif"
job "ATIF inspect" "${RUNS:-9}" inspect "$corpus/atif"
job "Gym inspect" "${RUNS:-9}" inspect "$gym"
job "Gym validate" "${RUNS:-9}" validate "$gym"
job "Gym convert" "${RUNS:-9}" convert "$gym"
job "build" "${BUILD_RUNS:-5}" build "$corpus"

printf '| job (A: %s, B: %s) | B/A wall | B/A CPU | less CPU per byte |\n|---|---|---|---|\n' "$rev" "$bin"
awk '{wall = $1; cpu = $2; $1 = $2 = ""; sub(/^ +/, "")
      printf "| %s | %.3f | %.3f | %.1fx |\n", $0, wall, cpu, 1 / cpu}' "$ratios"
