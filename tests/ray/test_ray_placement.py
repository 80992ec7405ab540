"""Topology-aware placement on a real Ray node (issue 24): the QTS node of six devices in two fully linked
islands of three (two scale-up domains, joined only by PCIe), started by ``rayaccel.ray.init`` with its
health monitor; one node for the module.

Ray hands out instance ids lowest first; the node's claims table turns them into the best-connected free
units (``rayaccel.ray.claims``), so what a task sees depends on what else runs, never on Ray's order.
"""

from __future__ import annotations

import os
import urllib.request

import pytest
import ray
from rendezvous import rendezvous
from simulated_node import simulated_node

import rayaccel.ray
from rayaccel.errors import RayaccelError
from rayaccel.ray.claims import ClaimsTable, claims_path
from rayaccel.ray.monitor import monitor_status
from rayaccel.support.polling import wait_for

pytestmark = pytest.mark.ray

ISLANDS = [{"0", "1", "2"}, {"3", "4", "5"}]
FAILED = "QTS-0004-0000-0000-0000-000000000004"


@pytest.fixture(scope="module")
def node():
    env = pytest.MonkeyPatch()  # undone after the node stops: the module's settings leave with it
    env.setenv("RAYACCEL_PLUGINS", "qts=rayaccel_testplugins.qts")
    env.setenv("RAY_metrics_report_interval_ms", "1000")  # (Ray's spelling) metrics export fast
    try:
        with simulated_node("qts/qts-6", "qts", "QTS", 6, num_cpus=8, monitor=True, monitor_interval=1) as node_id:
            # The monitor's first poll is its baseline (what is bad then is not cordoned): wait for it.
            wait_for(lambda: monitor_status(node_id), lambda s: s is not None and s["polls"] >= 1,
                     timeout=60, what="the health monitor's first poll")
            yield node_id
    finally:
        env.undo()


def units(meet=None, n=0):
    """The QTS units this task or actor sees (its env var; get_accelerator_ids() must agree)."""
    if meet is not None:  # held until n callers run at once, so the test knows they were concurrent
        assert ray.get(meet.arrive.remote("concurrent", n))
    env = os.environ.get("QTS_VISIBLE_DEVICES", "")
    assert sorted(ray.get_runtime_context().get_accelerator_ids()["QTS"]) == sorted(env.split(","))
    return sorted(env.split(","))


@ray.remote(resources={"QTS": 1}, num_cpus=0)
class Holder:
    def units(self):
        return units()


def claims(node_id):
    session = ray._private.worker.global_worker.node.get_session_dir_path()
    return ClaimsTable(claims_path(session, node_id)).snapshot().get("QTS", [])


def test_an_idle_node_gives_the_lowest_best_connected_units(node):
    assert ray.get(ray.remote(resources={"QTS": 3})(units).remote(), timeout=60) == ["0", "1", "2"]


def test_with_device_0_busy_a_three_device_task_gets_the_other_island(node):
    holder = Holder.remote()
    assert ray.get(holder.units.remote(), timeout=60) == ["0"]
    try:
        # Ray alone would give instances 1, 2, 3: two islands.
        assert ray.get(ray.remote(resources={"QTS": 3})(units).remote(), timeout=60) == ["3", "4", "5"]
        assert ray.get(ray.remote(resources={"QTS": 2})(units).remote(), timeout=60) == ["1", "2"]
    finally:
        ray.kill(holder)


def test_two_concurrent_three_device_tasks_get_one_island_each(node):
    meet = rendezvous()
    task = ray.remote(resources={"QTS": 3})(units)
    got = ray.get([task.remote(meet, 2), task.remote(meet, 2)], timeout=90)
    assert sorted(map(set, got), key=min) == ISLANDS


def test_a_finished_task_leaves_no_claim_and_an_actor_keeps_its_own(node):
    ray.get(ray.remote(resources={"QTS": 2})(units).remote(), timeout=60)
    assert [c for c in claims(node) if not c.get("cordon")] == []
    holder = Holder.remote()
    try:
        (unit,) = ray.get(holder.units.remote(), timeout=60)
        (claim,) = claims(node)
        assert claim["units"] == [unit] and len(claim["tokens"]) == 1
    finally:
        ray.kill(holder)


def test_every_domain_is_published_and_counted_on_its_own(node):
    (info,) = [n for n in ray.nodes() if n["NodeID"] == node]
    labels = info["Labels"]
    key = "rayaccel.io/scale-up-domain"
    assert (labels[key], labels[f"{key}-size"], labels[f"{key}-count"]) == ("qts-node-qlink0", "3", "2")
    assert (labels[f"{key}-1"], labels[f"{key}-1-size"]) == ("qts-node-qlink1", "3")
    assert info["Resources"]["QTS_domain_qts-node-qlink0"] == info["Resources"]["QTS_domain_qts-node-qlink1"] == 3
    domains = rayaccel.ray.scale_up_domains()
    assert {d: (v.size, v.capacity["QTS"], v.nodes) for d, v in domains.items()} == {
        "qts-node-qlink0": (3, 3.0, (node,)), "qts-node-qlink1": (3, 3.0, (node,))}


