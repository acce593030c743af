#!/usr/bin/env bash
# Measures `trajkit view` on a library built from a bench/make_corpus.py corpus (MB, default
# 1000; 5:1 Gym JSONL and Harbor ATIF) plus one synthetic 1,000-step trajectory: the search
# sidecar's build time and size, then list pages, searches and the 1,000-step trajectory
# page (N requests each, p50/p95/max in ms, one client on 127.0.0.1), and the server's peak
# RSS (VmHWM). Usage: bench/view.sh [WORK_DIR]   (default /tmp/trajkit-bench-view)
set -euo pipefail
cd "$(dirname "$0")/.."
work=${1:-/tmp/trajkit-bench-view}
mb=${MB:-1000}
port=${PORT:-18765}
bin=${TRAJKIT:-${CARGO_TARGET_DIR:-target}/release/trajkit}
[ -n "${TRAJKIT:-}" ] || cargo build --release -q
bin=$(realpath "$bin")
mkdir -p "$work"
corpus="$work/corpus-$mb"
if [ ! -d "$corpus" ]; then
  python3 bench/make_corpus.py "$corpus" --gym-mb $((mb * 5 / 6)) --atif-mb $((mb / 6)) >/dev/null
  # One OpenAI-messages row of 1,000 steps (500 tool calls, each answered): the long page.
  python3 - "$corpus/long" <<'PY'
import json, pathlib, sys
out = pathlib.Path(sys.argv[1]); out.mkdir(parents=True, exist_ok=True)
msgs = [{"role": "user", "content": "Fix the failing test in the repository."}]
for i in range(499):
    msgs.append({"role": "assistant", "content": f"Step {i}: looking at file {i}.",
                 "tool_calls": [{"id": f"call_{i}", "type": "function",
                                 "function": {"name": "bash", "arguments": json.dumps({"cmd": f"sed -n {i},{i+40}p src/mod_{i}.py"})}}]})
    msgs.append({"role": "tool", "tool_call_id": f"call_{i}", "content": ("line of output %d\n" % i) * 40})
msgs.append({"role": "assistant", "content": "Done."})
(out / "long.jsonl").write_text(json.dumps({"id": "bench-long-1000", "messages": msgs}) + "\n")
PY
fi
lib="$work/lib-$mb"
if [ ! -f "$lib/build.json" ]; then
  "$bin" build "$corpus" -o "$lib" --quiet || [ $? -eq 1 ]
fi
sidecar="$work/.lib-$mb.trajkit-view.sqlite"
[ -n "${KEEP_SIDECAR:-}" ] || rm -f "$sidecar"
echo "corpus $(du -sm --apparent-size "$corpus" | cut -f1) MiB; library $(du -sm "$lib" | cut -f1) MiB;" \
  "$("$bin" query "$lib" "SELECT count(*) AS trajectories FROM trajectories" --json)"

"$bin" view "$lib" --port "$port" 2>"$work/view.log" &
pid=$!
trap 'kill $pid 2>/dev/null || true' EXIT
python3 - "http://127.0.0.1:$port" "$pid" "$sidecar" "${N:-200}" <<'PY'
import random, statistics, sys, time, urllib.parse, urllib.request
base, pid, sidecar, n = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
def get(path):
    t = time.perf_counter()
    with urllib.request.urlopen(base + path, timeout=600) as r:
        body = r.read()
    return (time.perf_counter() - t) * 1000, body.decode()
def rss():
    for line in open(f"/proc/{pid}/status"):
        if line.startswith(("VmHWM", "VmRSS")):
            print(" ", line.strip())
start = time.time()
while True:
    try:
        _, body = get("/search?q=x")
        if "being built" not in body:
            break
    except OSError:
        pass
    time.sleep(0.5)
import os
print(f"search sidecar built in {time.time() - start:.1f} s: {os.path.getsize(sidecar) / 2**20:.0f} MiB")
ms, _ = get("/"); print(f"overview (first, computes the summary): {ms:.0f} ms")
def report(name, times):
    times.sort()
    p95 = times[min(len(times) - 1, int(len(times) * 0.95))]
    print(f"{name}: n={len(times)} p50={statistics.median(times):.0f} ms p95={p95:.0f} ms max={times[-1]:.0f} ms")
rng = random.Random(7)
ms, page = get("/list")
print(f"first list page (loads the list's filters and sort orders): {ms:.0f} ms")
total = int(page.split('<p id="count">')[1].split(" ")[0])
filters = ["", "outcome=success", "outcome=failure", "gap=any", "format=atif", "format=gym", "tier=2", "split=train"]
sorts = ["", "sort=steps&order=desc", "sort=reward", "sort=tool_calls&order=desc", "sort=id"]
times = []
for _ in range(n):
    q = "&".join(x for x in [rng.choice(filters), rng.choice(sorts), f"page={rng.randint(1, max(1, total // 50 // 4))}"] if x)
    times.append(get("/list?" + q)[0])
report("list page", times)
words = ["error", "python", "def", "assert", "test", "file", "import", "return", "traceback", "json", "sed", "bash"]
times = []
for _ in range(n):
    q = " ".join(rng.sample(words, rng.choice([1, 1, 2])))
    col = rng.choice(["all", "all", "calls", "results", "message"])
    times.append(get("/search?" + urllib.parse.urlencode({"q": q, "in": col, "page": rng.randint(1, 5)}))[0])
report("search", times)
_, body = get("/list?sort=steps&order=desc")
long_id = body.split('href="/trajectory?id=')[1].split('"')[0].replace("&amp;", "&")
times = [get("/trajectory?id=" + long_id)[0] for _ in range(max(5, n // 20))]
_, body = get("/trajectory?id=" + long_id)
print(f"1,000-step page: {len(body) / 2**20:.1f} MiB HTML")
report("1,000-step trajectory page", times)
ids = []
for p in range(1, 4):
    _, body = get(f"/list?page={rng.randint(1, max(1, total // 50))}")
    ids += [urllib.parse.unquote_plus(x.split('"')[0]) for x in body.split('href="/trajectory?id=')[1:]]
times = [get("/trajectory?" + urllib.parse.urlencode({"id": i.replace("&amp;", "&")}))[0] for i in ids[:n // 4]]
report("random trajectory page", times)
rss()
PY
