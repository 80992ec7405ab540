"""Ray's own TPU library on a simulated two-host TPU slice (issue 27).

``ray.util.tpu.slice_placement_group`` reserves the slice head (``TPU-v5p-16-head``, labels
``ray.io/tpu-worker-id=0`` and ``ray.io/tpu-pod-type``), then runs a task on worker 0 that asks
``TPUAcceleratorManager.get_current_node_tpu_name()`` for the slice name, which Ray reads from ``TPU_NAME``
(GKE) or the GCE metadata server. A GKE TPU node has the TPU_* variables in the environment of every
process; a simulated node's processes get them from the fixture's ``host.process_env`` (the SDK starts the
node with them), so Ray's code runs unchanged and finds what it finds on the real node. Before the fix the
task saw neither and Ray raised ``RuntimeError: Failed to retrieve TPU slice name after reserving head
placement group``.

One cluster for the module (two simulated nodes: the two workers of ``tpu/v5p-16``).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import ray
import ray.util.tpu
from ray.cluster_utils import Cluster
from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy

import rayaccel.ray
from rayaccel.ray.registry import uninstall
from rayaccel.support.polling import wait_for

pytestmark = pytest.mark.ray

SLICE = "tpu-v5p-16-slice-a"
#: What the GKE TPU webhook puts in each worker pod's environment, and Ray's TPU code reads there.
GKE_TPU_ENV = ("TPU_NAME", "TPU_WORKER_ID", "TPU_ACCELERATOR_TYPE", "TPU_TOPOLOGY", "TPU_WORKER_HOSTNAMES")


@pytest.fixture(scope="module")
def cluster() -> Iterator[dict[str, str]]:
    # The nodes get the slice facts from their fixtures alone, and offer all their chips, one unit each.
    leaked = [key for key in (*GKE_TPU_ENV, "TPU_VISIBLE_CHIPS", "RAY_TPU_RESOURCE_PER_CHIP") if key in os.environ]
    assert not leaked, f"this process has {leaked} set, which the simulated nodes would inherit"
    cluster = Cluster(initialize_head=False)
    nodes: Callable[[], list[dict[str, Any]]] = ray.nodes
    stop_cluster: Callable[[], None] = cluster.shutdown
    try:
        head = rayaccel.ray.add_node(cluster, head=True, simulate="tpu/v5p-16-worker0", num_cpus=1,
                                     include_dashboard=False)
        worker = rayaccel.ray.add_node(cluster, simulate="tpu/v5p-16-worker1", num_cpus=1)
        cluster.wait_for_nodes()
        rayaccel.ray.connect(cluster.address, log_to_driver=False)
        ids = {"worker0": str(head.node_id), "worker1": str(worker.node_id)}
        wait_for(lambda: {n["NodeID"]: n["Resources"] for n in nodes() if n["Alive"]},
                 lambda alive: all(alive.get(i, {}).get("TPU") == 4 for i in ids.values()),
                 timeout=120, what="both slice hosts alive with 4 TPU each")
        wait_for(ray.cluster_resources, lambda r: r.get("TPU") == 8 and r.get(SLICE) == 2,
                 timeout=60, what="the cluster's resources to show the whole slice")
        yield ids
    finally:
        rayaccel.ray.shutdown()
        stop_cluster()
        uninstall()


def test_a_simulated_node_s_workers_see_the_gke_tpu_env_ray_reads(cluster: dict[str, str]) -> None:
    @ray.remote(num_cpus=0)
    def seen() -> tuple[str | None, int | None, str | None]:
        from ray._private.accelerators.tpu import TPUAcceleratorManager as Tpu

        return (Tpu.get_current_node_tpu_name(), Tpu.get_current_node_tpu_worker_id(),
                Tpu.get_current_node_tpu_pod_type())

    for worker_id, name in enumerate(("worker0", "worker1")):
        on_node = seen.options(label_selector={"ray.io/node-id": cluster[name]})
        assert ray.get(on_node.remote(), timeout=60) == (SLICE, worker_id, "v5p-16")


def test_ray_s_slice_placement_group_reserves_both_hosts_of_the_simulated_slice(cluster: dict[str, str]) -> None:
    slice_pg = ray.util.tpu.slice_placement_group(topology="2x2x2", accelerator_version="v5p")
    try:
        pg = slice_pg.placement_group
        assert pg is not None and slice_pg.num_hosts == 2
        assert ray.get(pg.ready(), timeout=60)
        table = ray.util.placement_group_table(pg)
        assert sorted(table["bundles_to_node_id"].values()) == sorted(cluster.values())
        assert all(bundle["TPU"] == 4 for bundle in table["bundles"].values())

        @ray.remote(num_cpus=0, resources={"TPU": 4})
        def where() -> tuple[str, str]:
            labels: dict[str, Any] = ray.get_runtime_context().get_node_labels()  # (values are str)
            return str(labels["ray.io/tpu-slice-name"]), str(labels["ray.io/tpu-worker-id"])

        placed = [ray.get(where.options(scheduling_strategy=PlacementGroupSchedulingStrategy(
            pg, placement_group_bundle_index=i)).remote(), timeout=60) for i in range(2)]
        assert sorted(placed) == [(SLICE, "0"), (SLICE, "1")]
    finally:
        slice_pg.shutdown()
