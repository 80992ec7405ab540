"""Every Neuron fixture gives its expected inventory; faults give theirs, and removing them recovers."""

from __future__ import annotations

from pathlib import Path

import pytest

from rayaccel import RealHost, SkuMatch, SkuRecord
from rayaccel.testing import (
    PluginManager,
    SimulatedHost,
    build_inventory,
    load_fixture,
    merge_patch,
    parse_fixture,
    plugin_suite,
)
from rayaccel_neuron import plugin

FIXTURES = sorted((Path(plugin.__file__).parent / "fixtures").glob("*.yaml"))
CMD = "/opt/aws/neuron/bin/neuron-ls --json-output"


@pytest.fixture(scope="module")
def manager(rayaccel_manager: PluginManager) -> PluginManager:
    return rayaccel_manager  # the testing kit's: just this plugin, under its entry-point name


def build(manager, host):  # type: ignore[no-untyped-def]
    return build_inventory(manager, host, plugins=["neuron"])


def fixture_named(stem: str):  # type: ignore[no-untyped-def]
    return load_fixture(next(p for p in FIXTURES if p.stem == stem))


def test_the_issue_fixtures_are_shipped() -> None:
    assert {p.stem for p in FIXTURES} >= {"trn1.32xlarge", "trn2.48xlarge", "inf2.48xlarge"}


# Every fixture gives its expected inventory, every fault its expected state and recovers, and the rest of
# what every plugin is held to (rayaccel.testing.plugin_suite).
TestNeuronPlugin = plugin_suite(plugin)


def test_bad_neuron_ls_output_is_one_clear_problem_not_a_crash(manager) -> None:  # type: ignore[no-untyped-def]
    inventory = build(manager, SimulatedHost(fixture_named("trn1.32xlarge"), faults=["neuron-ls-garbage"]))
    (problem,) = inventory.problems
    assert problem.hook == "rayaccel_discover" and "not JSON" in problem.message
    assert "neuron-ls --json-output' by hand" in problem.message
    assert inventory.family("neuron") is None


def test_devices_own_consecutive_global_core_ids(manager) -> None:  # type: ignore[no-untyped-def]
    family = build(manager, SimulatedHost(fixture_named("trn2.48xlarge"))).family("neuron")
    assert family is not None
    assert family.devices[3].units == ["12", "13", "14", "15"]
    assert family.devices[3].attributes["physical_cores"] == 8
    assert sorted(family.schedulable_units, key=int) == [str(i) for i in range(64)]


def test_a_lost_device_keeps_the_other_devices_core_ids(manager) -> None:  # type: ignore[no-untyped-def]
    family = build(manager, SimulatedHost(fixture_named("trn1.32xlarge"), faults=["device-lost"])).family("neuron")
    assert family is not None
    assert "14" not in family.schedulable_units and "16" in family.schedulable_units
    assert all("neuron7" not in ln.a for ln in family.topology.links)


