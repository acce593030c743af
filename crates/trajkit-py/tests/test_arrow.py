"""`read_arrow`'s rows: the `record` column is `trajkit convert`'s output byte for byte on
every real fixture family, the summary columns are the record's own fields, and batches
are bounded by bytes as well as rows (so memory in flight does not grow with record size)."""

import json
import subprocess

import pyarrow as pa
import pytest

import trajkit
from conftest import FAMILIES, FIXTURES, rust_binary

# read_arrow's batch bounds (crates/trajkit-py/src/arrow.rs: BATCH_ROWS, BATCH_BYTES).
BATCH_ROWS = 1024
BATCH_BYTES = 16 << 20


def convert_lines(path: str) -> subprocess.CompletedProcess:
    return subprocess.run([rust_binary(), "convert", path, "-o", "-"], capture_output=True, check=False)


def summary_of(record: dict) -> dict:
    """The summary columns as docs/python.md defines them from the canonical record."""
    prov, task, outcome, agent = record["provenance"], record["task"], record["outcome"], record.get("agent", {})
    return {
        "id": record["id"],
        "format": prov["format"],
        "source_path": prov["path"],
        "source_line": prov.get("line"),
        "task_key": task["key"],
        "task_id": task.get("id"),
        "environment": task.get("environment"),
        "outcome": outcome["status"],
        "verification": outcome["verification"],
        "reward": outcome.get("reward"),
        "agent": agent.get("name"),
        "model": agent.get("model"),
        "steps": len(record["steps"]),
        "tool_calls": sum(len(s.get("tool_calls", [])) for s in record["steps"]),
    }


@pytest.mark.parametrize("family", FAMILIES)
def test_record_column_is_convert_output(family: str) -> None:
    path = str(FIXTURES / family)
    got = convert_lines(path)
    if got.returncode == 2:
        # No trajectory file at all (the sqlite family): nothing to compare.
        with pytest.raises(trajkit.InputError):
            trajkit.read_arrow(path).read_all()
        return
    table = trajkit.read_arrow(path).read_all()
    assert [r.encode() for r in table["record"].to_pylist()] == got.stdout.splitlines()
    for row in table.to_pylist():
        record = json.loads(row.pop("record"))
        assert row == summary_of(record)


def test_batches_are_bounded_by_bytes(tmp_path) -> None:
    """Synthetic (no real file is this large): the real Gym rollouts repeated with a
    distinct `_bench_copy` field, as bench/make_corpus.py does, until about 40 MiB; the
    batches are packed greedily up to BATCH_BYTES of canonical JSON."""
    rows = []
    for f in sorted((FIXTURES / "gym").glob("*.jsonl")):
        for line in f.read_text(encoding="utf-8").splitlines():
            try:
                row = json.loads(line)
            except ValueError:
                continue
            if isinstance(row, dict) and isinstance(row.get("response"), dict):
                row.pop("_ng_task_index", None)
                rows.append(row)
    corpus, written, copies = tmp_path / "rollouts.jsonl", 0, 0
    with open(corpus, "w", encoding="utf-8") as fh:
        while written < 40 << 20:
            for row in rows:
                written += fh.write(json.dumps(dict(row, _bench_copy=copies)) + "\n")
            copies += 1
    expected = convert_lines(str(corpus)).stdout.splitlines()
    # The 5 bbq lines of each copy are rejected (not_a_rollout), as in the fixture itself.
    assert (copies, len(rows), len(expected)) == (11, 118, 11 * 113)

    batches = list(trajkit.read_arrow(str(corpus)))
    sizes = [sum(len(r.encode()) for r in b["record"].to_pylist()) for b in batches]
    assert sum(b.num_rows for b in batches) == len(expected)
    for i, (batch, size) in enumerate(zip(batches, sizes)):
        assert batch.num_rows <= BATCH_ROWS
        assert size <= BATCH_BYTES or batch.num_rows == 1
        if i + 1 < len(batches):
            # Greedy: the next batch's first record would not have fitted.
            first_next = len(batches[i + 1]["record"][0].as_py().encode())
            assert batch.num_rows == BATCH_ROWS or size + first_next > BATCH_BYTES
    table = pa.Table.from_batches(batches)
    assert [r.encode() for r in table["record"].to_pylist()] == expected
