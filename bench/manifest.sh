#!/usr/bin/env bash
# Measures `trajkit manifest create` and `verify` on a multi-GB publication tree, with
# `sha256sum` (coreutils) on the same files as the reference. Each row is the median wall time
# of RUNS runs (default 3) under /usr/bin/time -v, with the largest peak resident set size.
# The tree is read once before measuring, so every run hashes from the page cache (warm):
# the figures are hashing speed, not disk speed.
# Usage: bench/manifest.sh [TREE_DIR]   (default /tmp/trajkit-bench-manifest; BIG_MIB, SMALL_FILES)
set -euo pipefail
cd "$(dirname "$0")/.."
tree=${1:-/tmp/trajkit-bench-manifest}
runs=${RUNS:-3}
big_mib=${BIG_MIB:-768}      # size of each of the 4 large files
small=${SMALL_FILES:-20000}  # number of small files (copies of the real fixtures, cycled)

if [ ! -d "$tree/big" ]; then
  mkdir -p "$tree/big" "$tree/small"
  for i in 0 1 2 3; do head -c "$((big_mib << 20))" /dev/urandom > "$tree/big/shard-$i.bin"; done
  mapfile -t sources < <(find tests/fixtures/real -type f -size -200k | sort)
  for ((i = 0; i < small; i++)); do
    d="$tree/small/$((i / 1000))"
    [ -d "$d" ] || mkdir -p "$d"
    cp "${sources[$((i % ${#sources[@]}))]}" "$d/file-$i"
  done
fi
cargo build --release -q -p trajkit
bin=$(realpath -m "${CARGO_TARGET_DIR:-target}")/release/trajkit
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
find "$tree" -type f -print0 | xargs -0 cat > /dev/null   # warm the page cache

files=$(find "$tree" -type f | wc -l)
mib=$(du -sm --apparent-size "$tree" | cut -f1)

# label, threads, command...
measure() {
  local label=$1 threads=$2; shift 2
  local times=() cpus=() rss=0
  for _ in $(seq "$runs"); do
    /usr/bin/time -v "$@" >/dev/null 2>"$out/time.txt"
    times+=("$(awk -F': ' '/Elapsed \(wall clock\)/ {n=split($2,a,":"); s=0; for(i=1;i<=n;i++) s=s*60+a[i]; print s}' "$out/time.txt")")
    cpus+=("$(awk -F': ' '/User time|System time/ {s+=$2} END {print s}' "$out/time.txt")")
    r=$(awk -F': ' '/Maximum resident set size/ {printf "%.0f", $2/1024}' "$out/time.txt")
    [ "$r" -gt "$rss" ] && rss=$r
  done
  secs=$(printf '%s\n' "${times[@]}" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
  cpu=$(printf '%s\n' "${cpus[@]}" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
  awk -v l="$label" -v t="$threads" -v f="$files" -v mb="$mib" -v s="$secs" -v c="$cpu" -v r="$rss" \
    -v load="$(cut -d' ' -f1 /proc/loadavg)" \
    'BEGIN { printf "| %s | %s | %d | %.2f | %.2f | %.0f | %.2f | %.0f | %s | %s |\n", l, t, f, mb/1024, s, mb/s, c, mb/c, r, load }'
}

printf '| job | threads | files | GiB | seconds (median) | MiB/s | CPU seconds | MiB per CPU-second | peak RSS MiB | load average |\n'
printf '|---|---|---|---|---|---|---|---|---|---|\n'
for t in 1 2; do
  measure "trajkit manifest create" "$t" "$bin" manifest create "$tree" -o "$out/manifest.json" --threads "$t"
done
cp "$out/manifest.json" "$tree/manifest.json"
measure "trajkit manifest verify" 2 "$bin" manifest verify "$tree" --threads 2
rm -f "$tree/manifest.json"
measure "sha256sum (coreutils), one process" 1 sh -c "find '$tree' -type f -print0 | xargs -0 sha256sum"
measure "sha256sum (coreutils), two processes" 2 sh -c "find '$tree' -type f -print0 | xargs -0 -P2 -n 500 sha256sum"
