#!/usr/bin/env bash
# Interleaved A/B of two trajkit binaries' `build` on bench/finalize_scale.py's templated
# corpora (one instruction template with a number in it): wall and CPU seconds of the build
# and the task-cluster stage (TRAJKIT_TIMING=1), ROUNDS rounds (default 2) per size, and
# whether the two indexes hold equal tables (row by row).
# Usage: bench/clusters_ab.sh BIN_A BIN_B WORK_DIR [N...]   (N default: 100000 200000)
set -euo pipefail
[ $# -ge 3 ] || { echo "usage: $0 BIN_A BIN_B WORK_DIR [N...]" >&2; exit 2; }
a=$(realpath "$1") b=$(realpath "$2") work=$3
shift 3
sizes=("${@:-100000 200000}")
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$work"
cd "$work"
for n in ${sizes[@]}; do
  # The corpus exactly as finalize_scale.py makes it (its make_corpus; no trajkit module needed).
  [ -d "corpus-$n-4" ] || python3 - "$here/finalize_scale.py" "$n" <<'PY'
import importlib.util, sys, types
sys.modules["trajkit"] = types.SimpleNamespace(_native=None)
spec = importlib.util.spec_from_file_location("fs", sys.argv[1]); fs = importlib.util.module_from_spec(spec); spec.loader.exec_module(fs)
fs.make_corpus(f"corpus-{sys.argv[2]}-4", int(sys.argv[2]), 4)
PY
  for round in $(seq "${ROUNDS:-2}"); do
    for side in a b; do
      bin=$a; [ $side = b ] && bin=$b
      rm -rf "lib-$side"
      TRAJKIT_TIMING=1 /usr/bin/time -v "$bin" build "corpus-$n-4" -o "lib-$side" --threads 2 --quiet >/dev/null 2>"$side.err"
      stage=$(awk '/\] task clusters/ {gsub(/[][s]/,"",$2); s=$2} /\] indexing/ {gsub(/[][s]/,"",$2); e=$2} END {printf "%.2f", e-s}' "$side.err")
      wall=$(awk -F': ' '/Elapsed/ {n=split($2,t,":"); s=0; for(i=1;i<=n;i++) s=s*60+t[i]; print s}' "$side.err")
      cpu=$(awk -F': ' '/User time/ {u=$2} /System time/ {s=$2} END {print u+s}' "$side.err")
      echo "$n round $round ${side^^}: wall $wall s, CPU $cpu s, task clusters $stage s, load $(cut -d' ' -f1 /proc/loadavg)"
    done
    python3 - lib-a/index.sqlite lib-b/index.sqlite <<'PY'
import hashlib, sqlite3, sys
def tables(db):
    c = sqlite3.connect(db)
    names = [r[0] for r in c.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")]
    return {t: hashlib.sha256(repr(sorted(map(repr, c.execute(f'SELECT * FROM "{t}"')))).encode()).hexdigest() for t in names}
a, b = tables(sys.argv[1]), tables(sys.argv[2])
print(f"  index tables: {len(a)}, unequal: {sorted(t for t in a.keys() | b.keys() if a.get(t) != b.get(t))}")
PY
  done
done
rm -rf lib-a lib-b a.err b.err
