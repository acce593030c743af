#!/usr/bin/env bash
# A/B of two trajkit binaries on `convert` (for example the build as shipped against one with
# a temporary local patch), interleaved on the same input so that the shared machine's load
# hits both alike: RUNS runs of each (default 5), median wall and system CPU seconds, and the
# ratio B/A of the medians. Used for the fsync figure in docs/PERFORMANCE.md.
# Usage: bench/convert_ab.sh BIN_A BIN_B INPUT [THREADS]
set -euo pipefail
[ $# -ge 3 ] || { echo "usage: $0 BIN_A BIN_B INPUT [THREADS]" >&2; exit 2; }
a=$1 b=$2 input=$3 threads=${4:-2} runs=${RUNS:-5}
out=$(mktemp -d "${OUT_DIR:-${TMPDIR:-/tmp}}/convert-ab.XXXXXX")
trap 'rm -rf "$out"' EXIT

# One run of binary $1; appends "wall system" seconds to $out/$2.
run() {
  /usr/bin/time -v "$1" convert "$input" --threads "$threads" -o "$out/out.jsonl.zst" >/dev/null 2>"$out/time.txt"
  awk -F': ' '/Elapsed \(wall clock\)/ {n=split($2,a,":"); s=0; for(i=1;i<=n;i++) s=s*60+a[i]; w=s}
              /System time/ {sys=$2} END {print w, sys}' "$out/time.txt" >>"$out/$2"
  rm -f "$out/out.jsonl.zst"
}
for _ in $(seq "$runs"); do run "$a" a; run "$b" b; done
median() { sort -n | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }
wa=$(cut -d' ' -f1 "$out/a" | median) wb=$(cut -d' ' -f1 "$out/b" | median)
sa=$(cut -d' ' -f2 "$out/a" | median) sb=$(cut -d' ' -f2 "$out/b" | median)
printf '| binary | runs | wall s (median) | system CPU s (median) | all wall s |\n|---|---|---|---|---|\n'
printf '| A %s | %s | %s | %s | %s |\n' "$a" "$runs" "$wa" "$sa" "$(cut -d' ' -f1 "$out/a" | tr '\n' ' ')"
printf '| B %s | %s | %s | %s | %s |\n' "$b" "$runs" "$wb" "$sb" "$(cut -d' ' -f1 "$out/b" | tr '\n' ' ')"
awk -v a="$wa" -v b="$wb" 'BEGIN { printf "B/A wall: %.3f\n", b / a }'
