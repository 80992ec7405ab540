"""Workers of a rayaccel AMD node exit as cleanly as a plain Ray node's (issue 38).

Ray gives every ``num_gpus`` task ``max_calls=1`` (``ray/remote_function.py``): its worker exits after the
task. Ray 2.60's core-worker shutdown then sometimes aborts (SIGABRT, "Mutex corrupt" in
``core_worker_shutdown_executor``) on any node when the machine is loaded, a plain node included; Ray counts
the worker as died and reruns its task. One ``Cluster`` holds a plain Ray node (8 GPUs, nothing of rayaccel)
and a rayaccel ``amd/mi300x-8`` node (Ray's AMD manager owns ``GPU``: ``RAYACCEL_RAY_GPU_MANAGER``); the same
short tasks go to both, interleaved, so both see the same load, and Ray's worker table (the GCS's record of
each worker's exit) counts each node's deaths.
"""

from __future__ import annotations

import importlib
import math
import os
from typing import Any

import pytest
import ray
from ray.cluster_utils import Cluster
from summary import SUMMARY_PROPERTY

import rayaccel.ray
from rayaccel.ray.registry import uninstall
from rayaccel.support.polling import wait_for

pytestmark = pytest.mark.ray

TASKS_PER_NODE = 30


@pytest.fixture(scope="module")
def cluster():
    cluster = Cluster(initialize_head=False)
    try:
        # No log monitor: it tails every worker's log (two per task here) for drivers that take their output, and
        # this one does not.
        plain = cluster.add_node(num_cpus=1, num_gpus=8, include_dashboard=False, include_log_monitor=False)
        amd = rayaccel.ray.add_node(cluster, simulate="amd/mi300x-8", plugins=["amd"], num_cpus=1)
        rayaccel.ray.connect(cluster.address, log_to_driver=False)
        wait_for(ray.cluster_resources, lambda r: r.get("GPU") == 16, timeout=120, what="16 GPUs in the cluster")
        yield {"plain": plain.node_id, "amd": amd.node_id}
    finally:
        rayaccel.ray.shutdown()
        cluster.shutdown()
        uninstall()


def worker_exits(node_id: str) -> dict[str, int]:
    """Exit types of the node's finished task workers, from the GCS's worker table."""
    import ray._private.state

    gcs: Any = importlib.import_module("ray.core.generated.gcs_pb2")
    common: Any = importlib.import_module("ray.core.generated.common_pb2")
    exits: dict[str, int] = {}
    for raw in ray._private.state.state._connect_and_get_accessor().get_worker_table():
        worker = gcs.WorkerTableData.FromString(raw)
        if (worker.worker_type == common.WORKER and not worker.is_alive and worker.HasField("exit_type")
                and worker.worker_address.node_id.hex() == node_id):
            name = common.WorkerExitType.Name(worker.exit_type)
            exits[name] = exits.get(name, 0) + 1
    return exits


@ray.remote(num_gpus=1, num_cpus=0)
def short(_: int) -> str:
    return os.environ.get("HIP_VISIBLE_DEVICES") or os.environ.get("CUDA_VISIBLE_DEVICES") or ""


def test_gpu_task_workers_of_an_amd_node_die_no_more_often_than_a_plain_nodes(cluster, record_property):
    refs = {name: [] for name in cluster}
    for n in range(TASKS_PER_NODE):
        for name, node_id in cluster.items():
            refs[name].append(short.options(label_selector={"ray.io/node-id": node_id}).remote(n))
    amd_visible = ray.get(refs["amd"], timeout=900)
    assert ray.get(refs["plain"], timeout=900) and all(v.isdigit() for v in amd_visible)  # HIP ids on AMD
    # Each task's worker exits after it (max_calls=1): wait until the GCS has every exit of both nodes.
    exits = wait_for(lambda: {name: worker_exits(node_id) for name, node_id in cluster.items()},
                     lambda e: all(sum(x.values()) >= TASKS_PER_NODE for x in e.values()), timeout=300,
                     what=f"{TASKS_PER_NODE} worker exits on each node")
    died = {name: exits[name].get("SYSTEM_ERROR", 0) for name in cluster}
    record_property(SUMMARY_PROPERTY, f"worker deaths after {TASKS_PER_NODE} num_gpus=1 tasks per node: "
                                      f"amd/mi300x-8 {died['amd']}, plain Ray node {died['plain']} ({exits})")
    # Ray's own exit abort is random: compare the two counts as samples of one rate (pooled), and fail when the
    # AMD node's excess is beyond 3.5 standard deviations of their difference (an abort at most exits, a rate
    # 30 points above the plain node's), not on the noise of one run.
    pooled = (died["amd"] + died["plain"] + 1) / (2 * TASKS_PER_NODE + 2)
    spread = math.sqrt(2 * TASKS_PER_NODE * pooled * (1 - pooled))
    assert died["amd"] - died["plain"] <= max(3.5 * spread, 2), exits