def test_a_task_holding_a_domain_resource_gets_units_of_that_domain(node):
    holder = Holder.remote()  # unit 0 busy: the best-connected free pair is 1, 2, but the task asks for island 1
    try:
        ray.get(holder.units.remote(), timeout=60)
        task = ray.remote(resources={"QTS": 2, "QTS_domain_qts-node-qlink1": 2})(units)
        assert set(ray.get(task.remote(), timeout=60)) <= ISLANDS[1]
    finally:
        ray.kill(holder)


def test_a_four_bundle_group_stays_pending_with_a_reason_and_a_three_bundle_one_fills_one_island(node):
    from ray.util import remove_placement_group
    from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy

    four = rayaccel.ray.scale_up_domain_placement_group([{"QTS": 1}] * 4)
    try:
        assert not four.wait(5)
        reason = rayaccel.ray.pending_reason(four)
        assert "ask for 4 QTS_domain_qts-node-qlink" in reason and "(the cluster has 3)" in reason, reason
    finally:
        remove_placement_group(four)
    # The other island, named: only its nodes' ids can select it (the unnumbered label names the first).
    three = rayaccel.ray.scale_up_domain_placement_group([{"QTS": 1}] * 3, domain="qts-node-qlink1")
    try:
        assert three.wait(60) and rayaccel.ray.pending_reason(three) is None
        meet = rendezvous()
        task = ray.remote(resources={"QTS": 1}, num_cpus=0)(units)
        got = ray.get([task.options(scheduling_strategy=PlacementGroupSchedulingStrategy(
            three, placement_group_bundle_index=i)).remote(meet, 3) for i in range(3)], timeout=90)
        assert {u for (u,) in got} == ISLANDS[1]
    finally:
        remove_placement_group(three)


def test_best_connected_options_place_a_task_on_one_island(node):
    options = rayaccel.ray.best_connected(3, family="qts")
    assert options == {"resources": {"QTS": 3}, "label_selector": {"ray.io/node-id": f"in({node})"}}
    assert set(ray.get(ray.remote(units).options(**options).remote(), timeout=60)) in ISLANDS
    with pytest.raises(RayaccelError, match="no node of the cluster holds 4 QTS in one scale-up domain"):
        rayaccel.ray.best_connected(4, family="qts")
    bundles = rayaccel.ray.best_connected_bundles(3, family="qts")
    assert bundles["bundles"] == [{"QTS": 3.0}]


def test_a_fault_on_device_4_cordons_it_alone_and_clearing_it_offers_six_again(node):
    # Last in the module: it cordons device 4.
    def status():
        return monitor_status(node)

    with open(rayaccel.ray.node_configs()[node].fault_file, "a", encoding="utf-8") as f:
        f.write("fatal-4\n")
    cordon = wait_for(status, lambda s: s["cordoned"].get("qts", {}).get("held") == 1, timeout=120,
                      what="device 4's unit held by its cordon")["cordoned"]["qts"]
    assert cordon["units"] == 1 and list(cordon["devices"]) == [FAILED] and "qts-fatal" in cordon["message"]
    assert cordon["devices"][FAILED]["units"] == ["4"]
    wait_for(ray.available_resources, lambda r: r.get("QTS") == 5, timeout=60, what="Ray to offer 5 QTS")
    # The five healthy devices all take work at once, and none of them is device 4.
    meet = rendezvous()
    task = ray.remote(resources={"QTS": 1})(units)
    got = ray.get([task.remote(meet, 5) for _ in range(5)], timeout=90)
    assert sorted(u for (u,) in got) == ["0", "1", "2", "3", "5"]
    # The published gauge agrees with what Ray offers.
    (info,) = [n for n in ray.nodes() if n["NodeID"] == node]
    url = f"http://{info['NodeManagerAddress']}:{info['MetricsExportPort']}/metrics"

    def gauge() -> float | None:
        text = urllib.request.urlopen(url, timeout=5).read().decode()
        values = [float(ln.rsplit(" ", 1)[1]) for ln in text.splitlines()
                  if ln.startswith("ray_rayaccel_schedulable_units{") and 'family="qts"' in ln]
        return values[0] if values else None

    assert wait_for(gauge, lambda v: v == 5, timeout=120, interval=1, retry_on=(OSError,),
                    what=f"rayaccel_schedulable_units of qts = 5 at {url}") == 5

    open(rayaccel.ray.node_configs()[node].fault_file, "w", encoding="utf-8").close()  # the device recovers
    recovered = wait_for(status, lambda s: not s["cordoned"], timeout=120, what="the recovery")
    assert FAILED in {r.get("device") for r in recovered["recovered"]}
    wait_for(ray.available_resources, lambda r: r.get("QTS") == 6, timeout=60, what="Ray to offer 6 QTS again")
    assert [c for c in claims(node) if c.get("cordon")] == []
    meet = rendezvous()
    got = ray.get([task.remote(meet, 6) for _ in range(6)], timeout=90)
    assert sorted(u for (u,) in got) == ["0", "1", "2", "3", "4", "5"]
