#!/usr/bin/env bash
# trajkit side by side with what users run instead, on the same inputs (issue 14's table):
# `validate` and `inspect` of ATIF against Harbor's pydantic validator in a Python loop
# (skipped when the `harbor` package is not installed), and `convert` of Gym JSONL against a
# throw-away orjson script (bench/peer_orjson.py); `inspect` of the Gym input for reference.
# Every input file is read once, untimed, before each command. Each job is run
# RUNS times (default 1), trajkit and its peer interleaved; medians of wall and CPU (user +
# system) seconds, and the ratio peer / trajkit (above 1: trajkit is faster).
# With SCOUT (Inspect Scout's `scout` command), also `build` of ATIF_DIR against Scout's import
# of it into a transcript database (`scout import atif`), the issue's third peer.
# Usage: bench/peers.sh ATIF_DIR GYM_INPUT...   (TRAJKIT=target/release/trajkit, THREADS=2,
# PYTHON=python3: the interpreter with orjson and, for the validator row, Harbor. Harbor 0.26
# declares Python >= 3.12, but its trajectory models import on 3.11:
#   pip install --ignore-requires-python --no-deps harbor==0.26.0 && pip install pydantic orjson
# SCOUT: a venv's bin/scout after `pip install inspect-scout==0.6.1` and Harbor as above.)
set -euo pipefail
[ $# -ge 2 ] || { echo "usage: $0 ATIF_DIR GYM_INPUT..." >&2; exit 2; }
here=$(cd "$(dirname "$0")" && pwd)
trajkit=${TRAJKIT:-${CARGO_TARGET_DIR:-target}/release/trajkit} threads=${THREADS:-2} runs=${RUNS:-1} python=${PYTHON:-python3}
scout=${SCOUT:-}
atif=$1
shift
gym=("$@")
out=$(mktemp -d "${OUT_DIR:-${TMPDIR:-/tmp}}/trajkit-peers.XXXXXX")
trap 'rm -rf "$out"' EXIT

# Reads every input file once, untimed: each command starts with the inputs in the page
# cache. Without it the first command of a round (trajkit's validate) met the ATIF files
# evicted by the previous round's Scout import (0.45 s median against 0.21 s warm) while
# Harbor's loop, run right after it, always found them cached.
warm() {
  find "$atif" "${gym[@]}" -type f -print0 | xargs -0 cat >/dev/null
}

# Runs the command after $1 under /usr/bin/time, inputs warm; appends "wall cpu" to $out/$1.
timed() {
  local tag=$1
  shift
  warm
  /usr/bin/time -v "$@" >/dev/null 2>"$out/time.txt" || true
  awk -F': ' '/Elapsed \(wall clock\)/ {n=split($2,a,":"); s=0; for(i=1;i<=n;i++) s=s*60+a[i]; w=s}
              /User time/ {u=$2} /System time/ {sys=$2} END {print w, u + sys}' "$out/time.txt" >>"$out/$tag"
  rm -f "$out"/out.*
}
median() { sort -n | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }
col() { [ -s "$out/$2" ] && cut -d' ' -f"$1" "$out/$2" | median || echo -; }
mib() { du -scbL "$@" | tail -1 | awk '{printf "%.1f", $1 / 1048576}'; }

harbor_loop='
import sys, pathlib
from harbor.models.trajectories import Trajectory
bad = 0
for p in sorted(pathlib.Path(sys.argv[1]).rglob("*.json")):
    try:
        Trajectory.model_validate_json(p.read_bytes())
    except Exception:
        bad += 1
print(bad, "invalid", file=sys.stderr)
'
has_harbor=$("$python" -c 'import harbor.models.trajectories' 2>/dev/null && echo yes || echo no)
for _ in $(seq "$runs"); do
  timed tk_validate "$trajkit" validate "$atif" --threads "$threads"
  timed tk_inspect_atif "$trajkit" inspect "$atif" --threads "$threads"
  [ "$has_harbor" = yes ] && timed peer_validate "$python" -c "$harbor_loop" "$atif"
  timed tk_convert "$trajkit" convert "${gym[@]}" --threads "$threads" -o "$out/out.jsonl.zst"
  timed peer_convert "$python" "$here/peer_orjson.py" "$out/out.jsonl.gz" "${gym[@]}"
  timed tk_inspect "$trajkit" inspect "${gym[@]}" --threads "$threads"
  if [ -n "$scout" ]; then
    timed tk_build "$trajkit" build "$atif" --threads "$threads" -o "$out/lib" --quiet
    timed peer_build "$scout" import atif -P path="$atif" -T "$out/scout" --overwrite
    rm -rf "$out/lib" "$out/scout"
  fi
done

printf 'load average at end: %s; %s run(s) each; --threads %s\n\n' "$(cut -d' ' -f1-3 /proc/loadavg)" "$runs" "$threads"
printf '| job | MiB | trajkit wall s | trajkit CPU s | peer | peer wall s | peer CPU s | ratio wall | ratio CPU |\n'
printf '|---|---|---|---|---|---|---|---|---|\n'
row() { # job, MiB, trajkit tag, peer name, peer tag
  local tw tc pw pc
  tw=$(col 1 "$3") tc=$(col 2 "$3") pw=$(col 1 "$5") pc=$(col 2 "$5")
  awk -v j="$1" -v m="$2" -v tw="$tw" -v tc="$tc" -v p="$4" -v pw="$pw" -v pc="$pc" 'BEGIN {
    rw = (pw == "-" ? "-" : sprintf("%.2fx", pw / tw)); rc = (pc == "-" ? "-" : sprintf("%.2fx", pc / tc))
    printf "| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", j, m, tw, tc, p, pw, pc, rw, rc }'
}
peer_v="Harbor validator loop"
[ "$has_harbor" = yes ] || peer_v="Harbor not installed (pip install harbor)"
row "validate ATIF" "$(mib "$atif")" tk_validate "$peer_v" peer_validate
row "inspect ATIF" "$(mib "$atif")" tk_inspect_atif "$peer_v" peer_validate
row "convert Gym to .jsonl.zst" "$(mib "${gym[@]}")" tk_convert "orjson script to .jsonl.gz" peer_convert
row "inspect Gym" "$(mib "${gym[@]}")" tk_inspect "-" none
[ -n "$scout" ] && row "build ATIF" "$(mib "$atif")" tk_build "Inspect Scout import" peer_build
true
