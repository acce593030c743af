"""trajkit on a real local Ray (``ray.init(num_cpus=2)``): the Ray build equals
``trajkit build`` on the example corpus and on a corpus of every real fixture family,
a worker killed mid-build changes nothing, and ``read_trajectories`` yields what
``read_arrow`` yields. One Ray instance for the module (starting Ray costs seconds)."""

import json
import os
import signal
import subprocess
import sys

import pytest

os.environ.setdefault("RAY_AUTH_MODE", "disabled")
import ray  # noqa: E402  (scripts/test.sh installs ray[data]; missing, the tests fail)

import trajkit  # noqa: E402
import trajkit.ray as tray  # noqa: E402
from conftest import FIXTURES, REPO, rust_binary  # noqa: E402
from library_compare import assert_same_library  # noqa: E402

REGISTRY = REPO / "examples" / "sources.toml"


@pytest.fixture(scope="module", autouse=True)
def local_ray():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    yield
    ray.shutdown()


#: Finalize's stages in order, as the Ray build's summary times them.
FINALIZE_STAGES = [
    "loading partials", "merging", "task clusters", "indexing", "near duplicates", "contamination", "evaluation rows",
    "coverage",
    "statistics", "gallery", "manifest", "done",
]


def cli_build(out, *args):
    got = subprocess.run([rust_binary(), "build", "--quiet", "-o", str(out), *args], capture_output=True, text=True)
    assert got.returncode in (0, 1), got.stderr
    return out


def test_importing_trajkit_does_not_import_ray() -> None:
    code = "import sys, trajkit; assert 'ray' not in sys.modules, 'ray imported'"
    assert subprocess.run([sys.executable, "-c", code]).returncode == 0


def test_ray_build_of_the_examples_equals_trajkit_build(tmp_path) -> None:
    cli = cli_build(tmp_path / "cli", "--registry", str(REGISTRY))
    # One task per file group (17 groups for 22 files: ATIF subagent files stay together).
    many = tray.build(out=tmp_path / "many", registry=REGISTRY, group_bytes=1)
    assert len(many["tasks"]) == 17
    assert (many["files"], many["trajectories"], many["rejected"]) == (22, 38, 21)
    assert_same_library(cli, tmp_path / "many", same_shards=False)
    # What each task read adds up to the plan; where the time went, phase by phase.
    assert sum(t["bytes"] for t in many["tasks"]) == tray.plan(registry=REGISTRY)["bytes"]
    assert sum(t["trajectories"] for t in many["tasks"]) == 38
    assert list(many["phases"]) == ["plan", "partials", "finalize"]
    assert [name for name, _ in many["finalize_stages"]] == FINALIZE_STAGES
    assert all(s >= 0 for s in many["phases"].values())
    # One group: the shards too are byte-identical.
    one = tray.build(out=tmp_path / "one", registry=REGISTRY, group_bytes=1 << 40)
    assert len(one["tasks"]) == 1
    assert_same_library(cli, tmp_path / "one", same_shards=True)


def test_ray_build_of_every_fixture_family_equals_trajkit_build(tmp_path) -> None:
    cli = cli_build(tmp_path / "cli", str(FIXTURES))
    got = tray.build(FIXTURES, tmp_path / "ray", group_bytes=256 << 10)
    assert len(got["tasks"]) > 4
    assert_same_library(cli, tmp_path / "ray", same_shards=False)


def test_cluster_options_reach_the_engine_alike_from_the_cli_python_and_ray(tmp_path) -> None:
    # The boilerplate rule off: the real fixtures fall into 371 task clusters instead of 388
    # (crates/trajkit-library/tests/clusters.rs pins both).
    off = {"boilerplate_fraction": 1.0, "boilerplate_min_instructions": 10000}
    cli = cli_build(tmp_path / "cli", str(FIXTURES), "--boilerplate-fraction", "1", "--boilerplate-min-instructions", "10000")
    tray.build(FIXTURES, tmp_path / "ray", group_bytes=256 << 10, clusters=off)
    assert_same_library(cli, tmp_path / "ray", same_shards=False)
    trajkit.build(FIXTURES, tmp_path / "py", **off)
    assert_same_library(cli, tmp_path / "py", same_shards=True)
    clusters = trajkit.Library(tmp_path / "py").query("SELECT count(*) AS n FROM task_clusters").to_pylist()
    assert clusters == [{"n": 371}]