def test_device_vanishing_after_inventory_is_unhealthy(manager, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    fixture = fixture_named("trn1.32xlarge")
    devices = plugin.rayaccel_discover(SimulatedHost(fixture))
    fault_file = tmp_path / "faults"
    fault_file.write_text("device-lost\n")
    reports = {r.device: r for r in plugin.rayaccel_health(SimulatedHost(fixture, fault_file=str(fault_file)), devices)}
    assert reports[devices[7].id].state == "unhealthy" and reports[devices[7].id].reasons[0].fatal
    fault_file.write_text("")
    assert all(r.state == "healthy" for r in plugin.rayaccel_health(SimulatedHost(fixture, fault_file=str(fault_file)),
                                                                    devices))


def test_memory_metrics_come_from_the_driver(manager) -> None:  # type: ignore[no-untyped-def]
    family = build(manager, SimulatedHost(fixture_named("trn1.32xlarge"))).family("neuron")
    assert family is not None
    values = {(m.device, m.name): m.value for m in family.metrics}
    first, idle = family.devices[0].id, family.devices[8].id
    assert values[(first, "memory_used")] == 2 * (4294967296 + 268435456 + 1073741824)
    assert values[(idle, "memory_used")] == 0
    assert values[(first, "memory_total")] == 32 * 2**30


def test_trn2u_with_ultraserver_env_joins_an_ultraserver_domain(manager) -> None:  # type: ignore[no-untyped-def]
    fixture = fixture_named("trn2.48xlarge")
    data = merge_patch(fixture.model_dump(mode="json", by_alias=True), {"host": {
        "files": {"/sys/devices/virtual/dmi/id/product_name": "trn2u.48xlarge\n"},
        "env": {"NEURON_GLOBAL_TOPOID": "2", "NEURON_GLOBAL_TOPOID0_HOST": "ip-10-1-0-4.ec2.internal"}}})
    family = build(manager, SimulatedHost(parse_fixture(data, "trn2u"))).family("neuron")
    assert family is not None
    (domain,) = family.topology.domains
    assert (domain.kind, domain.id, domain.size, domain.hosts, domain.host_index) == (
        "ultraserver", "ip-10-1-0-4.ec2.internal", 64, 4, 2)
    assert family.labels["rayaccel.io/scale-up-domain-kind"] == "ultraserver"
    # A plain trn2.48xlarge is not in an UltraServer, whatever the environment says.
    data["host"]["files"]["/sys/devices/virtual/dmi/id/product_name"] = "trn2.48xlarge\n"
    plain = build(manager, SimulatedHost(parse_fixture(data, "trn2"))).family("neuron")
    assert plain is not None and plain.topology.domains == []


def test_tools_without_a_driver_mean_no_devices_and_no_problem(manager) -> None:  # type: ignore[no-untyped-def]
    fixture = parse_fixture({
        "schema": "rayaccel-fixture/1", "plugin": "neuron", "name": "tools-only", "description": "DLAMI off Neuron",
        "host": {"files": {"/opt/aws/neuron/bin/neuron-ls": ""}, "commands": {CMD: {
            "returncode": 1, "stderr": "ERROR: No neuron device found\n"}}},
        "expected": {"devices": 0}}, "inline")
    inventory = build(manager, SimulatedHost(fixture))
    assert inventory.family("neuron") is None and inventory.problems == []


def test_no_neuron_hardware_means_no_devices_and_no_problem(manager, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    for host in (RealHost(root=str(tmp_path), env={"PATH": str(tmp_path)}), RealHost()):
        inventory = build(manager, host)
        assert inventory.family("neuron") is None
        assert [p for p in inventory.problems if p.plugin == "neuron"] == []


def test_fixture_for_sku_rewrites_memory_name_and_pci_id(manager) -> None:  # type: ignore[no-untyped-def]
    data = fixture_named("inf2.48xlarge").model_dump(mode="json", by_alias=True)
    sku = SkuRecord(id="inferentia3", marketing_name="AWS Inferentia3", accelerator_type="aws-neuron-core",
                    memory_mib=65536, match=SkuMatch(pci_device_ids=["0x7464"], product_names=["Inferentia3"]))
    rewritten = parse_fixture(plugin.rayaccel_fixture_for_sku(data, sku), "rewritten")
    devices = plugin.rayaccel_discover(SimulatedHost(rewritten))
    assert {(d.product_name, d.pci_device_id, d.memory_mib) for d in devices} == {("Inferentia3", "0x7464", 65536)}


def test_transport_is_ray_s_nixl_over_efa_for_host_tensors() -> None:
    (spec,) = plugin.rayaccel_transports()
    assert spec.builtin_in_ray and spec.link_kinds == ["efa"] and spec.devices == ["cpu"]
    module, _, name = spec.manager_class.partition(":")
    import importlib

    from ray.experimental import TensorTransportManager
    assert issubclass(getattr(importlib.import_module(module), name), TensorTransportManager)


# -- The sysfs fallback (issue 27): the driver counts physical cores, the runtime schedules logical ones ------

def _sysfs_family(manager, fault: str, env: dict[str, str] | None = None):  # type: ignore[no-untyped-def]
    fixture = fixture_named("trn2.48xlarge")
    if env:
        data = merge_patch(fixture.model_dump(mode="json", by_alias=True), {"host": {"env": env}})
        fixture = parse_fixture(data, "trn2-env")
    inventory = build(manager, SimulatedHost(fixture, faults=[fault]))
    return inventory, inventory.family("neuron")


def test_the_trn2_fixture_has_the_driver_s_physical_core_layout() -> None:
    files = fixture_named("trn2.48xlarge").host.files
    for index in range(16):
        base = f"/sys/devices/virtual/neuron_device/neuron{index}"
        # neuron_cdev.c prints nc_per_device with "%d" (no newline); V3_NC_PER_DEVICE is 8.
        assert files[f"{base}/core_count"] == "8"
        assert {k for k in range(16) if f"{base}/neuron_core{k}/info/architecture/arch_type" in files} == set(range(8))


@pytest.mark.parametrize("fault", ["neuron-ls-fails", "neuron-ls-missing"])
def test_sysfs_fallback_counts_logical_cores_at_the_default_lnc(manager, fault: str) -> None:  # type: ignore[no-untyped-def]
    inventory, family = _sysfs_family(manager, fault)
    assert family is not None and len(family.devices) == 16
    assert inventory.resources["neuron_cores"] == 64
    # Logical ids, device by device: what NEURON_RT_VISIBLE_CORES selects at LNC=2.
    assert [d.units for d in family.devices[:2]] == [["0", "1", "2", "3"], ["4", "5", "6", "7"]]
    assert sorted(family.schedulable_units, key=int) == [str(i) for i in range(64)]
    first = family.devices[0].attributes
    assert (first["nc_count"], first["logical_nc_config"], first["physical_cores"]) == (4, 2, 8)
    assert family.labels["aws.amazon.com/neuron.logical-nc-config"] == "2"


def test_sysfs_fallback_follows_neuron_logical_nc_config(manager) -> None:  # type: ignore[no-untyped-def]
    inventory, family = _sysfs_family(manager, "neuron-ls-fails", {"NEURON_LOGICAL_NC_CONFIG": "1"})
    assert family is not None and inventory.resources["neuron_cores"] == 128
    assert family.devices[1].units == [str(i) for i in range(8, 16)]
    assert family.devices[1].attributes["logical_nc_config"] == 1


def test_a_bad_lnc_setting_is_reported_and_the_default_used(manager) -> None:  # type: ignore[no-untyped-def]
    inventory, family = _sysfs_family(manager, "neuron-ls-fails", {"NEURON_LOGICAL_NC_CONFIG": "4"})
    assert family is not None and inventory.resources["neuron_cores"] == 64
    (bad,) = [p for p in inventory.problems if p.code == "malformed-value"]
    assert "NEURON_LOGICAL_NC_CONFIG" in bad.message and "'4'" in bad.message


def test_lnc_does_not_apply_before_trainium2(manager) -> None:  # type: ignore[no-untyped-def]
    fixture = fixture_named("trn1.32xlarge")
    data = merge_patch(fixture.model_dump(mode="json", by_alias=True), {"host": {
        "env": {"NEURON_LOGICAL_NC_CONFIG": "2"}, "files": {"/opt/aws/neuron/bin/neuron-ls": None},
        "commands": {CMD: None}}})
    inventory = build(manager, SimulatedHost(parse_fixture(data, "trn1-no-tools")))
    family = inventory.family("neuron")
    assert family is not None and inventory.resources["neuron_cores"] == 32  # 16 Trainium x 2, LNC=1 always
    assert family.devices[1].units == ["2", "3"]


def test_missing_neuron_ls_with_the_driver_loaded_is_a_warning_not_silence(manager) -> None:  # type: ignore[no-untyped-def]
    inventory, family = _sysfs_family(manager, "neuron-ls-missing")
    assert family is not None
    (problem,) = inventory.problems
    assert problem.code == "neuron-ls-missing" and problem.severity == "warning"
    assert "neuron-ls is not installed" in problem.message and "sysfs" in problem.message
    assert problem.fix is not None and "aws-neuronx-tools" in problem.fix


@pytest.mark.parametrize(("pci_id", "sku"), [("0x7364", "trainium2"), ("0x7564", "trainium3"), ("0x7565", "trainium3")])
def test_trainium_pci_ids_resolve(pci_id: str, sku: str) -> None:
    from rayaccel import Device
    from rayaccel.testing import load_catalog, resolve_sku

    catalog = load_catalog(Path(plugin.__file__).parent / "skus.yaml")  # the catalog validator accepts it
    device = Device(index=0, id="neuron-x", product_name="AWS Neuron device", pci_device_id=pci_id)
    record = resolve_sku(catalog, device)
    assert record is not None and record.id == sku and record.accelerator_type == "aws-neuron-core"
    if sku == "trainium3":
        # What the driver confirms is set; what it does not (memory, NeuronLink generation) stays unknown.
        assert record.architecture == "neuroncore-v4" and record.match.product_names == ["Trainium3"]
        assert record.memory_mib is None and record.interconnect is None


def test_an_absurd_core_count_in_sysfs_is_refused(manager) -> None:  # type: ignore[no-untyped-def]
    fixture = fixture_named("trn2.48xlarge")
    data = merge_patch(fixture.model_dump(mode="json", by_alias=True), {"host": {"files": {
        "/sys/devices/virtual/neuron_device/neuron3/core_count": "1000000000"}}})
    inventory = build(manager, SimulatedHost(parse_fixture(data, "trn2-bad-count"), faults=["neuron-ls-missing"]))
    family = inventory.family("neuron")
    assert family is not None and len(family.devices) == 15 and inventory.resources["neuron_cores"] == 60
    assert any(p.code == "malformed-value" and "core_count" in p.message for p in inventory.problems)


# -- Logical NeuronCore config (issue 25): the count and the visible ids follow LNC ---------------------------

@pytest.mark.parametrize(("stem", "lnc", "per_device"), [("trn2.48xlarge", 2, 4), ("trn2.48xlarge-lnc1", 1, 8)])
@pytest.mark.parametrize("fault", [None, "neuron-ls-fails"])
def test_trainium2_cores_and_visible_ids_follow_the_lnc(manager, stem: str, lnc: int, per_device: int,  # type: ignore[no-untyped-def]
                                                       fault: str | None) -> None:
    # The same 16 devices; neuron-ls (or, without it, sysfs and NEURON_LOGICAL_NC_CONFIG) decides the cores.
    inventory = build(manager, SimulatedHost(fixture_named(stem), faults=[fault] if fault else []))
    family = inventory.family("neuron")
    assert family is not None and len(family.devices) == 16
    assert inventory.resources["neuron_cores"] == 16 * per_device
    for device in family.devices:
        assert device.units == [str(device.index * per_device + k) for k in range(per_device)]
        assert (device.attributes["logical_nc_config"], device.attributes["physical_cores"]) == (lnc, 8)
    assert family.labels["aws.amazon.com/neuron.logical-nc-config"] == str(lnc)
    # The ids round-trip through NEURON_RT_VISIBLE_CORES as the runtime writes them (ranges included).
    last = family.devices[-1]
    assert plugin.rayaccel_parse_visible(f"{last.units[0]}-{last.units[-1]}") == last.units


def test_lnc1_and_lnc2_are_the_same_devices(manager) -> None:  # type: ignore[no-untyped-def]
    lnc2 = build(manager, SimulatedHost(fixture_named("trn2.48xlarge"))).family("neuron")
    lnc1 = build(manager, SimulatedHost(fixture_named("trn2.48xlarge-lnc1"))).family("neuron")
    assert lnc1 is not None and lnc2 is not None
    assert [d.id for d in lnc1.devices] == [d.id for d in lnc2.devices]
    assert [d.memory_mib for d in lnc1.devices] == [d.memory_mib for d in lnc2.devices]


@pytest.mark.parametrize(("content", "codes"), [("", {"fallback-device-id"}),
                                                ("<garbage/>\n", {"malformed-value", "fallback-device-id"})])
def test_a_device_without_a_readable_serial_is_kept_under_a_fallback_id_said_aloud(  # type: ignore[no-untyped-def]
        manager, content: str, codes: set[str]) -> None:
    fixture = fixture_named("trn1.32xlarge")
    serial_file = "/sys/devices/virtual/neuron_device/neuron1/info/serial_number"
    data = merge_patch(fixture.model_dump(mode="json", by_alias=True), {"host": {"files": {serial_file: content}}})
    inventory = build(manager, SimulatedHost(parse_fixture(data, "trn1-serial")))
    family = inventory.family("neuron")
    assert family is not None and len(family.devices) == 16
    device = next(d for d in family.devices if d.index == 1)
    assert device.id.startswith("neuron1-") and device.attributes["id_fallback"]
    assert [d.id for d in family.devices if d.index != 1] == [
        d.id for d in build(manager, SimulatedHost(fixture)).family("neuron").devices if d.index != 1]  # type: ignore[union-attr]
    found = {p.code for p in inventory.problems if serial_file in p.message or "device 1" in p.message.lower()
             or p.code == "fallback-device-id"}
    assert codes <= found, [p.message for p in inventory.problems]
