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


def _with_large_line(tmp_path, mib: int) -> str:
    """The real tau2 Gym rollouts (5 lines) with a line of `mib` MiB inserted as line 2.

    Synthetic in one respect: no real fixture has a record over the smallest limit (1 MiB),
    so the oversize line is made here, around real records, as limits_cli.rs does.
    """
    lines = (FIXTURES / "gym" / "tau2__example_rollouts.jsonl").read_text(encoding="utf-8").splitlines()
    path = tmp_path / "large.jsonl"
    big = '{"response":"' + "a" * (mib << 20) + '"}'
    path.write_text("\n".join([lines[0], big, *lines[1:]]) + "\n", encoding="utf-8")
    return str(path)


def test_max_record_mib_rejects_with_file_and_line_and_reads_the_rest(tmp_path) -> None:
    path = _with_large_line(tmp_path, 2)
    r = trajkit.read(path, max_record_mib=1)
    assert len(list(r)) == 5
    assert [(x["path"], x["line"], x["reason"]) for x in r.rejections] == [(path, 2, "record_too_large")]
    assert r.rejections[0]["problems"][0]["json_path"] == "$"
    assert r.exit_code == 1
    [report] = trajkit.inspect(path, max_record_mib=1)
    assert (report["records"], report["trajectories"], report["steps"], report["rejected"]) == (6, 5, 65, 1)
    assert report["reasons"] == {"record_too_large": 1}
    assert trajkit.read_arrow(path, max_record_mib=1).read_all().num_rows == 5
    v = trajkit.validate(path, max_record_mib=1)
    assert [(x["line"], x["reason"]) for x in v.rejections] == [(2, "record_too_large")]
    summary = trajkit.convert(path, tmp_path / "out.jsonl", max_record_mib=1)
    assert (summary["written"], summary["rejected"]) == (5, 1)
    # The same line under the default limit (128 MiB) is read, and rejected for its content.
    [report] = trajkit.inspect(path)
    assert report["reasons"] != {"record_too_large": 1}
    assert report["trajectories"] == 5
    # The CLI agrees on the same flag.
    got = subprocess.run(
        [rust_binary(), "inspect", "--json", "--max-record-mib", "1", path], capture_output=True, text=True
    )
    assert [json.loads(got.stdout)] == trajkit.inspect(path, max_record_mib=1)


def test_build_max_record_mib(tmp_path) -> None:
    path = _with_large_line(tmp_path, 2)
    summary = trajkit.build(path, tmp_path / "lib", max_record_mib=1)
    assert (summary["records"], summary["trajectories"], summary["rejected"]) == (6, 5, 1)
    coverage = json.loads((tmp_path / "lib" / "coverage.json").read_text(encoding="utf-8"))
    assert "record_too_large" in json.dumps(coverage)
