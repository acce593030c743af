"""A mapping file (docs/formats/mapping.md) read from Python with ``format="mapping:PATH"``
gives exactly what ``trajkit convert --mapping PATH`` gives: one reader, two front ends."""

import json
import subprocess

import pytest

import trajkit
from conftest import FIXTURES, REPO, rust_binary

MAPPING = REPO / "examples" / "mappings" / "tau2-simulations.toml"


def test_read_through_a_mapping_equals_the_cli() -> None:
    path = str(FIXTURES / "tau2")
    got = subprocess.run(
        [rust_binary(), "convert", "--mapping", str(MAPPING), path, "-o", "-"], capture_output=True, check=True
    )
    expected = [json.loads(line) for line in got.stdout.splitlines()]
    records = list(trajkit.read(path, format=f"mapping:{MAPPING}"))
    assert records == expected
    assert len(records) == 20
    assert {r["provenance"]["format"] for r in records} == {"mapping:tau2-sim"}
    assert sum(len(s.get("tool_calls", [])) for r in records for s in r["steps"]) == 215


def test_a_broken_mapping_is_a_usage_error(tmp_path) -> None:
    bad = tmp_path / "m.toml"
    bad.write_text('name = "x"\n[record]\nmessages = "a..b"\n')
    with pytest.raises(trajkit.UsageError, match="`record.messages`"):
        list(trajkit.read(str(FIXTURES / "tau2"), format=f"mapping:{bad}"))
