#!/usr/bin/env bash
# Measures `trajkit state capture | diff | check` on a ~1 GB SQLite database built by
# bench/make_state_db.py (kept out of git, default /tmp/trajkit-state-bench). Each row is the
# median wall time of RUNS runs (default 3) and the largest peak resident set size, from
# /usr/bin/time -v. Usage: bench/state.sh [DIR]   (MB=200 bench/state.sh for a smaller database)
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-/tmp/trajkit-state-bench}
runs=${RUNS:-3}
[ -f "$dir/edited.db" ] || python3 bench/make_state_db.py "$dir" --mb "${MB:-1000}"
cargo build --release -q -p trajkit
bin=${CARGO_TARGET_DIR:-target}/release/trajkit
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cat > "$work/expect.toml" <<'TOML'
[[allow]]
table = "contacts"
[[allow]]
table = "contact_tags"
change = "insert"
TOML
mb=$(( $(stat -c %s "$dir/app.db") / 1048576 ))

# label, then the trajkit arguments; a command starting with "fresh" empties the store first.
measure() {
  local label=$1; shift
  local times=() cpus=() rss=0
  for _ in $(seq "$runs"); do
    if [ "$1" = fresh ]; then rm -rf "$work/store"; fi
    local args=("${@}"); [ "$1" = fresh ] && args=("${@:2}")
    /usr/bin/time -v "$bin" "${args[@]}" >"$work/out.txt" 2>"$work/time.txt" || [ $? -eq 1 ]
    times+=("$(awk -F': ' '/Elapsed \(wall clock\)/ {n=split($2,a,":"); s=0; for(i=1;i<=n;i++) s=s*60+a[i]; print s}' "$work/time.txt")")
    cpus+=("$(awk -F': ' '/User time|System time/ {s+=$2} END {print s}' "$work/time.txt")")
    r=$(awk -F': ' '/Maximum resident set size/ {printf "%.0f", $2/1024}' "$work/time.txt")
    [ "$r" -gt "$rss" ] && rss=$r
  done
  secs=$(printf '%s\n' "${times[@]}" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
  cpu=$(printf '%s\n' "${cpus[@]}" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
  awk -v l="$label" -v s="$secs" -v c="$cpu" -v r="$rss" -v mb="$mb" \
    'BEGIN { printf "| %s | %.2f | %.2f | %.0f | %.0f |\n", l, s, c, mb/s, r }'
}

store="$work/store"
printf 'database: %s MiB (%s)\n\n' "$mb" "$dir/app.db"
printf '| job | seconds (median) | CPU seconds (median) | MiB/s of one database | peak RSS MiB |\n|---|---|---|---|---|\n'
measure "capture, digest only" state capture "$dir/app.db"
measure "capture into an empty store" fresh state capture "$dir/app.db" -o "$store"
measure "capture again, unchanged (nothing new written)" state capture "$dir/app.db" -o "$store"
"$bin" state capture "$dir/app.db" -o "$store" --json > "$work/a.json"
"$bin" state capture "$dir/edited.db" -o "$store" --json > "$work/b.json"
a=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["digest"])' "$work/a.json")
b=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["digest"])' "$work/b.json")
measure "diff of two databases" state diff "$dir/app.db" "$dir/edited.db"
measure "diff of two stored snapshots" state diff --store "$store" "$a" "$b"
measure "check of two databases" state check --expect "$work/expect.toml" "$dir/app.db" "$dir/edited.db"
printf '\nstore: %s MiB for both snapshots\n' "$(du -sm "$store" | cut -f1)"
"$bin" state diff "$dir/app.db" "$dir/edited.db" | tail -1
