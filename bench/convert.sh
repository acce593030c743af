#!/usr/bin/env bash
# Measures `trajkit convert` throughput and peak memory on a corpus built from the real
# fixtures. Usage: bench/convert.sh [CORPUS_DIR]   (default /tmp/trajkit-bench)
set -euo pipefail
cd "$(dirname "$0")/.."
corpus=${1:-/tmp/trajkit-bench}
[ -d "$corpus/gym" ] || python3 bench/make_corpus.py "$corpus" --gym-mb "${GYM_MB:-1000}" --atif-mb "${ATIF_MB:-200}"
cargo build --release -q
bin=target/release/trajkit
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
printf '| input | threads | MB | trajectories | seconds | MB/s | trajectories/s | peak RSS MB |\n|---|---|---|---|---|---|---|---|\n'
for family in gym atif; do
  mb=$(du -sm --apparent-size "$corpus/$family" | cut -f1)
  for threads in 1 2; do
    /usr/bin/time -v "$bin" convert "$corpus/$family" --threads "$threads" -o "$out/out.jsonl.zst" \
      2>"$out/time.txt" >/dev/null || true
    secs=$(awk -F': ' '/Elapsed \(wall clock\)/ {n=split($2,a,":"); s=0; for(i=1;i<=n;i++) s=s*60+a[i]; print s}' "$out/time.txt")
    rss=$(awk -F': ' '/Maximum resident set size/ {printf "%.0f", $2/1024}' "$out/time.txt")
    n=$(grep -o 'wrote [0-9]*' "$out/time.txt" | cut -d' ' -f2)
    awk -v f="$family" -v t="$threads" -v mb="$mb" -v n="$n" -v s="$secs" -v r="$rss" \
      'BEGIN { printf "| %s | %s | %d | %d | %.2f | %.0f | %.0f | %s |\n", f, t, mb, n, s, mb/s, n/s, r }'
  done
done
