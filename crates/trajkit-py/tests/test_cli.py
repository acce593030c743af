"""The wheel's `trajkit` command is the CLI: same output and exit codes as the binary."""

import subprocess

from conftest import FIXTURES, REPO, rust_binary, wheel_command


def run(cmd, *args, cwd=None):
    return subprocess.run([cmd, *args], capture_output=True, text=True, cwd=cwd, check=False)


def test_build_of_the_example_corpus(tmp_path) -> None:
    out = tmp_path / "library"
    got = run(wheel_command(), "build", "--registry", str(REPO / "examples" / "sources.toml"), "-o", str(out), cwd=REPO)
    # The library is built: 0, with the 21 deliberately rejected records counted (README).
    assert got.returncode == 0
    assert "22 files (0 unreadable), 60 records, 38 trajectories, 21 rejected, 1 shard(s)" in got.stderr
    assert (out / "index.sqlite").is_file() and (out / "examples.html").is_file()


def test_exit_codes_and_output_match_the_binary(tmp_path) -> None:
    cases = [
        ["inspect", str(FIXTURES / "gym")],
        ["validate", str(FIXTURES / "gym" / "bbq__example_rollouts.jsonl")],
        ["validate", str(tmp_path / "absent.jsonl")],
        ["inspect", "--no-such-flag"],
        ["--version"],
    ]
    for args in cases:
        ours = run(wheel_command(), *args)
        theirs = run(rust_binary(), *args)
        assert (ours.returncode, ours.stdout, ours.stderr) == (theirs.returncode, theirs.stdout, theirs.stderr), args
    assert run(wheel_command(), "validate", str(tmp_path / "absent.jsonl")).returncode == 2
    assert run(wheel_command(), "inspect", "--no-such-flag").returncode == 2
