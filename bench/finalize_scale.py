#!/usr/bin/env python3
"""How a build's finalize (the one-node phase of the Ray build) grows with trajectories
and steps. For each N: a synthetic corpus of N OpenAI-messages trajectories of STEPS
steps (half of them tool calls, each answered; four attempts per task; every tenth
trajectory a content copy of another under a fresh id, so duplicate groups and ranks
have work), built in phases in this process with the engine's own functions (the ones
`trajkit.ray.build` schedules: plan, a partial per group, finish). Prints one row per N:
partial seconds, bytes of `entries.jsonl` handed to finalize, finalize seconds and its
stages, finalize's CPU seconds (user + system, all threads: less sensitive than wall
time to other load on the machine), finalize's peak RSS (VmHWM, reset before finalize) and the stage it peaked in
(VmRSS sampled every 0.1 s), and the index size.

Synthetic on purpose: no real corpus of millions of rollouts fits this machine; the real
1 GB and 4 GB corpora of bench/make_corpus.py are measured by bench/ray_build.sh.

usage: finalize_scale.py WORK_DIR --n 100000 200000 ... [--steps 4]
"""
import argparse
import json
import os
import shutil
import threading
import time

from trajkit import _native


def make_corpus(out: str, n: int, steps: int) -> None:
    """N trajectories in 64 MiB JSON Lines files."""
    os.makedirs(out, exist_ok=True)
    part, fh, written = 0, None, 0
    for i in range(n):
        if fh is None or written > 64 << 20:
            if fh is not None:
                fh.close()
            fh, written, part = open(os.path.join(out, f"part-{part:04d}.jsonl"), "w"), 0, part + 1
        src = i - 7 if i % 10 == 9 else i
        task = src // 4
        msgs = [{"role": "user", "content": f"Task {task}: make the test suite of package {task} pass."}]
        for s in range(steps // 2):
            call = f"call_{src}_{s}"
            msgs.append({"role": "assistant", "content": f"Step {s} of attempt {src}.", "tool_calls": [
                {"id": call, "type": "function", "function": {"name": "bash", "arguments": json.dumps({"cmd": f"pytest -k t{s}"})}}]})
            msgs.append({"role": "tool", "tool_call_id": call, "content": f"{s} passed, {src % 3} failed"})
        msgs.append({"role": "assistant", "content": "Done."})
        line = json.dumps({"id": f"run-{i}", "messages": msgs}) + "\n"
        fh.write(line)
        written += len(line)
    if fh is not None:
        fh.close()


def peak_rss_mib() -> int:
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) >> 10 for line in f if line.startswith("VmHWM:"))


def rss_mib() -> int:
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) >> 10 for line in f if line.startswith("VmRSS:"))


class Sampler(threading.Thread):
    """VmRSS every 0.1 s, as (seconds since start, MiB), until stopped."""

    def __init__(self) -> None:
        super().__init__(daemon=True)
        self.stop, self.start_time, self.samples = threading.Event(), time.monotonic(), []

    def run(self) -> None:
        while not self.stop.is_set():
            self.samples.append((time.monotonic() - self.start_time, rss_mib()))
            self.stop.wait(0.1)


def peak_stage(samples: list, stages: list) -> str:
    """The finalize stage during which the sampled RSS was highest."""
    at, _ = max(samples, key=lambda s: s[1])
    end = 0.0
    for name, seconds in stages:
        end += seconds
        if at <= end:
            return name
    return stages[-1][0] if stages else ""


def entries_bytes(staging: str) -> int:
    total = 0
    for root, _, names in os.walk(os.path.join(staging, "partials")):
        total += sum(os.path.getsize(os.path.join(root, n)) for n in names if n == "entries.jsonl")
    return total


def one(work: str, n: int, steps: int) -> dict:
    corpus, lib = os.path.join(work, f"corpus-{n}-{steps}"), os.path.join(work, f"lib-{n}-{steps}")
    if not os.path.isdir(corpus):
        make_corpus(corpus, n, steps)
    shutil.rmtree(lib, ignore_errors=True)
    options = json.dumps({"inputs": [corpus], "output": lib})
    session = _native.RayBuild(options)
    t0 = time.monotonic()
    plan = _native.plan(options, 64 << 20)
    for group in json.loads(plan)["groups"]:
        _native.build_partial(options, json.dumps(group), session.staging)
    t1 = time.monotonic()
    entries = entries_bytes(session.staging)
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")
    sampler = Sampler()
    sampler.start()
    cpu = os.times()
    summary = json.loads(session.finish(plan))
    t2 = time.monotonic()
    cpu_s = sum(os.times()[:2]) - sum(cpu[:2])
    sampler.stop.set()
    sampler.join()
    index = os.path.getsize(os.path.join(lib, "index.sqlite"))
    shutil.rmtree(lib)
    return {
        "trajectories": summary["trajectories"], "steps_each": steps, "partials_s": round(t1 - t0, 1),
        "entries_mib": round(entries / 2**20, 1), "finalize_s": round(t2 - t1, 1),
        "finalize_cpu_s": round(cpu_s, 1),
        "finalize_peak_rss_mib": peak_rss_mib(),
        "peak_in": peak_stage(sampler.samples, summary["finalize_stages"]), "index_mib": round(index / 2**20, 1),
        "stages": {k: round(v, 1) for k, v in summary["finalize_stages"] if v >= 0.05},
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("work")
    ap.add_argument("--n", type=int, nargs="+", default=[100_000, 200_000, 400_000])
    ap.add_argument("--steps", type=int, default=4)
    args = ap.parse_args()
    for n in args.n:
        print(json.dumps(one(args.work, n, args.steps)), flush=True)


if __name__ == "__main__":
    main()
