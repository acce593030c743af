#!/usr/bin/env python3
"""Assembles a trajkit library directory from canonical records (`trajkit convert` output),
for benchmarking `trajkit export` until `trajkit build` exists. Rows follow
crates/trajkit-library/src/row.rs; splits are 80/10/10 by a hash of the record id, the
source is the record's format, every row is training-eligible.

usage: make_library.py CANONICAL.jsonl LIBRARY_DIR     (needs the `zstd` command)
"""
import gzip, hashlib, json, pathlib, subprocess, sys


def row(t: dict, line: int) -> dict:
    steps = [s for s in t.get("steps", []) if not s.get("copied_context")]
    split_n = int(hashlib.sha256(t["id"].encode()).hexdigest()[:8], 16) % 10
    split = "train" if split_n < 8 else ("validation" if split_n == 8 else "test")
    prov, task, m = t["provenance"], t["task"], t.get("metrics") or {}
    status = t.get("outcome", {}).get("status", "unknown")
    return {
        "id": t["id"], "source": prov["format"], "format": prov["format"], "path": prov["path"],
        "line": prov.get("line"), "document_index": prov.get("document_index"),
        "shard": "canonical/part-00000.jsonl.zst", "shard_line": line,
        "task_key": task["key"], "task_id": task.get("id"), "environment": task.get("environment"),
        "model": t.get("agent", {}).get("model"), "scaffold": t.get("agent", {}).get("name"),
        "family": None, "license": "Apache-2.0", "role": "training", "status": status,
        "reward": t.get("outcome", {}).get("reward"), "outcome_known": status != "unknown",
        "verification": t.get("outcome", {}).get("verification", "unverified"),
        "structural_valid": True, "structural_problems": [], "action_observation_completeness": None,
        "decisions": sum(1 for s in steps if s["role"] == "assistant"), "steps": len(steps),
        "tool_calls": sum(len(s.get("tool_calls", [])) for s in steps), "subagents": len(t.get("subagents", [])),
        "gaps": {}, "complete": True, "sft_eligible": True, "training_eligible": True, "quality_tier": 3,
        "task_rank": 1, "duplicate_group": "dup-" + t["content_digest"][:16], "duplicate_group_size": 1,
        "split": split, "content_digest": t["content_digest"], "prompt_tokens": m.get("prompt_tokens"),
        "completion_tokens": m.get("completion_tokens"), "cost_usd": m.get("cost_usd"),
    }


def main(src: str, out: str) -> None:
    lib = pathlib.Path(out)
    (lib / "canonical").mkdir(parents=True, exist_ok=True)
    (lib / "evaluation").mkdir(parents=True, exist_ok=True)
    (lib / "build.json").write_text(json.dumps({"kind": "trajkit-library", "note": "bench/make_library.py"}))
    with open(lib / "canonical/part-00000.jsonl.zst", "wb") as shard, \
            gzip.open(lib / "evaluation/per_trajectory.jsonl.gz", "wt", compresslevel=1) as rows:
        z = subprocess.Popen(["zstd", "-1", "-q", "-c"], stdin=subprocess.PIPE, stdout=shard)
        n = 0
        with open(src, "rb") as f:
            for raw in f:
                n += 1
                z.stdin.write(raw)
                rows.write(json.dumps(row(json.loads(raw), n)) + "\n")
        z.stdin.close()
        z.wait()
    print(f"library: {n} records in {lib}")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
