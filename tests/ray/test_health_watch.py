"""The monitor's health bookkeeping on its own (rayaccel.ray.health_watch): which devices fail, poll after poll,
over real inventories of simulated machines; no Ray (cordoning them is tests/ray/test_ray_lifecycle.py's)."""

from __future__ import annotations

import pytest

from rayaccel.hosts.seam import Host
from rayaccel.inventory.builder import collect_inventory
from rayaccel.plugins.manager import PluginManager
from rayaccel.ray.health_watch import HealthWatch
from rayaccel.records import NodeInventory
from rayaccel.simulation.host_factory import make_host
from rayaccel_nvidia import plugin as nvidia
from rayaccel_testplugins import acme

FATAL = "ACME-0002-5e1f-4c2a-9d3b-000000000002"
LOST = "ACME-0003-5e1f-4c2a-9d3b-000000000003"


@pytest.fixture(scope="module")
def manager() -> PluginManager:
    manager = PluginManager(autoload=False)
    manager.register(acme, "acme")
    manager.register(nvidia, "nvidia")
    return manager


def inventory(manager: PluginManager, ref: str, *faults: str) -> NodeInventory:
    host: Host = make_host(ref, list(faults), manager=manager)
    return collect_inventory(manager, host, with_metrics=False)


def test_a_fatal_fault_and_a_lost_device_fail_and_recover(manager: PluginManager) -> None:
    watch = HealthWatch()
    first = watch.observe(inventory(manager, "acme/acme-4"), first=True)
    assert set(first.health.values()) == {"healthy"} and first.failing == {} and watch.baseline == set()
    assert watch.resources == {"acme": "ACME"}
    fatal = watch.observe(inventory(manager, "acme/acme-4", "fatal-2"), first=False)
    assert list(fatal.failing) == [FATAL] and fatal.health[FATAL] == "unhealthy"
    assert [f.family for f in fatal.failing[FATAL]] == ["acme"]
    lost = watch.observe(inventory(manager, "acme/acme-4", "lost-3"), first=False)
    assert list(lost.failing) == [LOST] and lost.vanished == [(LOST, "acme")] and lost.health[LOST] == "unhealthy"
    assert lost.failing[LOST][0].code == "device-lost"
    assert watch.observe(inventory(manager, "acme/acme-4"), first=False).failing == {}


def test_what_was_bad_at_start_or_is_not_offered_never_fails(manager: PluginManager) -> None:
    started_bad = HealthWatch()  # no start-up baseline given: the first poll is it
    assert started_bad.observe(inventory(manager, "acme/acme-4", "fatal-2"), first=True).failing == {}
    assert started_bad.baseline == {FATAL}
    assert started_bad.observe(inventory(manager, "acme/acme-4", "fatal-2"), first=False).failing == {}
    given = HealthWatch(baseline={FATAL})  # the node's own baseline is kept, not replaced by the first poll
    assert given.observe(inventory(manager, "acme/acme-4", "fatal-2"), first=True).failing == {}
    assert given.observe(inventory(manager, "acme/acme-4", "fatal-2", "lost-3"), first=False).failing.keys() == {LOST}
    assert given.baseline == {FATAL}
    healthy = inventory(manager, "acme/acme-4")
    offered = {u for f in healthy.families for d in f.devices if d.id != FATAL for u in d.unit_ids}
    not_offered = HealthWatch(offered={"acme": offered})  # the operator's visible-devices setting left it out
    not_offered.observe(healthy, first=True)
    assert not_offered.observe(inventory(manager, "acme/acme-4", "fatal-2"), first=False).failing == {}


def test_a_partitioned_device_that_fails_fails_each_of_its_partitions(manager: PluginManager) -> None:
    healthy = inventory(manager, "nvidia/a100-80gb-mig-mixed")
    partitioned = {d.id: [p.id for p in d.partitions] for f in healthy.families for d in f.devices if d.partitions}
    watch = HealthWatch()
    assert watch.observe(healthy, first=True).failing == {}
    seen = watch.observe(inventory(manager, "nvidia/a100-80gb-mig-mixed", "mig-parent-xid-79"), first=False)
    (parent,) = [d for d in partitioned if d in seen.failing]
    assert set(partitioned[parent]) <= set(seen.failing) and len(partitioned[parent]) > 1
    assert all(seen.health[p] == "unhealthy" for p in partitioned[parent])
