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


def test_an_empty_start_up_baseline_says_none_was_bad_so_a_fault_before_the_first_poll_fails(manager) -> None:
    """A node started healthy gives the monitor an empty baseline: a fault written before the monitor's first
    poll (a monitor started late, or restarted by Ray) is a fault, not what was bad at start."""
    given_empty = HealthWatch(baseline=set())
    assert given_empty.observe(inventory(manager, "acme/acme-4", "fatal-2"), first=True).failing.keys() == {FATAL}
    assert given_empty.baseline == set()


def twin_node(acme_sees: NodeInventory, twin_sees: NodeInventory) -> NodeInventory:
    """A node of two families reporting acme's devices by the same ids, the second under a resource of its own
    (two plugins for one kind of device: tests/ray/test_ray_lifecycle.py's node runs acme and hostile-noisy),
    each family as it reads its own inventory."""
    (acme_family,), (seen_by_twin,) = acme_sees.families, twin_sees.families
    declaration = seen_by_twin.family.model_copy(update={"name": "acme-twin", "resource_name": "ACMETWIN"})
    twin = seen_by_twin.model_copy(update={"family": declaration, "plugin": "acme-twin"})
    return acme_sees.model_copy(update={"families": [acme_family, twin]})


def test_two_families_reporting_one_device_fail_and_lose_it_each_on_its_own(manager: PluginManager) -> None:
    """Each family's worker reads the machine at its own moment: one may see a fault a poll before the other."""
    healthy, fatal, lost = (inventory(manager, "acme/acme-4", *f) for f in ((), ("fatal-2",), ("lost-3",)))
    watch = HealthWatch(baseline=set())
    assert watch.observe(twin_node(healthy, healthy), first=True).failing == {}
    seen = watch.observe(twin_node(healthy, fatal), first=False)
    assert [f.family for f in seen.failing[FATAL]] == ["acme-twin"] and seen.health[FATAL] == "unhealthy"
    seen = watch.observe(twin_node(fatal, healthy), first=False)  # the other way round: as bad as either says
    assert [f.family for f in seen.failing[FATAL]] == ["acme"] and seen.health[FATAL] == "unhealthy"
    both = watch.observe(twin_node(fatal, fatal), first=False)
    assert [f.family for f in both.failing[FATAL]] == ["acme", "acme-twin"]
    gone = watch.observe(twin_node(lost, healthy), first=False)  # still listed by the other family: lost all the same
    assert gone.vanished == [(LOST, "acme")] and [f.family for f in gone.failing[LOST]] == ["acme"]
