"""Ctrl-C (SIGINT) stops a long call within about a second with KeyboardInterrupt and
leaves no output behind. The input is generated (bench/make_corpus.py, Gym rollouts):
no real fixture is long enough to interrupt."""

import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from conftest import REPO

SCRIPT = textwrap.dedent(
    """
    import sys, time, trajkit
    kind, src, out = sys.argv[1:4]
    print("started", flush=True)
    t0 = time.monotonic()
    try:
        if kind == "convert":
            trajkit.convert(src, out)
        elif kind == "build":
            trajkit.build(src, out)
        elif kind == "export":
            trajkit.Library(src).export(view="assistant-turn", split="train", out=out)
        else:
            for _ in trajkit.read(src):
                pass
    except KeyboardInterrupt:
        print("interrupted", flush=True)
        sys.exit(130)
    print("finished", flush=True)
    """
)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    d = tmp_path_factory.mktemp("corpus")
    out = d / "corpus"
    got = subprocess.run(
        [sys.executable, str(REPO / "bench" / "make_corpus.py"), str(out), "--gym-mb", "200", "--atif-mb", "0"],
        capture_output=True, text=True, check=False,
    )
    assert got.returncode == 0, got.stderr
    return out


@pytest.fixture(scope="module")
def library(corpus, tmp_path_factory):
    """A library of the generated corpus: the input of the interrupted export."""
    import trajkit

    out = tmp_path_factory.mktemp("library") / "library"
    trajkit.build(corpus, out)
    return out


@pytest.mark.parametrize("kind", ["convert", "build", "read", "export"])
def test_sigint_stops_within_a_second_without_output(kind, request, tmp_path) -> None:
    src = request.getfixturevalue("library" if kind == "export" else "corpus")
    out = tmp_path / ("library" if kind == "build" else "out.jsonl")
    proc = subprocess.Popen(
        [sys.executable, "-c", SCRIPT, kind, str(src), str(out)],
        stdout=subprocess.PIPE, text=True,
    )
    assert proc.stdout.readline().strip() == "started"
    # Half a second into the call: `convert` and `read` of the 200 MB take about 1.5 s on
    # an idle 2-core machine, so a longer wait could see them finish first.
    time.sleep(0.5)
    assert proc.poll() is None, "the call ended before it could be interrupted"
    sent = time.monotonic()
    proc.send_signal(signal.SIGINT)
    rest, _ = proc.communicate(timeout=30)
    elapsed = time.monotonic() - sent
    assert "interrupted" in rest
    assert proc.returncode == 130
    # read, convert and export stop at the next batch; build also joins its shard and
    # index writer threads and removes its staging directory.
    limit = 3.0 if kind == "build" else 1.5
    assert elapsed < limit, f"took {elapsed:.2f}s to stop"
    # Nothing is left: no output, no dataset card, no temporary file (a build's lock file,
    # `.NAME.trajkit.lock`, stays by design: it is how the next build takes the lock).
    assert [p for p in os.listdir(tmp_path) if not p.endswith(".trajkit.lock")] == []
