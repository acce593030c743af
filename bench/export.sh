#!/usr/bin/env bash
# Measures `trajkit export` throughput and peak memory on a library built from the
# benchmark corpus (bench/make_corpus.py -> trajkit build). Each row is the median wall
# time of RUNS runs (default 3); MiB is the size of the corpus the library was built from.
# Usage: bench/export.sh [WORK_DIR]   (default /tmp/trajkit-export-bench; GYM_MB default 200)
set -euo pipefail
cd "$(dirname "$0")/.."
work=${1:-/tmp/trajkit-export-bench}
runs=${RUNS:-3}
cargo build --release -q -p trajkit
bin=${CARGO_TARGET_DIR:-target}/release/trajkit
if [ ! -f "$work/lib/build.json" ]; then
  python3 bench/make_corpus.py "$work/corpus" --gym-mb "${GYM_MB:-200}" --atif-mb "${ATIF_MB:-20}"
  "$bin" build -q "$work/corpus" -o "$work/lib" || true
fi
mib=$(du -sm --apparent-size "$work/corpus" | cut -f1)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
echo "| view | format | output | corpus MiB | rows | seconds | MiB/s | rows/s | peak RSS MiB |"
echo "|---|---|---|---|---|---|---|---|---|"
measure() {
  local view=$1 format=$2 name=$3 times=() rss=0 rows=0
  for _ in $(seq "$runs"); do
    rm -rf "${out:?}"/*
    /usr/bin/time -v "$bin" export "$work/lib" --view "$view" --split train --format "$format" -o "$out/$name" \
      2>"$out/../time.$$" >/dev/null || true
    times+=("$(awk -F': ' '/Elapsed \(wall clock\)/ {n=split($2,a,":"); s=0; for(i=1;i<=n;i++) s=s*60+a[i]; print s}' "$out/../time.$$")")
    r=$(awk -F': ' '/Maximum resident set size/ {printf "%.0f", $2/1024}' "$out/../time.$$")
    [ "$r" -gt "$rss" ] && rss=$r
    rows=$(grep -o 'wrote [0-9]*' "$out/../time.$$" | cut -d' ' -f2)
  done
  rm -f "$out/../time.$$"
  secs=$(printf '%s\n' "${times[@]}" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
  awk -v v="$view" -v f="$format" -v o="$name" -v mb="$mib" -v n="$rows" -v s="$secs" -v r="$rss" \
    'BEGIN { printf "| %s | %s | %s | %d | %d | %.2f | %.0f | %.0f | %s |\n", v, f, o, mb, n, s, mb/s, n/s, r }'
}
measure full openai train.jsonl.zst
measure full parquet train.parquet
measure full sharegpt train.jsonl.gz
measure full atif train.atif.jsonl.zst
measure assistant-turn openai turns.jsonl.zst
measure assistant-turn parquet turns.parquet
