"""Figures from Python equal the CLI's on every real fixture family: `inspect` against
`trajkit inspect --json`, `read` against `trajkit convert` record by record, and
`convert` byte for byte."""

import json
import subprocess

import pytest

import trajkit
from conftest import FAMILIES, FIXTURES, rust_binary


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([rust_binary(), *args], capture_output=True, check=False)


@pytest.mark.parametrize("family", FAMILIES)
def test_inspect_equals_cli(family: str) -> None:
    path = str(FIXTURES / family)
    got = cli("inspect", "--json", path)
    if got.returncode == 2 and not got.stdout:
        # No trajectory file at all (the sqlite family holds state databases): the CLI
        # fails with exit 2, Python with InputError.
        with pytest.raises(trajkit.InputError):
            trajkit.inspect(path)
        return
    expected = [json.loads(line) for line in got.stdout.splitlines()]
    assert trajkit.inspect(path) == expected
    assert len(expected) >= 1


@pytest.mark.parametrize("family", FAMILIES)
def test_read_equals_convert(family: str) -> None:
    path = str(FIXTURES / family)
    got = cli("convert", path, "-o", "-")
    if got.returncode == 2:
        with pytest.raises(trajkit.InputError):
            list(trajkit.read(path))
        return
    expected = [json.loads(line) for line in got.stdout.splitlines()]
    reader = trajkit.read(path)
    records = list(reader)
    assert records == expected
    assert reader.exit_code == got.returncode
    # Rejections reach Python with the same count the reports give.
    assert len(reader.rejections) == sum(r["rejected"] for r in reader.reports)


@pytest.mark.parametrize("family", FAMILIES)
def test_convert_is_byte_identical(family: str, tmp_path) -> None:
    path = str(FIXTURES / family)
    got = cli("convert", path, "-o", str(tmp_path / "cli.jsonl"))
    if got.returncode == 2:
        with pytest.raises(trajkit.InputError):
            trajkit.convert(path, tmp_path / "py.jsonl")
        assert not (tmp_path / "py.jsonl").exists()
        return
    summary = trajkit.convert(path, tmp_path / "py.jsonl")
    assert (tmp_path / "py.jsonl").read_bytes() == (tmp_path / "cli.jsonl").read_bytes()
    assert summary["exit_code"] == got.returncode
    assert summary["written"] == len((tmp_path / "cli.jsonl").read_bytes().splitlines())


def test_gym_figures() -> None:
    """Exact figures of the Gym fixtures (README's inspect table): 29 trajectories, 347 steps, 177 tool calls."""
    reports = trajkit.inspect(str(FIXTURES.parent.parent.parent / "examples" / "corpus" / "gym"))
    assert len(reports) == 6
    assert sum(r["trajectories"] for r in reports) == 29
    assert sum(r["steps"] for r in reports) == 347
    assert sum(r["tool_calls"] for r in reports) == 177
    assert sum(r["duplicate_records"] for r in reports) == 1


def test_validate_names_file_line_field() -> None:
    bbq = str(FIXTURES / "gym" / "bbq__example_rollouts.jsonl")
    v = trajkit.validate(bbq)
    assert v.exit_code == 1
    assert len(v.rejections) == 5
    first = v.rejections[0]
    assert (first["path"], first["line"], first["reason"]) == (bbq, 1, "not_a_rollout")
    assert first["problems"][0]["json_path"] == "$"


def test_strict_raises_with_location() -> None:
    bbq = str(FIXTURES / "gym" / "bbq__example_rollouts.jsonl")
    with pytest.raises(trajkit.RejectedRecordError) as info:
        list(trajkit.read(bbq, strict=True))
    err = info.value
    assert isinstance(err, trajkit.TrajkitError)
    assert (err.path, err.line, err.field, err.reason) == (bbq, 1, "$", "not_a_rollout")


def test_unknown_format_is_usage_error() -> None:
    with pytest.raises(trajkit.UsageError):
        trajkit.inspect(str(FIXTURES / "gym"), format="no-such-format")


def test_missing_path_is_input_error(tmp_path) -> None:
    with pytest.raises(trajkit.InputError):
        list(trajkit.read(str(tmp_path / "absent.jsonl")))
