#!/usr/bin/env python3
"""One `trajkit.ray.build` of a corpus, for bench/ray_build.sh: starts Ray (one local
node with N CPUs, or a two-node `ray.cluster_utils.Cluster` of one CPU each), builds,
and prints one JSON line: Ray's start time, the build call's wall time and phases, the
tasks per node (count, input bytes, trajectories, busy seconds), and the peak memory of
the whole process tree (this driver and every Ray process it started), sampled every
0.2 s as the sum of PSS (shared pages counted once) and of RSS.

usage: ray_build.py local|cluster CORPUS OUT [--cpus 2] [--group-mib 64]
"""
import argparse
import json
import os
import threading
import time

os.environ.setdefault("RAY_AUTH_MODE", "disabled")


def _children() -> dict:
    """Parent pid -> child pids, from /proc."""
    kids: dict = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        kids.setdefault(ppid, []).append(int(d))
    return kids


def tree_memory(root: int) -> tuple:
    """(PSS bytes, RSS bytes, processes) summed over `root` and its descendants."""
    kids, stack, pss, rss, n = _children(), [root], 0, 0, 0
    while stack:
        pid = stack.pop()
        stack.extend(kids.get(pid, []))
        try:
            with open(f"/proc/{pid}/smaps_rollup") as f:
                for line in f:
                    if line.startswith("Pss:"):
                        pss += int(line.split()[1]) << 10
                    elif line.startswith("Rss:"):
                        rss += int(line.split()[1]) << 10
            n += 1
        except OSError:
            pass
    return pss, rss, n


class Peak(threading.Thread):
    """Samples the process tree's memory until stopped; keeps the peaks."""

    def __init__(self) -> None:
        super().__init__(daemon=True)
        self.stop, self.pss, self.rss, self.processes = threading.Event(), 0, 0, 0

    def run(self) -> None:
        while not self.stop.is_set():
            pss, rss, n = tree_memory(os.getpid())
            self.pss, self.rss, self.processes = max(self.pss, pss), max(self.rss, rss), max(self.processes, n)
            self.stop.wait(0.2)


def per_node(tasks: list) -> dict:
    """Tasks, input bytes, trajectories and busy seconds per node."""
    nodes: dict = {}
    for t in tasks:
        n = nodes.setdefault(t["node"][:8], {"tasks": 0, "bytes": 0, "trajectories": 0, "seconds": 0.0})
        n["tasks"] += 1
        n["bytes"] += t["bytes"]
        n["trajectories"] += t["trajectories"]
        n["seconds"] += t["seconds"]
    return nodes


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=["local", "cluster"])
    ap.add_argument("corpus")
    ap.add_argument("out")
    ap.add_argument("--cpus", type=int, default=2)
    ap.add_argument("--group-mib", type=int, default=64)
    args = ap.parse_args()
    peak = Peak()
    peak.start()
    started = time.monotonic()
    import ray
    import trajkit.ray as tray

    cluster = None
    if args.mode == "local":
        ray.init(num_cpus=args.cpus, include_dashboard=False, log_to_driver=False, configure_logging=False)
    else:
        from ray.cluster_utils import Cluster

        cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "include_dashboard": False})
        cluster.add_node(num_cpus=1)
        ray.init(address=cluster.address, log_to_driver=False, configure_logging=False)
        cluster.wait_for_nodes()
    ready = time.monotonic()
    summary = tray.build(args.corpus, args.out, group_bytes=args.group_mib << 20)
    done = time.monotonic()
    peak.stop.set()
    peak.join()
    ray.shutdown()
    if cluster is not None:
        cluster.shutdown()
    print(json.dumps({
        "mode": args.mode,
        "ray_start_s": round(ready - started, 2),
        "build_s": round(done - ready, 2),
        "phases": {k: round(v, 2) for k, v in summary["phases"].items()},
        "finalize_stages": [[k, round(v, 2)] for k, v in summary["finalize_stages"]],
        "trajectories": summary["trajectories"],
        "tasks": len(summary["tasks"]),
        "nodes": per_node(summary["tasks"]),
        "peak_pss_mib": peak.pss >> 20,
        "peak_rss_mib": peak.rss >> 20,
        "processes": peak.processes,
    }))


if __name__ == "__main__":
    main()
