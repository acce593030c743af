#!/usr/bin/env bash
# A/B of two trajkit binaries on one command (convert, inspect, validate or build),
# interleaved on the same input (A B, then B A, in turn) so that the shared machine's load and any
# advantage of running second hit both alike: RUNS runs
# of each (default 5); median wall, CPU (user + system) and system seconds, MiB/s of input
# (uncompressed bytes on disk) per wall second and per CPU second, the load average at the
# start, and the ratios B/A of the medians.
# Usage: bench/ab.sh BIN_A BIN_B COMMAND INPUT... [-- EXTRA ARGS]   (THREADS=2 by default)
set -euo pipefail
[ $# -ge 4 ] || { echo "usage: $0 BIN_A BIN_B convert|inspect|validate|build INPUT... [-- ARGS]" >&2; exit 2; }
a=$1 b=$2 cmd=$3
shift 3
inputs=() extra=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do inputs+=("$1"); shift; done
[ $# -gt 0 ] && { shift; extra=("$@"); }
threads=${THREADS:-2} runs=${RUNS:-5}
out=$(mktemp -d "${OUT_DIR:-${TMPDIR:-/tmp}}/trajkit-ab.XXXXXX")
trap 'rm -rf "$out"' EXIT
mib=$(du -scbL "${inputs[@]}" | tail -1 | awk '{printf "%.1f", $1 / 1048576}')

# Reads every input once, untimed, so that each run starts with its input in the page cache
# (the benchmark machine's DAMON pages out page cache unused for a minute: a first run after
# a pause read part of its input from disk).
warm() {
  find -L "${inputs[@]}" -type f -print0 | xargs -0 cat >/dev/null
}

# One run of binary $1, inputs warm; appends "wall cpu system" seconds to $out/$2.
run() {
  warm
  local args=("$cmd" "${inputs[@]}" --threads "$threads")
  [ "$cmd" = convert ] && args+=(-o "$out/out.jsonl.zst")
  [ "$cmd" = build ] && args+=(-o "$out/lib" --quiet)
  /usr/bin/time -v "$1" "${args[@]}" ${extra[@]+"${extra[@]}"} >/dev/null 2>"$out/time.txt" || true
  awk -F': ' '/Elapsed \(wall clock\)/ {n=split($2,a,":"); s=0; for(i=1;i<=n;i++) s=s*60+a[i]; w=s}
              /User time/ {u=$2} /System time/ {sys=$2} END {print w, u + sys, sys}' "$out/time.txt" >>"$out/$2"
  rm -rf "$out/out.jsonl.zst" "$out/lib"
}
load=$(cut -d' ' -f1-3 /proc/loadavg)
# The order alternates (A B, B A, ...): the second of two back-to-back runs measured up to 4 %
# faster on this machine whichever binary it was (docs/PERFORMANCE.md, step 153).
for i in $(seq "$runs"); do
  if [ $((i % 2)) = 1 ]; then run "$a" a; run "$b" b; else run "$b" b; run "$a" a; fi
done
median() { sort -n | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }
col() { cut -d' ' -f"$1" "$out/$2" | median; }
printf 'trajkit %s of %s MiB, --threads %s, %s runs each, interleaved in alternating order; load average at start %s\n\n' \
  "$cmd" "$mib" "$threads" "$runs" "$load"
printf '| binary | wall s | CPU s | system s | MiB/s (wall) | MiB/CPU-s | all wall s |\n|---|---|---|---|---|---|---|\n'
for side in a b; do
  bin=$a; [ $side = b ] && bin=$b
  w=$(col 1 $side) c=$(col 2 $side) s=$(col 3 $side)
  printf '| %s %s | %s | %.2f | %s | %.0f | %.0f | %s|\n' "${side^^}" "$bin" "$w" "$c" "$s" \
    "$(echo "$mib / $w" | bc -l)" "$(echo "$mib / $c" | bc -l)" "$(cut -d' ' -f1 "$out/$side" | tr '\n' ' ')"
done
awk -v wa="$(col 1 a)" -v wb="$(col 1 b)" -v ca="$(col 2 a)" -v cb="$(col 2 b)" \
  'BEGIN { printf "\nB/A wall: %.3f  B/A CPU: %.3f\n", wb / wa, cb / ca }'
