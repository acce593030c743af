"""Two Ray worker nodes on one machine (``ray.cluster_utils.Cluster``, one CPU each): the
partial builds of the example corpus run on both nodes and the library equals
``trajkit build``'s."""

import os
import subprocess
import time

import pytest

os.environ.setdefault("RAY_AUTH_MODE", "disabled")
import ray  # noqa: E402  (scripts/test.sh installs ray[data]; missing, the tests fail)

import trajkit.ray as tray  # noqa: E402
from conftest import REPO, rust_binary  # noqa: E402
from library_compare import assert_same_library  # noqa: E402

REGISTRY = REPO / "examples" / "sources.toml"


@pytest.fixture(scope="module")
def two_nodes():
    from ray.cluster_utils import Cluster

    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "include_dashboard": False})
    cluster.add_node(num_cpus=1)
    ray.init(address=cluster.address, log_to_driver=False, configure_logging=False)
    cluster.wait_for_nodes()
    yield cluster
    ray.shutdown()
    cluster.shutdown()


# Keeps each task busy long enough that one node cannot take them all in turn. A lambda,
# so that Ray ships it by value: the second node's workers cannot import this test module.
_slow = lambda group: time.sleep(0.2)  # noqa: E731


def test_partials_run_on_both_nodes_and_give_the_same_library(two_nodes, tmp_path) -> None:
    cli = tmp_path / "cli"
    got = subprocess.run([rust_binary(), "build", "-q", "--registry", str(REGISTRY), "-o", str(cli)], capture_output=True)
    assert got.returncode == 0, got.stderr
    summary = tray.build(out=tmp_path / "ray", registry=REGISTRY, group_bytes=1, task_hook=_slow)
    nodes = {t["node"] for t in summary["tasks"]}
    assert len(summary["tasks"]) == 17
    assert len(nodes) == 2, nodes
    assert nodes == {n["NodeID"] for n in ray.nodes() if n["Alive"]}
    assert_same_library(cli, tmp_path / "ray", same_shards=False)
