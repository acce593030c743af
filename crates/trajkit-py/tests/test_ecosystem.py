"""The Python ecosystem reads trajkit's output directly: Hugging Face `datasets`, pandas,
Polars and DuckDB, on the example corpus shipped in the repository."""

import json
import subprocess

import duckdb
import pandas as pd
import polars as pl
import pyarrow as pa
import pytest

import trajkit
from conftest import REPO, rust_binary

GYM = str(REPO / "examples" / "corpus" / "gym")


@pytest.fixture(scope="module")
def library(tmp_path_factory):
    out = tmp_path_factory.mktemp("lib") / "library"
    summary = trajkit.build(registry=REPO / "examples" / "sources.toml", out=out)
    return out, summary


def test_read_arrow_schema_and_rows() -> None:
    reader = trajkit.read_arrow(GYM)
    assert isinstance(reader, pa.RecordBatchReader)
    assert reader.schema.names == [
        "id", "format", "source_path", "source_line", "task_key", "task_id", "environment",
        "outcome", "verification", "reward", "agent", "model", "steps", "tool_calls", "record",
    ]
    table = reader.read_all()
    assert table.num_rows == 29
    assert pa.compute.sum(table["steps"]).as_py() == 347
    assert pa.compute.sum(table["tool_calls"]).as_py() == 177
    assert set(table["format"].to_pylist()) == {"gym"}


def test_pandas_from_read_arrow() -> None:
    df = trajkit.read_arrow(GYM).read_pandas()
    assert isinstance(df, pd.DataFrame)
    assert len(df) == 29
    # Read alone, a Gym rollout's outcome is unknown (the registry's success rule decides
    # in a library); its reward is kept: 16 of the 29 rollouts have reward > 0.
    assert df["outcome"].value_counts().to_dict() == {"unknown": 29}
    assert int((df["reward"] > 0).sum()) == 16


def test_polars_from_read_arrow() -> None:
    df = pl.from_arrow(trajkit.read_arrow(GYM).read_all())
    assert df.height == 29
    assert df.filter(pl.col("reward") > 0).height == 16


def test_duckdb_scans_the_reader_without_materialising() -> None:
    reader = trajkit.read_arrow(GYM)
    con = duckdb.connect()
    con.register("rollouts", reader)
    got = con.execute("SELECT outcome, count(*), count_if(reward > 0) FROM rollouts GROUP BY outcome").fetchall()
    assert got == [("unknown", 29, 16)]


def test_datasets_from_generator_over_read() -> None:
    import datasets

    def gen():
        for r in trajkit.read(GYM):
            yield {"id": r["id"], "task_key": r["task"]["key"], "status": r["outcome"]["status"], "steps": len(r["steps"])}

    ds = datasets.Dataset.from_generator(gen)
    assert ds.num_rows == 29
    assert sum(ds["steps"]) == 347


def test_build_summary_and_library(library) -> None:
    path, summary = library
    assert (summary["files"], summary["records"], summary["trajectories"], summary["rejected"]) == (22, 60, 38, 21)
    lib = trajkit.Library(path)
    table = lib.query("SELECT split, count(*) AS attempts FROM trajectories GROUP BY split ORDER BY split")
    assert isinstance(table, pa.Table)
    assert table.to_pydict() == {
        "split": ["protected_evaluation", "test", "train", "validation"],
        "attempts": [1, 3, 33, 1],
    }
    assert pl.from_arrow(table).height == 4
    assert table.to_pandas()["attempts"].sum() == 38
    splits = table
    assert duckdb.sql("SELECT sum(attempts) FROM splits").fetchall() == [(38,)]
    assert len(list(lib.trajectories())) == 38
    assert len(list(lib.trajectories(where="split = 'test'"))) == 3
    assert lib.rows().num_rows == 38
    stats = lib.stats()
    assert stats["attempts"] == 38
    assert stats["contamination"]["method"]["ngram_words"] == 13


def test_library_stats_equal_the_cli_json(library) -> None:
    """`Library.stats()` and `trajkit stats --json` are one library function: equal, dedup too."""
    path, _ = library
    lib = trajkit.Library(path)
    for dedup in (None, "exact", "near"):
        args = [rust_binary(), "stats", str(path), "--json"] + (["--dedup", dedup] if dedup else [])
        cli = json.loads(subprocess.run(args, check=True, capture_output=True, text=True).stdout)
        assert lib.stats(dedup) == cli
        assert "contamination" in cli


def test_library_records_stream_in_library_order(library) -> None:
    path, _ = library
    lib = trajkit.Library(path)
    ordered = [r["id"] for r in lib.trajectories()]
    assert ordered == lib.query("SELECT id FROM trajectories ORDER BY ordinal").column("id").to_pylist()
    # Stopping early stops the reading thread; the same library reads again in full.
    first = next(iter(lib.trajectories()))
    assert first["id"] == ordered[0]
    assert len(list(lib.trajectories())) == 38
    with pytest.raises(trajkit.BuildError):
        next(iter(trajkit.Library(path).trajectories(where="no_such_column = 1")))


def test_export_loads_with_datasets_in_trl_shapes(library, tmp_path) -> None:
    import datasets

    path, _ = library
    lib = trajkit.Library(path)
    full = tmp_path / "full.jsonl"
    assert lib.export(view="full", split="train", out=full) == 0
    ds = datasets.load_dataset("json", data_files=str(full), split="train")
    assert "messages" in ds.column_names and "tools" in ds.column_names
    assert ds.num_rows > 0
    turns = tmp_path / "turns.jsonl"
    assert lib.export(view="assistant-turn", split="train", out=turns) == 0
    ds = datasets.load_dataset("json", data_files=str(turns), split="train")
    assert {"prompt", "completion", "tools"} <= set(ds.column_names)


def test_export_twice_with_threads_equals_the_cli(library, tmp_path) -> None:
    """Each export runs on its own thread pool: a second `threads=` in the same process
    is accepted (a global pool would refuse it), and both equal the CLI's output."""
    path, _ = library
    lib = trajkit.Library(path)
    outs = []
    for i, threads in enumerate((1, 2)):
        out = tmp_path / f"py{i}" / "turns.jsonl"
        assert lib.export(view="assistant-turn", split="train", out=out, threads=threads) == 0
        outs.append(out)
    cli = tmp_path / "cli" / "turns.jsonl"
    argv = [rust_binary(), "export", str(path), "--view", "assistant-turn", "--split", "train", "-o", str(cli)]
    got = subprocess.run(argv, capture_output=True, text=True, check=False)
    assert got.returncode == 0, got.stderr
    expected = cli.read_bytes()
    assert len(expected.splitlines()) == 140
    for out in outs:
        assert out.read_bytes() == expected
        card = (out.parent / "README.md").read_text(encoding="utf-8")
        assert card.replace(str(out.parent), "") == (cli.parent / "README.md").read_text(encoding="utf-8").replace(
            str(cli.parent), ""
        )


def test_export_errors_are_typed(library, tmp_path) -> None:
    path, _ = library
    lib = trajkit.Library(path)
    with pytest.raises(trajkit.UsageError):
        lib.export(view="no-such-view", split="train", out=tmp_path / "x.jsonl")
    with pytest.raises(trajkit.UsageError):
        lib.export(view="full", split="train", out=tmp_path / "x.jsonl", no_such_flag=True)
    assert not (tmp_path / "x.jsonl").exists()
