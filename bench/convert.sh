#!/usr/bin/env bash
# Measures `trajkit convert` throughput and peak memory on a corpus built from the real
# fixtures (bench/make_corpus.py). Each row is the median wall time of RUNS runs (default 3).
# Usage: bench/convert.sh [CORPUS_DIR]   (default /tmp/trajkit-bench)
set -euo pipefail
cd "$(dirname "$0")/.."
corpus=${1:-/tmp/trajkit-bench}
runs=${RUNS:-3}
[ -d "$corpus/gym" ] || python3 bench/make_corpus.py "$corpus" --gym-mb "${GYM_MB:-1000}" --atif-mb "${ATIF_MB:-200}"
[ -f "$corpus/gym-one.jsonl.gz" ] || gzip -1 -c "$corpus/gym/rollouts-000.jsonl" > "$corpus/gym-one.jsonl.gz"
cargo build --release -q
bin=${CARGO_TARGET_DIR:-target}/release/trajkit
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

# input label, path, uncompressed MiB
measure() {
  local label=$1 path=$2 mib=$3 threads=$4
  local times=() rss=0 n=0
  for _ in $(seq "$runs"); do
    /usr/bin/time -v "$bin" convert "$path" --threads "$threads" -o "$out/out.jsonl.zst" 2>"$out/time.txt" >/dev/null || true
    times+=("$(awk -F': ' '/Elapsed \(wall clock\)/ {n=split($2,a,":"); s=0; for(i=1;i<=n;i++) s=s*60+a[i]; print s}' "$out/time.txt")")
    r=$(awk -F': ' '/Maximum resident set size/ {printf "%.0f", $2/1024}' "$out/time.txt")
    [ "$r" -gt "$rss" ] && rss=$r
    n=$(grep -o 'wrote [0-9]*' "$out/time.txt" | cut -d' ' -f2)
  done
  secs=$(printf '%s\n' "${times[@]}" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
  awk -v f="$label" -v t="$threads" -v mb="$mib" -v n="$n" -v s="$secs" -v r="$rss" \
    'BEGIN { printf "| %s | %s | %d | %d | %.2f | %.0f | %.0f | %s |\n", f, t, mb, n, s, mb/s, n/s, r }'
}

mib() { du -sm --apparent-size "$1" | cut -f1; }
printf '| input | threads | MiB (uncompressed) | trajectories | seconds (median) | MiB/s | trajectories/s | peak RSS MiB |\n'
printf '|---|---|---|---|---|---|---|---|\n'
for threads in 1 2; do measure "gym JSONL, 4 files" "$corpus/gym" "$(mib "$corpus/gym")" "$threads"; done
for threads in 1 2; do measure "gym JSONL, 1 file" "$corpus/gym/rollouts-000.jsonl" "$(mib "$corpus/gym/rollouts-000.jsonl")" "$threads"; done
measure "gym JSONL.gz, 1 file" "$corpus/gym-one.jsonl.gz" "$(mib "$corpus/gym/rollouts-000.jsonl")" 2
for threads in 1 2; do measure "ATIF, $(find "$corpus/atif" -name '*.json' | wc -l) files" "$corpus/atif" "$(mib "$corpus/atif")" "$threads"; done
