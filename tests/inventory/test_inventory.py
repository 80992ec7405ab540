"""The inventory turns plugin records into resources, vocabulary labels and health, as documented."""

from __future__ import annotations

import types

import pytest

from rayaccel.hosts.expectations import compare_expected
from rayaccel.hosts.fixtures import resolve_fixture
from rayaccel.hosts.simulated import SimulatedHost
from rayaccel.inventory.builder import collect_inventory
from rayaccel.inventory.quantity import check_quantity
from rayaccel.inventory.topology import best_connected_subset, greedy_order, topology_errors
from rayaccel.labels import VOCABULARY, domain_label_value, label_errors, to_label_value
from rayaccel.plugins.manager import PluginManager
from rayaccel.records import Device, FamilyDeclaration, FamilyInventory, Link, QuantityRule, Topology
from rayaccel.support.raycompat import RAY_TPU_LABELS
from rayaccel_testplugins import acme


@pytest.fixture(scope="module")
def manager() -> PluginManager:
    manager = PluginManager(autoload=False)
    manager.register(acme, "acme")
    return manager


def inventory_of(manager: PluginManager, *faults: str):
    fixture = resolve_fixture("acme/acme-4", manager)
    return fixture, collect_inventory(manager, SimulatedHost(fixture, faults=faults))


def test_fixture_expectation_is_met(manager):
    fixture, inventory = inventory_of(manager)
    assert compare_expected(inventory, fixture) == []
    assert inventory.problems == []


def test_unhealthy_devices_are_not_counted_and_their_units_are_not_schedulable(manager):
    fixture, inventory = inventory_of(manager, "fatal-2")
    family = inventory.families[0]
    bad = fixture.expected.device_ids[2]
    assert inventory.resources["ACME"] == 3
    assert "2" not in family.schedulable_units and sorted(family.schedulable_units) == ["0", "1", "3"]
    assert inventory.labels["rayaccel.io/health"] == "degraded"
    assert inventory.labels["rayaccel.io/count"] == "3"
    assert next(h for h in family.health if h.device == bad).reasons[0].fatal
    assert compare_expected(inventory, fixture, fixture.expected.model_copy(update={
        "resources": {"ACME": 3.0, "accelerator_type:R1": 1.0}, "health": {bad: "unhealthy"},
        "labels": {}})) == []


def test_every_vocabulary_label_is_documented_and_valid(manager):
    _, inventory = inventory_of(manager)
    assert label_errors(inventory.labels) == []
    for key in inventory.labels:
        assert key in VOCABULARY or key.startswith("ray.io/")


def test_unknown_sku_is_still_schedulable_with_a_derived_type_and_the_onboarding_command(manager, tmp_path):
    fixture = resolve_fixture("acme/acme-4", manager)
    data = fixture.model_dump(mode="json", by_alias=True)
    for key in list(data["host"]["files"]):
        if key.endswith("/product"):
            data["host"]["files"][key] = "ACME Roadrunner R2 Turbo\n"
    from rayaccel.hosts.fixtures import parse_fixture

    inventory = collect_inventory(manager, SimulatedHost(parse_fixture(data, "test")))
    assert inventory.resources["ACME"] == 4
    assert inventory.resources["accelerator_type:Turbo"] == 1  # the plugin's own type derivation
    assert inventory.labels["rayaccel.io/sku-known"] == "false" and "rayaccel.io/sku" not in inventory.labels
    warning = next(p for p in inventory.problems if p.code == "unknown-sku")
    assert warning.severity == "warning"
    assert ("rayaccel sku add --plugin acme --id acme-roadrunner-r2-turbo --marketing-name "
            "'ACME Roadrunner R2 Turbo' --accelerator-type Turbo") in (warning.fix or "")


@pytest.mark.parametrize(("kind", "choices", "quantity", "ok"), [
    ("fractional", [], 0.5, True), ("fractional", [], 1.5, False), ("fractional", [], 2, True),
    ("whole", [], 1.5, False), ("whole", [], 0.5, False), ("whole", [], 3, True),
    ("choices", [1, 2, 4, 8], 4, True), ("choices", [1, 2, 4, 8], 3, False), ("choices", [1, 2, 4, 8], 0, False),
])
def test_quantity_rules(kind, choices, quantity, ok):
    valid, message = check_quantity(QuantityRule(kind=kind, choices=choices), "X", quantity)
    assert valid is ok
    assert (message is None) is ok
    if message:
        assert "X" in message and f"{quantity:g}" in message