def _tau2_protected_registry(tmp_path):
    """tau2 as the evaluation_only source, every other fixture family as training."""
    train = sorted(str(p) for p in FIXTURES.iterdir() if p.is_dir() and p.name != "tau2")
    registry = tmp_path / "sources.toml"
    registry.write_text(
        f'[[source]]\nname = "bench"\npaths = ["{FIXTURES / "tau2"}"]\nrole = "evaluation_only"\n\n'
        f'[[source]]\nname = "rest"\npaths = {json.dumps(train)}\nrole = "training"\n'
    )
    return registry


def test_fail_on_contamination_fails_alike_from_the_cli_python_and_ray(tmp_path) -> None:
    # The real fixtures with tau2 protected: 18 Gym telecom runs share 13-grams with six
    # protected tasks (crates/trajkit-library/tests/contamination.rs pins the report).
    registry = _tau2_protected_registry(tmp_path)
    got = subprocess.run(
        [rust_binary(), "build", "--quiet", "--registry", str(registry), "--fail-on-contamination", "-o", str(tmp_path / "cli")],
        capture_output=True,
        text=True,
    )
    assert got.returncode == 1, got.stderr
    assert "18 training-eligible trajectories overlap a protected task by content" in got.stderr
    with pytest.raises(trajkit.BuildError, match="18 training-eligible trajectories"):
        trajkit.build(out=tmp_path / "py", registry=registry, fail_on_contamination=True)
    with pytest.raises(trajkit.BuildError, match="18 training-eligible trajectories"):
        tray.build(out=tmp_path / "ray", registry=registry, group_bytes=256 << 10, contamination={"fail": True})
    assert not any((tmp_path / n).exists() for n in ("cli", "py", "ray"))
    # Without the option the three build the same library, report included.
    cli = cli_build(tmp_path / "cli", "--registry", str(registry))
    tray.build(out=tmp_path / "ray", registry=registry, group_bytes=256 << 10)
    assert_same_library(cli, tmp_path / "ray", same_shards=False)
    report = json.loads((cli / "evaluation" / "contamination.json").read_text())
    assert report["totals"] == {"tasks_with_overlaps": 6, "instruction_overlaps": 0, "content_overlaps": 18}


def _die_once(marker_dir):
    """A task hook: the task of group 1 kills its own worker process on its first attempt."""

    def hook(group):
        if group["index"] != 1:
            return
        marker = os.path.join(marker_dir, "killed-once")
        if not os.path.exists(marker):
            with open(marker, "w") as f:
                f.write(str(os.getpid()))
            os.kill(os.getpid(), signal.SIGKILL)

    return hook


def test_a_worker_killed_mid_build_gives_the_identical_library(tmp_path) -> None:
    cli = cli_build(tmp_path / "cli", "--registry", str(REGISTRY))
    got = tray.build(out=tmp_path / "ray", registry=REGISTRY, group_bytes=1, task_hook=_die_once(str(tmp_path)))
    killed = int((tmp_path / "killed-once").read_text())
    retried = [t for t in got["tasks"] if t["group"] == 1]
    assert len(retried) == 1 and retried[0]["pid"] != killed
    assert got["trajectories"] == 38
    assert_same_library(cli, tmp_path / "ray", same_shards=False)


def test_read_trajectories_yields_read_arrow_rows_and_rejections(tmp_path) -> None:
    path = FIXTURES / "bfcl"
    ds = tray.read_trajectories(str(FIXTURES / "gym"), group_bytes=1)
    rows = ds.take_all()
    expected = trajkit.read_arrow(str(FIXTURES / "gym")).read_all().to_pylist()
    key = lambda r: (r["source_path"].rsplit("/", 1)[-1], r["source_line"] or 0)  # noqa: E731
    assert len(rows) == len(expected) > 0
    assert [r["id"] for r in sorted(rows, key=key)] == [r["id"] for r in sorted(expected, key=key)]
    rejected = tray.read_rejections(str(path)).take_all()
    validation = trajkit.validate(str(path))
    assert len(rejected) == len(validation.rejections) > 0
    assert sorted(r["reason"] for r in rejected) == sorted(r["reason"] for r in validation.rejections)
