#!/usr/bin/env bash
# `trajkit.ray.build` against `trajkit build` on the same corpus (default the 1 GB
# bench/make_corpus.py corpus: Gym JSONL and Harbor ATIF, 5:1), release builds of both.
#
# One machine: RUNS rounds (default 3), the two builds interleaved in each round so that
# load from the rest of the machine hits both alike. Per job: the median wall time, the
# CLI's peak RSS (/usr/bin/time -v) and the Ray process tree's peak PSS (bench/ray_build.py
# samples the driver and every Ray process it started); the Ray build's wall time is the
# build call's, Ray's own start is shown apart. Then one two-node build (ray.cluster_utils
# .Cluster, one CPU per node): tasks, input bytes, trajectories and busy seconds per node.
# Last, the two libraries are compared (crates/trajkit-py/tests/library_compare.py: every
# record, row, index table, summary and coverage).
#
# Usage: bench/ray_build.sh [WORK_DIR]   (default /tmp/trajkit-bench-ray)
#   MB=1000 corpus size (WORK_DIR/corpus-MB, made on first use); CPUS=2 for the local Ray;
#   PY=DIR an unpacked release build of the package (otherwise maturin builds one into
#   WORK_DIR/py); BIN=PATH the trajkit binary (otherwise `cargo build --release`);
#   TWO_NODES=0 skips the two-node build (its library is then not compared either).
set -euo pipefail
cd "$(dirname "$0")/.."
work=${1:-/tmp/trajkit-bench-ray}
mb=${MB:-1000}
runs=${RUNS:-3}
cpus=${CPUS:-2}
mkdir -p "$work"
corpus="$work/corpus-$mb"
[ -d "$corpus" ] || python3 bench/make_corpus.py "$corpus" --gym-mb $((mb * 5 / 6)) --atif-mb $((mb / 6)) >/dev/null
py=${PY:-$work/py}
if [ -z "${PY:-}" ]; then
  rm -rf "$work/wheel" "$work/py"
  maturin build --release --locked -q -m crates/trajkit-py/Cargo.toml -o "$work/wheel" >/dev/null
  python3 -m zipfile -e "$work"/wheel/*.whl "$work/py"
fi
bin=${BIN:-}
if [ -z "$bin" ]; then
  cargo build --release --locked -q -p trajkit
  bin=${CARGO_TARGET_DIR:-target}/release/trajkit
fi
export RAY_AUTH_MODE=disabled PYTHONPATH="$py"

seconds() { awk -F': ' '/Elapsed \(wall clock\)/ {n=split($2,a,":"); s=0; for(i=1;i<=n;i++) s=s*60+a[i]; print s}' "$1"; }
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
cli_t=() ray_t=() cli_rss=0 ray_pss=0
for round in $(seq "$runs"); do
  rm -rf "$work/lib-cli" "$work/lib-ray"
  /usr/bin/time -v "$bin" build "$corpus" -o "$work/lib-cli" --quiet 2>"$work/time.txt" >/dev/null || [ $? -eq 1 ]
  cli_t+=("$(seconds "$work/time.txt")")
  r=$(awk -F': ' '/Maximum resident set size/ {printf "%.0f", $2/1024}' "$work/time.txt")
  [ "$r" -gt "$cli_rss" ] && cli_rss=$r
  python3 bench/ray_build.py local "$corpus" "$work/lib-ray" --cpus "$cpus" > "$work/ray-$round.json"
  ray_t+=("$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["build_s"])' "$work/ray-$round.json")")
  p=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["peak_pss_mib"])' "$work/ray-$round.json")
  [ "$p" -gt "$ray_pss" ] && ray_pss=$p
  echo "round $round: trajkit build ${cli_t[-1]} s, Ray build ${ray_t[-1]} s ($(cat "$work/ray-$round.json"))" >&2
done
mib=$(du -sLm --apparent-size "$corpus" | cut -f1)
c=$(printf '%s\n' "${cli_t[@]}" | median)
r=$(printf '%s\n' "${ray_t[@]}" | median)
echo "corpus $mib MiB, $runs rounds, load average $(cut -d' ' -f1-3 /proc/loadavg)"
printf '| build | seconds (median) | MiB/s | peak memory MiB |\n|---|---|---|---|\n'
awk -v c="$c" -v m="$mib" -v x="$cli_rss" 'BEGIN { printf "| trajkit build | %.1f | %.0f | %s (RSS) |\n", c, m/c, x }'
awk -v r="$r" -v m="$mib" -v x="$ray_pss" 'BEGIN { printf "| trajkit.ray.build, %s CPUs | %.1f | %.0f | %s (PSS of the process tree) |\n", ENVIRON["CPUS"] ? ENVIRON["CPUS"] : 2, r, m/r, x }'
awk -v c="$c" -v r="$r" 'BEGIN { printf "Ray throughput / trajkit build: %.0f %%\n", 100*c/r }'
python3 - "$work/ray-$runs.json" <<'PY'
import json, sys
got = json.load(open(sys.argv[1]))
print(f"last Ray round: Ray start {got['ray_start_s']} s, phases {got['phases']}, {got['tasks']} tasks,"
      f" {got['processes']} processes at most; finalize stages {got['finalize_stages']}")
PY

libs=("$work/lib-ray")
if [ "${TWO_NODES:-1}" != 0 ]; then
rm -rf "$work/lib-two"
python3 bench/ray_build.py cluster "$corpus" "$work/lib-two" > "$work/two.json"
libs+=("$work/lib-two")
python3 - "$work/two.json" <<'PY'
import json, sys
got = json.load(open(sys.argv[1]))
print(f"\ntwo nodes (one CPU each): build {got['build_s']} s, phases {got['phases']}, Ray start {got['ray_start_s']} s")
print("| node | tasks | input MiB | trajectories | busy seconds |\n|---|---|---|---|---|")
for node, n in sorted(got["nodes"].items()):
    print(f"| {node} | {n['tasks']} | {n['bytes'] / 2**20:.0f} | {n['trajectories']} | {n['seconds']:.1f} |")
PY
fi
PYTHONPATH="$py:crates/trajkit-py/tests" python3 -c '
import sys
from library_compare import assert_same_library
for lib in sys.argv[2:]:
    assert_same_library(sys.argv[1], lib, same_shards=False)
print("the Ray libraries (" + ", ".join(sys.argv[2:]) + ") equal trajkit build'"'"'s")' "$work/lib-cli" "${libs[@]}"
