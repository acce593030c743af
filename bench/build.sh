#!/usr/bin/env bash
# Measures `trajkit build` end to end (read, parse, canonicalize, score, shards, index,
# statistics, manifest) on corpora made from the real fixtures (bench/make_corpus.py):
# a 1 GB and a 4 GB corpus (Gym JSONL plus Harbor ATIF files, 5:1), each RUNS times
# (default 3), median wall time and the largest peak RSS, under /usr/bin/time -v.
# Usage: bench/build.sh [WORK_DIR]   (default /tmp/trajkit-bench-build; TRAJKIT=BINARY times
# that binary, say scripts/pgo.sh's, instead of building target/release/trajkit)
# The corpus repeats the real rollouts, so its records share a few hundred interactions and
# each is sketched once. DISTINCT=1 builds corpora whose copies are distinct interactions
# with distinct instructions (`make_corpus.py --distinct`, in corpus-MB-distinct), as a real
# corpus is; TRAJKIT_BENCH_SIGN_EVERY=1 in the environment instead sketches every record of
# the repeating corpus (docs/PERFORMANCE.md, steps 68-73).
set -euo pipefail
cd "$(dirname "$0")/.."
work=${1:-/tmp/trajkit-bench-build}
runs=${RUNS:-3}
sizes=${SIZES:-"1000 4000"}
bin=${TRAJKIT:-${CARGO_TARGET_DIR:-target}/release/trajkit}
[ -n "${TRAJKIT:-}" ] || cargo build --release -q
mkdir -p "$work"

printf '| corpus | files | MiB | trajectories | threads | seconds (median) | MiB/s | peak RSS MiB |\n'
printf '|---|---|---|---|---|---|---|---|\n'
for mb in $sizes; do
  corpus="$work/corpus-$mb${DISTINCT:+-distinct}"
  if [ ! -d "$corpus" ]; then
    python3 bench/make_corpus.py "$corpus" --gym-mb $((mb * 5 / 6)) --atif-mb $((mb / 6)) \
      ${DISTINCT:+--distinct} >/dev/null
  fi
  mib=$(du -sm --apparent-size "$corpus" | cut -f1)
  files=$(find "$corpus" -type f | wc -l)
  for threads in ${THREADS:-2}; do
    times=() rss=0 n=0
    for _ in $(seq "$runs"); do
      # Input warm, untimed (the benchmark machine pages out page cache unused for a minute).
      find "$corpus" -type f -print0 | xargs -0 cat >/dev/null
      rm -rf "$work/lib"
      /usr/bin/time -v "$bin" build "$corpus" --threads "$threads" -o "$work/lib" 2>"$work/time.txt" >/dev/null || true
      times+=("$(awk -F': ' '/Elapsed \(wall clock\)/ {n=split($2,a,":"); s=0; for(i=1;i<=n;i++) s=s*60+a[i]; print s}' "$work/time.txt")")
      r=$(awk -F': ' '/Maximum resident set size/ {printf "%.0f", $2/1024}' "$work/time.txt")
      [ "$r" -gt "$rss" ] && rss=$r
      n=$(grep -o '[0-9]* trajectories' "$work/time.txt" | head -1 | cut -d' ' -f1)
    done
    secs=$(printf '%s\n' "${times[@]}" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
    awk -v c="$mb MB" -v f="$files" -v mb="$mib" -v n="$n" -v t="$threads" -v s="$secs" -v r="$rss" \
      'BEGIN { printf "| %s | %d | %d | %s | %s | %.2f | %.0f | %s |\n", c, f, mb, n, t, s, mb/s, r }'
  done
done
rm -rf "$work/lib"