def test_a_ray_label_is_kept_only_when_the_family_declares_it_as_rays_for_its_resource():
    # acme (resource ACME) returning a Ray TPU label: it declares no ray_labels, and could not (it is no TPU).
    def rayaccel_labels(inventory: FamilyInventory) -> dict[str, str]:
        return {"ray.io/tpu-topology": "2x2", "acme.example.com/pool": "a"}

    plugin = types.ModuleType("acme_with_ray_labels")
    vars(plugin).update({k: v for k, v in vars(acme).items() if k.startswith("rayaccel_")})
    plugin.rayaccel_labels = rayaccel_labels  # type: ignore[attr-defined]
    manager = PluginManager(autoload=False)
    manager.register(plugin, "acme")
    _, inventory = inventory_of(manager)
    assert inventory.labels["acme.example.com/pool"] == "a" and "ray.io/tpu-topology" not in inventory.labels
    [dropped] = [p for p in inventory.problems if p.code == "invalid-label"]
    assert "ray.io/tpu-topology" in dropped.message and dropped.severity == "warning"

    declared = acme.rayaccel_family().model_dump()
    with pytest.raises(ValueError, match=r"ray_labels: ray.io/tpu-topology is not a label Ray sets for resource"):
        FamilyDeclaration.model_validate({**declared, "ray_labels": ["ray.io/tpu-topology"]})
    tpu = FamilyDeclaration.model_validate({**declared, "resource_name": "TPU", "visible_devices_env_var": "ACME_X",
                                            "ray_labels": list(RAY_TPU_LABELS)})
    assert tpu.ray_labels == list(RAY_TPU_LABELS)


def test_label_values_are_made_valid():
    assert to_label_value("ACME Corp") == "ACME-Corp"
    assert to_label_value(" 550.54.15 ") == "550.54.15"
    assert label_errors({"rayaccel.io/x": to_label_value("Ünïcode ünicode!")}) == []


def test_a_domain_id_becomes_one_valid_label_value_per_domain():
    clique = "5f2c1a9e-7d3b-4e8a-9c61-0b7d2e4f8a13.32766"
    assert domain_label_value(clique) == clique  # a valid id is kept as it is
    # Two long ids that share their first 63 characters, and two that differ only in a character a label
    # cannot hold, stay two domains; each value is valid and the same on every node (deterministic).
    long_a, long_b = "rack-" + "x" * 60 + "-a", "rack-" + "x" * 60 + "-b"
    odd_a, odd_b = "hive#1", "hive@1"
    values = [domain_label_value(v) for v in (long_a, long_b, odd_a, odd_b)]
    assert len(set(values)) == 4
    assert all(label_errors({"ray.io/gpu-domain": v}) == [] for v in values)
    assert values == [domain_label_value(v) for v in (long_a, long_b, odd_a, odd_b)]


def _devices(n: int) -> list[Device]:
    return [Device(index=i, id=f"d{i}", product_name="p") for i in range(n)]


def test_best_connected_subset_takes_one_island():
    devices = _devices(8)
    islands = [(a, b) for group in ((0, 1, 2, 3), (4, 5, 6, 7)) for a in group for b in group if a < b]
    links = [Link(a=f"d{a}", b=f"d{b}", kind="nvlink", bandwidth_gbps=300) for a, b in islands]
    links += [Link(a="d3", b="d4", kind="pcie")]
    assert best_connected_subset(devices, links, 4) == ["d0", "d1", "d2", "d3"]
    assert set(greedy_order(devices, links)[:4]) == {"d0", "d1", "d2", "d3"}
    assert best_connected_subset(devices, [], 2) == ["d0", "d1"]


def test_topology_errors_catch_unknown_devices_self_links_and_oversized_domains():
    from rayaccel.records import Domain

    topology = Topology(links=[Link(a="d0", b="zz", kind="pcie"), Link(a="d1", b="d1", kind="pcie")],
                        domains=[Domain(kind="other", id="x", size=1, members=["d0", "d1"])])
    errors = topology_errors(_devices(2), topology)
    assert any("unknown device 'zz'" in e for e in errors)
    assert any("to itself" in e for e in errors)
    assert any("2 members but size 1" in e for e in errors)


@pytest.mark.parametrize(("size", "members", "hosts", "wrong"), [
    (8, 4, 2, False), (8, 3, 2, False),  # a v5p-16 worker, and one that lost a chip
    (256, 8, 32, False), (72, 4, 18, False), (8, 4, 4, True),  # v6e-256, NVL72; slice chips minus this host's
    (256, 8, 248, True), (8, 4, 8, True),  # the same slip on v6e-256; one host per device
])
def test_topology_errors_catch_more_hosts_than_a_domain_s_devices_fill(size: int, members: int, hosts: int,
                                                                       wrong: bool) -> None:
    from rayaccel.records import Domain

    topology = Topology(domains=[Domain(kind="tpu-slice", id="s", size=size, members=[f"d{i}" for i in range(members)],
                                        hosts=hosts, host_index=0)])
    errors = [e for e in topology_errors(_devices(members), topology) if "domain-hosts-hold-its-devices" in e]
    assert bool(errors) == wrong, errors
