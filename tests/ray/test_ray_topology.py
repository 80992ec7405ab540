"""Ray's own topology-aware placement (``topology_strategy``, Ray 2.60) on rayaccel nodes (issue 38).

Nodes of one ``ray.cluster_utils.Cluster``: the two GB200 NVL72 trays of one NVLink clique (``gb200-tray-07``
is the head) and two DGX H100 nodes simulated from the one ``nvidia/dgx-h100`` fixture (the second gets a host
name of its own, so each is its own NVSwitch domain). Every node publishes ``ray.io/gpu-domain``.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
import ray
from ray.cluster_utils import Cluster
from ray.util import placement_group, placement_group_table, remove_placement_group
from ray.util.placement_group import PlacementGroup

import rayaccel.ray
from rayaccel.ray import placement
from rayaccel.ray.group_topology import group_table
from rayaccel.ray.node_view import alive_nodes
from rayaccel.ray.registry import uninstall
from rayaccel.support.polling import wait_for

pytestmark = pytest.mark.ray

CLIQUE = "5f2c1a9e-7d3b-4e8a-9c61-0b7d2e4f8a13.32766"
GPU_DOMAIN = {"ray.io/gpu-domain": "STRICT_PACK"}
GB200 = {"ray.io/accelerator-type": "GB200"}  # Ray's rule: a GB200 domain group names the type in every bundle


@pytest.fixture(scope="module")
def cluster():
    cluster = Cluster(initialize_head=False)
    nodes = {}
    try:
        # No log monitor: it tails every worker's log for drivers that take their output, and this one does not.
        nodes["tray07"] = rayaccel.ray.add_node(cluster, head=True, simulate="nvidia/gb200-nvl72-tray", num_cpus=1,
                                                include_dashboard=False, include_log_monitor=False)
        for name, fixture in [("tray08", "nvidia/gb200-nvl72-tray-08"), ("dgx_a", "nvidia/dgx-h100"),
                              ("dgx_b", "nvidia/dgx-h100")]:
            nodes[name] = rayaccel.ray.add_node(cluster, simulate=fixture, num_cpus=1, wait=False)
        cluster.wait_for_nodes()
        rayaccel.ray.connect(cluster.address, log_to_driver=False)
        wait_for(ray.cluster_resources, lambda r: r.get("GPU") == 24, timeout=120, what="24 GPUs in the cluster")
        yield cluster, {name: node.node_id for name, node in nodes.items()}, nodes
    finally:
        rayaccel.ray.shutdown()
        cluster.shutdown()
        uninstall()


def labels(node_id: str) -> dict[str, str]:
    return next(n["Labels"] for n in ray.nodes() if n["NodeID"] == node_id)


def state(group: PlacementGroup) -> str:
    return str(placement_group_table(group)["state"])


def test_every_node_publishes_a_gpu_domain_unique_to_its_physical_domain(cluster):
    _, ids, _ = cluster
    domain = {name: labels(node_id)["ray.io/gpu-domain"] for name, node_id in ids.items()}
    # The two trays are one NVL72 NVLink domain (the fabric's clique id); the two DGX nodes, simulated from one
    # fixture, are two machines with a baseboard each.
    assert domain == {"tray07": CLIQUE, "tray08": CLIQUE, "dgx_a": "dgx-h100-01-nvswitch",
                      "dgx_b": "dgx-h100-01-2-nvswitch"}
    assert all(labels(node_id)["rayaccel.io/scale-up-domain"] == domain[name] for name, node_id in ids.items())
    found = rayaccel.ray.scale_up_domains()
    assert sorted(found) == sorted({CLIQUE, "dgx-h100-01-nvswitch", "dgx-h100-01-2-nvswitch"})
    assert found[CLIQUE].size == 8 and sorted(found[CLIQUE].nodes) == sorted([ids["tray07"], ids["tray08"]])


def test_rays_documented_call_packs_a_group_into_the_nvl72_trays(cluster):
    _, ids, _ = cluster
    group = placement_group([{"GPU": 4}] * 2, bundle_label_selector=[GB200] * 2, topology_strategy=GPU_DOMAIN)
    try:
        assert group.wait(60)
        assert set(placement_group_table(group)["bundles_to_node_id"].values()) <= {ids["tray07"], ids["tray08"]}
        assert group_table(group).assignments == {"ray.io/gpu-domain": CLIQUE}
    finally:
        remove_placement_group(group)
    # Spread over nodes and packed into one domain: only the clique has two nodes.
    spread = placement_group([{"GPU": 4}] * 2, topology_strategy={**GPU_DOMAIN, "ray.io/node-id": "STRICT_SPREAD"})
    try:
        assert spread.wait(60)
        assert sorted(placement_group_table(spread)["bundles_to_node_id"].values()) == sorted(
            [ids["tray07"], ids["tray08"]])
    finally:
        remove_placement_group(spread)


def test_a_group_no_domain_holds_stays_pending_and_says_why(cluster):
    # 12 GPUs: the clique has 8, each DGX 8; plain PACK would take them from two machines.
    for bundles in ([{"GPU": 4}] * 3, [{"GPU": 8}] * 2):
        group = placement_group(bundles, topology_strategy=GPU_DOMAIN)
        try:
            table = wait_for(lambda g=group: placement_group_table(g),
                             lambda t: t["stats"]["scheduling_state"] == "INFEASIBLE", timeout=60,
                             what="the GCS to find the group infeasible")
            assert table["state"] == "PENDING" and not any(table["bundles_to_node_id"].values())
            reason = rayaccel.ray.pending_reason(group)
            assert reason is not None and "no scale-up domain holds that many" in reason, reason
            assert f"{CLIQUE} has 8 GPU" in reason and "dgx-h100-01-2-nvswitch has 8 GPU" in reason
        finally:
            remove_placement_group(group)


def test_scale_up_domain_placement_group_lets_rays_gcs_choose_the_domain(cluster):
    _, ids, _ = cluster
    # The kind alone picks the clique: ray.io/gpu-domain names the DGX boxes' NVSwitch domains too, each of
    # which holds 8 GPUs, so every bundle carries the kind for the GCS.
    group = rayaccel.ray.scale_up_domain_placement_group([{"GPU": 4}] * 2, kind="nvlink-clique")
    try:
        table = group_table(group)
        assert table.strategy == {"ray.io/gpu-domain": "STRICT_PACK"}
        assert all(("rayaccel.io/scale-up-domain-kind", "in", ("nvlink-clique",)) in s for s in table.selectors)
        assert group.wait(60)
        assert group_table(group).assignments == {"ray.io/gpu-domain": CLIQUE}
        # A task in the group gets GPUs of the tray its bundle is on.
        node, visible = ray.get(ray.remote(num_gpus=4, num_cpus=0)(
            lambda: (ray.get_runtime_context().get_node_id(), os.environ["CUDA_VISIBLE_DEVICES"])).options(
            scheduling_strategy=ray.util.scheduling_strategies.PlacementGroupSchedulingStrategy(
                group, placement_group_bundle_index=0)).remote(), timeout=120)
        assert node in (ids["tray07"], ids["tray08"]) and sorted(visible.split(",")) == ["0", "1", "2", "3"]
    finally:
        remove_placement_group(group)
    options = rayaccel.ray.best_connected_bundles(4, family="nvidia", n_bundles=2)
    assert options == {"bundles": [{"GPU": 4.0}] * 2, "topology_strategy": GPU_DOMAIN}
    for _ in range(3):  # the clique could hold it too: the GCS must choose a DGX box each time
        box = rayaccel.ray.scale_up_domain_placement_group([{"GPU": 4}] * 2, kind="nvswitch")
        try:
            assert box.wait(60)
            assert group_table(box).assignments["ray.io/gpu-domain"] in ("dgx-h100-01-nvswitch",
                                                                          "dgx-h100-01-2-nvswitch")
        finally:
            remove_placement_group(box)


DRIVER = """
import sys
import rayaccel.ray
rayaccel.ray.connect(sys.argv[1], log_to_driver=False, namespace="topology-test")
group = rayaccel.ray.scale_up_domain_placement_group([{"GPU": 4}] * 2, kind="nvlink-clique", name=sys.argv[2],
                                                     bundle_label_selector=[{"ray.io/accelerator-type": "GB200"}] * 2)
