#!/usr/bin/env bash
# The Python package's `read_arrow` (and `read`, dicts) against `trajkit convert` on the
# Gym corpus of bench/make_corpus.py, release builds of both, under /usr/bin/time -v.
#
# Throughput: on the 1 GiB corpus, every job runs once per round, RUNS rounds (default 3),
# jobs interleaved so that load from the rest of the (shared) machine hits them alike;
# median wall time, and the ratio to `convert -o /dev/null`'s median.
# Memory: peak RSS of those runs (1 GiB), and of the same consumers once on 4 GiB.
#
# Usage: bench/python_read.sh [WORK_DIR]   (default /tmp/trajkit-bench-py)
#   WORK_DIR/c4/gym: 4,000 MiB made by make_corpus.py on first use; WORK_DIR/c1/gym: hard
#   links to its first four files (1,039 MiB). The extension is built with maturin
#   (release) and unpacked into WORK_DIR/py, used through PYTHONPATH (nothing installed).
#   BASE_PY=DIR adds a row for another unpacked build (say main's) to the throughput part
#   (A/B). MEMORY=0 skips the 4 GiB part; ZST=1 adds `convert -o out.jsonl.zst`.
#   PY=DIR uses an unpacked build instead of building one; BIN=PATH uses that binary for
#   convert, BIN=wheel runs convert through the extension (trajkit::cli::run, same build).
set -euo pipefail
cd "$(dirname "$0")/.."
work=${1:-/tmp/trajkit-bench-py}
runs=${RUNS:-3}
[ -d "$work/c4/gym" ] || python3 bench/make_corpus.py "$work/c4" --gym-mb 4000 --atif-mb 0
if [ ! -d "$work/c1/gym" ]; then
  mkdir -p "$work/c1/gym"
  for i in 000 001 002 003; do ln "$work/c4/gym/rollouts-$i.jsonl" "$work/c1/gym/"; done
fi
py=${PY:-$work/py}
if [ -z "${PY:-}" ]; then
  rm -rf "$work/wheel" "$work/py"
  maturin build --release --locked -q -m crates/trajkit-py/Cargo.toml -o "$work/wheel" >/dev/null
  python3 -m zipfile -e "$work"/wheel/*.whl "$work/py"
fi
if [ "${BIN:-}" = wheel ]; then
  # The same CLI run by the extension module (trajkit::cli::run), no separate binary build.
  bin="env PYTHONPATH=$py python3 -c 'import sys, trajkit._native as n; sys.exit(n.run_cli([\"trajkit\", *sys.argv[1:]]))'"
elif [ -n "${BIN:-}" ]; then
  bin=$BIN
else
  cargo build --release --locked -q -p trajkit
  bin=${CARGO_TARGET_DIR:-target}/release/trajkit
fi
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

# Job names and their commands (run with `eval`), in the order they interleave.
jobs=("convert -o /dev/null" "read_arrow, batches counted" "read_arrow, scanned by DuckDB" "read (dicts), counted")
memory_jobs=("${jobs[@]}")
if [ -n "${ZST:-}" ]; then jobs+=("convert -o out.jsonl.zst"); fi
cmd() { # job, corpus, python path
  case $1 in
    "convert -o /dev/null") echo "$bin convert $2 -o /dev/null" ;;
    "convert -o out.jsonl.zst") echo "$bin convert $2 -o $out/out.jsonl.zst" ;;
    "read_arrow, batches counted"*) echo "env PYTHONPATH=$3 python3 bench/python_consume.py arrow $2" ;;
    "read_arrow, scanned by DuckDB"*) echo "env PYTHONPATH=$3 python3 bench/python_consume.py duckdb $2" ;;
    "read (dicts), counted"*) echo "env PYTHONPATH=$3 python3 bench/python_consume.py dicts $2" ;;
  esac
}
if [ -n "${BASE_PY:-}" ]; then jobs+=("read_arrow, batches counted (BASE_PY)"); fi
pypath() { case $1 in *BASE_PY*) echo "$BASE_PY" ;; *) echo "$py" ;; esac; }

# Runs one job once: appends "job<TAB>seconds<TAB>cpu seconds<TAB>peak RSS MiB" to $out/results.
once() { # job, corpus
  local c; c=$(cmd "$1" "$2" "$(pypath "$1")")
  eval "/usr/bin/time -v $c" 2>"$out/time.txt" >/dev/null
  awk -F': ' -v j="$1" '
    /Elapsed \(wall clock\)/ {n=split($2,a,":"); s=0; for(i=1;i<=n;i++) s=s*60+a[i]}
    /User time/ {u=$2} /System time/ {y=$2}
    /Maximum resident set size/ {r=$2/1024}
    END {printf "%s\t%.2f\t%.2f\t%.0f\n", j, s, u+y, r}' "$out/time.txt" >>"$out/results"
}

# Prints the table rows of $out/results: medians, ratio to convert -o /dev/null.
table() { # corpus
  local mib; mib=$(du -slm --apparent-size "$1" | cut -f1)  # -l: c1 is hard links into c4
  sort -t$'\t' -k1,1 -k2,2n "$out/results" | awk -F'\t' -v mb="$mib" '
    {n[$1]++; t[$1, n[$1]]=$2; c[$1, n[$1]]=$3; if ($4 > r[$1]) r[$1]=$4; if (!($1 in o)) o[$1]=++k; name[o[$1]]=$1}
    END {
      for (j in n) { m=int((n[j]+1)/2); med[j]=t[j, m]; cpu[j]=c[j, m] }
      base=med["convert -o /dev/null"]
      for (i=1; i<=k; i++) { j=name[i]
        printf "| %s | %d | %d | %.2f | %.0f | %.2f | %.2f | %d |\n", j, mb, n[j], med[j], mb/med[j], base/med[j], cpu[j], r[j] }
    }'
}

header='| run | MiB | runs | seconds (median) | MiB/s | × convert -o /dev/null | CPU s (median run) | peak RSS MiB |
|---|---|---|---|---|---|---|---|'
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
echo; echo "Throughput, 1 GiB ($runs rounds, interleaved):"; echo "$header"
: >"$out/results"
for _ in $(seq "$runs"); do for j in "${jobs[@]}"; do once "$j" "$work/c1/gym"; done; done
table "$work/c1/gym"
if [ "${MEMORY:-1}" != 0 ]; then
  # Peak RSS on 1 GiB is in the table above; the same consumers once on 4 GiB.
  echo; echo "Memory, 4 GiB (one run each):"; echo "$header"
  : >"$out/results"
  for j in "${memory_jobs[@]}"; do once "$j" "$work/c4/gym"; done
  table "$work/c4/gym"
fi
echo; echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
