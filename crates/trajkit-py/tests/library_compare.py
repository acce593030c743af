"""Comparing two built libraries: the same trajectories (records), per-trajectory rows,
splits, duplicate groups, tiers, index tables, summary and coverage; with ``same_shards``
every file the build writes deterministically, byte for byte. Used by the Ray tests and
by bench/ray_build.sh on multi-GB libraries, so records and large tables are compared as
streams, never held whole."""

import gzip
import itertools
import json
import os
import sqlite3

import trajkit

#: Files that differ between any two builds: the build time, and the manifest's entry for it;
#: the gallery, titled with the library directory's name (the two builds' names differ).
TIMED = {"build.json", "manifest.json", "examples.html"}

#: Index tables and the order that makes their rows comparable.
TABLES = {
    "files": "file",
    "rejections": "rowid",
    "steps": "trajectory, step",
    "tool_calls": "trajectory, step, call",
    "duplicate_groups": "duplicate_group",
    "tasks": "task_key",
    "sources": "name",
    "meta": "key",
    "task_clusters": "task_cluster",
    "task_cluster_links": "split_key, instruction_digest",
    "near_duplicate_instructions": "a, b",
}


def rows(lib, drop=("shard", "shard_line", "shard_offset", "frame_offset")):
    with gzip.open(os.path.join(lib, "evaluation", "per_trajectory.jsonl.gz"), "rt") as f:
        out = [json.loads(line) for line in f]
    for r in out:
        for k in drop:
            r.pop(k, None)
    return out


def table(lib, name, order):
    """The rows of an index table (or subquery) in `order`, streamed."""
    conn = sqlite3.connect(f"file:{os.path.join(lib, 'index.sqlite')}?mode=ro", uri=True)
    try:
        yield from conn.execute(f"SELECT * FROM {name} ORDER BY {order}")
    finally:
        conn.close()


def assert_same_stream(a, b, what):
    """Two iterables are equal item by item (and equally long), naming the first difference."""
    for n, (x, y) in enumerate(itertools.zip_longest(a, b, fillvalue=StopIteration)):
        assert x == y, f"{what}: item {n} differs"


def files(lib):
    out = {}
    for root, _, names in os.walk(lib):
        for n in names:
            p = os.path.join(root, n)
            out[os.path.relpath(p, lib)] = p
    return out


def assert_same_library(a, b, *, same_shards):
    a, b = os.fspath(a), os.fspath(b)
    ra, rb = rows(a), rows(b)
    assert len(ra) == len(rb) > 0
    assert ra == rb
    ids = [r["id"] for r in ra]
    assert len(set(ids)) == len(ids)
    assert_same_stream(trajkit.Library(a).trajectories(), trajkit.Library(b).trajectories(), "records")
    for name, order in TABLES.items():
        assert_same_stream(table(a, name, order), table(b, name, order), name)
    columns = "ordinal, id, source, path, split, task_rank, quality_tier, duplicate_group, duplicate_group_size"
    query = f"(SELECT {columns} FROM trajectories)"
    assert_same_stream(table(a, query, "ordinal"), table(b, query, "ordinal"), "trajectories")
    for name in (
        "evaluation/summary.json",
        "coverage.json",
        "evaluation/model_imitation.json",
        "evaluation/contamination.json",
    ):
        with open(os.path.join(a, name), "rb") as fa, open(os.path.join(b, name), "rb") as fb:
            assert fa.read() == fb.read(), name
    fa, fb = files(a), files(b)
    if not same_shards:
        fa = {k: v for k, v in fa.items() if not k.startswith("canonical/")}
        fb = {k: v for k, v in fb.items() if not k.startswith("canonical/")}
        skip = TIMED | {"index.sqlite", "evaluation/per_trajectory.jsonl.gz", "examples.html"}
    else:
        skip = TIMED
    assert sorted(fa) == sorted(fb)
    for name in fa:
        if name in skip:
            continue
        with open(fa[name], "rb") as x, open(fb[name], "rb") as y:
            assert x.read() == y.read(), f"{name} differs"
