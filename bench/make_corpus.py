#!/usr/bin/env python3
"""Builds a large benchmark corpus from the real fixtures, with unique ids.

Gym: every rollout line of tests/fixtures/real/gym is repeated with a distinct
`_bench_copy` field (so no line is a byte-identical duplicate) until the target size.
ATIF: every top-level single-file ATIF fixture is copied with a distinct session_id.

With --distinct every copy after the first has each letter run of each text that holds a
space (prose, tool arguments) suffixed with the copy's number, so copies are neither the
same interaction nor near-duplicates, and their instructions differ: what a corpus of real,
distinct rollouts costs `build` (content sketched and fingerprinted once per record).

usage: make_corpus.py OUT_DIR [--gym-mb 1000] [--atif-mb 200] [--distinct]
"""
import argparse, json, os, pathlib, re

WORD = re.compile(r"[A-Za-z]+")


def distinct(value, copy: int):
    """`value` with each letter run of each string holding a space suffixed with `copy`."""
    if copy == 0:
        return value
    if isinstance(value, str):
        if " " not in value:
            return value
        tag = f"q{copy}"
        return WORD.sub(lambda m: m.group(0) + tag, value)
    if isinstance(value, list):
        return [distinct(v, copy) for v in value]
    if isinstance(value, dict):
        return {k: distinct(v, copy) for k, v in value.items()}
    return value

ROOT = pathlib.Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "real"


def gym(out: pathlib.Path, target: int, make_distinct: bool) -> None:
    lines = []
    for f in sorted((ROOT / "gym").glob("*.jsonl")):
        for line in f.read_text(encoding="utf-8").splitlines():
            try:
                row = json.loads(line)
            except ValueError:
                continue
            if isinstance(row, dict) and isinstance(row.get("response"), dict):
                lines.append(row)
    out.mkdir(parents=True, exist_ok=True)
    written, copy, part = 0, 0, 0
    while written < target:
        with open(out / f"rollouts-{part:03d}.jsonl", "w", encoding="utf-8") as fh:
            part_bytes = 0
            while part_bytes < 256 << 20 and written < target:
                for row in lines:
                    row = dict(distinct(row, copy) if make_distinct else row, _bench_copy=copy)
                    row.pop("_ng_task_index", None)
                    s = json.dumps(row, ensure_ascii=False) + "\n"
                    fh.write(s)
                    n = len(s.encode("utf-8"))
                    part_bytes += n
                    written += n
                copy += 1
        part += 1
    print(f"gym: {written / 1e6:.0f} MB in {part} files, {copy * len(lines)} rollouts")


def atif(out: pathlib.Path, target: int, make_distinct: bool) -> None:
    docs = [json.loads(f.read_text(encoding="utf-8")) for f in sorted((ROOT / "atif").glob("*.trajectory.json"))]
    out.mkdir(parents=True, exist_ok=True)
    written, n = 0, 0
    while written < target:
        copy = n // len(docs)
        for d in docs:
            d = dict(distinct(d, copy) if make_distinct else d, session_id=f"bench-{n}")
            s = json.dumps(d, ensure_ascii=False)
            sub = out / f"{n // 1000:04d}"
            sub.mkdir(exist_ok=True)
            (sub / f"t{n}.trajectory.json").write_text(s, encoding="utf-8")
            written += len(s.encode("utf-8"))
            n += 1
    print(f"atif: {written / 1e6:.0f} MB in {n} files")


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("out")
    p.add_argument("--gym-mb", type=int, default=1000)
    p.add_argument("--atif-mb", type=int, default=200)
    p.add_argument("--distinct", action="store_true")
    a = p.parse_args()
    gym(pathlib.Path(a.out) / "gym", a.gym_mb << 20, a.distinct)
    atif(pathlib.Path(a.out) / "atif", a.atif_mb << 20, a.distinct)
