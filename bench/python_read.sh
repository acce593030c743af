#!/usr/bin/env bash
# Compares the Python package's `read_arrow` (and `read`, dicts) with `trajkit convert` on
# the Gym corpus of bench/make_corpus.py: wall time and peak RSS under /usr/bin/time -v,
# median of RUNS runs (default 3), release builds of both.
# Usage: bench/python_read.sh [CORPUS_DIR]   (default /tmp/trajkit-bench; GYM_MB sets its size)
set -euo pipefail
cd "$(dirname "$0")/.."
corpus=${1:-/tmp/trajkit-bench}
runs=${RUNS:-3}
[ -d "$corpus/gym" ] || python3 bench/make_corpus.py "$corpus" --gym-mb "${GYM_MB:-1000}" --atif-mb 0
cargo build --release -q -p trajkit
python3 -m pip install --quiet --no-build-isolation --force-reinstall --no-deps ./crates/trajkit-py
bin=target/release/trajkit
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

# label, command...: prints "| label | MiB | seconds | MiB/s | peak RSS MiB |"
measure() {
  local label=$1; shift
  local times=() rss=0
  for _ in $(seq "$runs"); do
    /usr/bin/time -v "$@" 2>"$out/time.txt" >/dev/null
    times+=("$(awk -F': ' '/Elapsed \(wall clock\)/ {n=split($2,a,":"); s=0; for(i=1;i<=n;i++) s=s*60+a[i]; print s}' "$out/time.txt")")
    r=$(awk -F': ' '/Maximum resident set size/ {printf "%.0f", $2/1024}' "$out/time.txt")
    [ "$r" -gt "$rss" ] && rss=$r
  done
  secs=$(printf '%s\n' "${times[@]}" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
  mib=$(du -sm --apparent-size "$corpus/gym" | cut -f1)
  awk -v l="$label" -v mb="$mib" -v s="$secs" -v r="$rss" \
    'BEGIN { printf "| %s | %d | %.2f | %.0f | %s |\n", l, mb, s, mb/s, r }'
}

printf '| run | MiB | seconds (median) | MiB/s | peak RSS MiB |\n|---|---|---|---|---|\n'
measure "trajkit convert -o out.jsonl.zst" "$bin" convert "$corpus/gym" -o "$out/out.jsonl.zst"
measure "trajkit convert -o /dev/null" "$bin" convert "$corpus/gym" -o /dev/null
measure "python: read_arrow, batches counted" python3 -c \
  "import sys, trajkit; print(sum(b.num_rows for b in trajkit.read_arrow(sys.argv[1])))" "$corpus/gym"
measure "python: read (dicts)" python3 -c \
  "import sys, trajkit; print(sum(1 for _ in trajkit.read(sys.argv[1])))" "$corpus/gym"
