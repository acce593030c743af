#!/usr/bin/env bash
# Instructions two trajkit binaries execute for one command on the same input, counted by
# valgrind's callgrind: the same on every run of one binary, where timings on a shared
# machine move by 10 % between identical runs. For CPU-bound changes too small for
# bench/ab.sh. It counts instructions, not time: memory stalls and the kernel are not in it,
# and SHA-256 runs its software path under valgrind (SHA-NI is not emulated), so hashing
# weighs several times what it does natively. Use an input of tens of MB (valgrind runs
# about 50x slower). Needs valgrind (`apt-get install valgrind`).
# Usage: bench/instructions.sh BIN_A BIN_B COMMAND INPUT... [-- EXTRA ARGS]   (one thread)
# Keeps each profile as $OUT_DIR/callgrind.{a,b}.out for `callgrind_annotate` when OUT_DIR is set.
set -euo pipefail
[ $# -ge 4 ] || { echo "usage: $0 BIN_A BIN_B convert|inspect|validate|build INPUT... [-- ARGS]" >&2; exit 2; }
command -v valgrind >/dev/null || { echo "$0: needs valgrind (apt-get install valgrind)" >&2; exit 2; }
a=$1 b=$2 cmd=$3
shift 3
inputs=() extra=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do inputs+=("$1"); shift; done
[ $# -gt 0 ] && { shift; extra=("$@"); }
keep=${OUT_DIR:-}
out=$(mktemp -d "${TMPDIR:-/tmp}/trajkit-instructions.XXXXXX")
trap 'rm -rf "$out"' EXIT

# Instructions binary $1 executes; its profile goes to $out/callgrind.$2.out.
count() {
  local args=("$cmd" "${inputs[@]}" --threads 1)
  [ "$cmd" = convert ] && args+=(-o "$out/out.jsonl.zst")
  [ "$cmd" = build ] && args+=(-o "$out/lib" --quiet)
  valgrind --tool=callgrind --callgrind-out-file="$out/callgrind.$2.out" \
    "$1" "${args[@]}" ${extra[@]+"${extra[@]}"} >/dev/null 2>"$out/valgrind.txt" || true
  rm -rf "$out/out.jsonl.zst" "$out/lib"
  awk '/Collected :/ {gsub(",", "", $NF); print $NF}' "$out/valgrind.txt"
}
ia=$(count "$a" a)
ib=$(count "$b" b)
[ -n "$ia" ] && [ -n "$ib" ] || { echo "$0: valgrind printed no count" >&2; exit 1; }
if [ -n "$keep" ]; then
  mkdir -p "$keep"
  cp "$out"/callgrind.*.out "$keep"/
fi
printf 'trajkit %s of %s, one thread: instructions executed\n\n' "$cmd" "${inputs[*]}"
printf '| binary | instructions |\n|---|---|\n| A %s | %s |\n| B %s | %s |\n\n' "$a" "$ia" "$b" "$ib"
awk -v a="$ia" -v b="$ib" 'BEGIN { printf "B/A instructions: %.4f\n", b / a }'