print(group.id.hex(), flush=True)
sys.stdin.read()  # holds the group (it lives as long as its driver) until the test closes stdin
"""


def test_two_drivers_at_once_never_overfill_one_domain(cluster):
    cluster_obj, ids, _ = cluster
    drivers = [subprocess.Popen([sys.executable, "-c", DRIVER, cluster_obj.address, f"group-{n}"], text=True,
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE) for n in range(2)]
    try:
        hexes = [driver.stdout.readline().strip() for driver in drivers]  # type: ignore[union-attr]
        groups = [PlacementGroup(ray.PlacementGroupID.from_hex(h)) for h in hexes]
        wait_for(lambda: [state(g) for g in groups], lambda s: "CREATED" in s, timeout=120,
                 what="one of the two groups placed")
        tables = wait_for(lambda: [placement_group_table(g) for g in groups],
                          lambda t: any(x["state"] == "PENDING" and x["stats"]["scheduling_state"] == "NO_RESOURCES"
                                        for x in t), timeout=60, what="the GCS to find no room for the other group")
        ready, waiting = sorted(tables, key=lambda t: t["state"] != "CREATED")
        assert ready["state"] == "CREATED" and waiting["state"] == "PENDING"
        assert set(ready["bundles_to_node_id"].values()) <= {ids["tray07"], ids["tray08"]}
        assert not any(waiting["bundles_to_node_id"].values())  # never two groups over the clique's 8 GPUs
        late = groups[[t["placement_group_id"] for t in tables].index(waiting["placement_group_id"])]
        reason = rayaccel.ray.pending_reason(late)
        assert reason is not None and f"the domains that hold that many ({CLIQUE}) are in use" in reason, reason
        # The first driver leaves: its group goes, and Ray places the waiting one in the domain it freed.
        first = drivers[[t["placement_group_id"] for t in tables].index(ready["placement_group_id"])]
        first.communicate("", timeout=60)
        wait_for(lambda: state(late), lambda s: s == "CREATED", timeout=120, what="the waiting group placed")
        assert group_table(late).assignments == {"ray.io/gpu-domain": CLIQUE}
    finally:
        for driver in drivers:
            if driver.poll() is None:
                driver.communicate("", timeout=60)


def test_a_removed_nodes_host_name_is_free_again(cluster):
    # Last in the module: it replaces the second DGX node. Gone from the cluster, its machine's name (and so
    # its domain id) is free: a node of the fixture started again takes it; one named by hand has its own.
    cluster_obj, _, nodes = cluster
    cluster_obj.remove_node(nodes["dgx_b"])
    again = rayaccel.ray.add_node(cluster_obj, simulate="nvidia/dgx-h100", num_cpus=1)
    named = rayaccel.ray.add_node(cluster_obj, simulate="nvidia/dgx-h100", num_cpus=1, hostname="dgx-c")
    wait_for(lambda: {n["NodeID"] for n in ray.nodes() if n["Alive"]}, lambda alive: {again.node_id,
             named.node_id} <= alive, timeout=120, what="both new nodes alive")
    assert labels(again.node_id)["ray.io/gpu-domain"] == "dgx-h100-01-2-nvswitch"
    assert labels(named.node_id)["ray.io/gpu-domain"] == "dgx-c-nvswitch"


def test_a_domain_group_reads_the_nodes_again_only_after_one_came_or_went(cluster, monkeypatch):
    # The GCS announces each node that registers or dies on its node channel; between announcements the
    # driver's view of the nodes (rayaccel.ray.node_view) is not read again, after one it is. The same holds
    # for which label the group is packed by, derived from every node's labels and resources.
    cluster_obj, _, _ = cluster
    reads: list[int] = []
    real_nodes = ray.nodes
    monkeypatch.setattr(ray, "nodes", lambda: reads.append(1) or real_nodes())
    choices: list[str | None] = []
    real_choice = placement._topology_choice

    def counted_choice(*args):
        choice = real_choice(*args)
        choices.append(choice.key)
        return choice

    monkeypatch.setattr(placement, "_topology_choice", counted_choice)

    def reads_for_one_group() -> int:
        before = len(reads)
        remove_placement_group(rayaccel.ray.scale_up_domain_placement_group([{"GPU": 4}] * 2, kind="nvswitch"))
        return len(reads) - before

    wait_for(lambda: (reads_for_one_group(), reads_for_one_group()), lambda counts: counts[1] == 0, timeout=60,
             what="a domain group made without reading the nodes")
    made = len(choices)
    reads_for_one_group()
    assert len(choices) == made  # the nodes stand: the choice made for them stands too
    extra = rayaccel.ray.add_node(cluster_obj, simulate="nvidia/dgx-h100", num_cpus=1, hostname="dgx-d")
    listed = wait_for(lambda: {n["NodeID"]: n for n in alive_nodes()}, lambda nodes: extra.node_id in nodes,
                      timeout=60, what="the view to list the added node")
    assert listed[extra.node_id]["Labels"]["ray.io/gpu-domain"] == "dgx-d-nvswitch"
    reads_for_one_group()
    assert len(choices) > made and choices[-1] == "ray.io/gpu-domain"  # a node came: made again, from the new view
    cluster_obj.remove_node(extra)
    wait_for(lambda: {n["NodeID"] for n in alive_nodes()}, lambda ids: extra.node_id not in ids, timeout=60,
             what="the view to drop the removed node")
