"""Every fixture gives its expected inventory; faults give their expected health; removing a fault recovers."""

from __future__ import annotations

import pkgutil
from pathlib import Path

import pytest

from rayaccel import LibraryUnavailable, RealHost, SkuMatch, SkuRecord
from rayaccel.testing import SimulatedHost, build_inventory, load_catalog, parse_fixture, plugin_suite
from rayaccel_amd import amdsmi as amdsmi_adapter, plugin

PLUGIN_DIR = Path(plugin.__file__).parent



# Every fixture gives its expected inventory, every fault its expected state and recovers, and the rest of
# what every plugin is held to (rayaccel.testing.plugin_suite).
TestAmdPlugin = plugin_suite(plugin)


def test_hang_and_garbage_problems_say_what_happened(manager, fixtures):
    hang = build_inventory(manager, SimulatedHost(fixtures["mi300x-8"], faults=["amd-smi-hang"]))
    assert "did not finish within" in hang.problems[0].message and "dmesg" in hang.problems[0].message
    garbage = build_inventory(manager, SimulatedHost(fixtures["mi300x-8"], faults=["amd-smi-garbage"]))
    assert "`amd-smi static --json` printed output that is not JSON" in garbage.problems[0].message


def test_ecc_reason_is_fatal_and_named(manager, fixtures):
    inventory = build_inventory(manager, SimulatedHost(fixtures["mi355x-8"], faults=["gpu2-io-error"]))
    report = next(h for h in inventory.family("amd").health if h.state == "unhealthy")
    assert [r.code for r in report.reasons] == ["amdsmi-io"] and report.reasons[0].fatal
    assert "AMDSMI_STATUS_IO" in report.reasons[0].message


def test_xgmi_full_mesh_and_hive_domain(manager, fixtures):
    family = build_inventory(manager, SimulatedHost(fixtures["mi355x-8"])).family("amd")
    pairs = {frozenset((ln.a, ln.b)) for ln in family.topology.links}
    ids = [d.id for d in family.devices]
    assert all(ln.kind == "xgmi" for ln in family.topology.links)
    assert pairs == {frozenset((a, b)) for i, a in enumerate(ids) for b in ids[i + 1:]}
    (domain,) = family.topology.domains
    assert (domain.kind, domain.id, domain.size, domain.members) == ("xgmi-hive", "mi355x-node-xgmi-0x8c3c7e2a1d5b4f60",
                                                                    8, ids)
    assert {a.numa_node for a in family.topology.affinities} == {0, 1}


def test_mi210_pair_is_pcie_only_without_partitions(manager, fixtures):
    family = build_inventory(manager, SimulatedHost(fixtures["mi210-pair"])).family("amd")
    assert [ln.kind for ln in family.topology.links] == ["pcie"] and family.topology.domains == []
    assert "compute_partition" not in family.devices[0].attributes


def test_each_gpu_is_on_its_numa_node_in_the_topology_too(manager, fixtures):
    # The amd-smi path's topology call answers no NUMA node: the affinity is the node discovery read.
    for name in ("mi300x-8", "mi210-pair"):
        family = build_inventory(manager, SimulatedHost(fixtures[name])).family("amd")
        placed = {d.id: d.numa_node for d in family.devices if d.numa_node is not None}
        assert placed and {a.device: a.numa_node for a in family.topology.affinities} == placed


def test_metrics_use_standard_units(manager, fixtures):
    metrics = build_inventory(manager, SimulatedHost(fixtures["mi300x-8"])).family("amd").metrics
    first = {m.name: m.value for m in metrics if m.device == fixtures["mi300x-8"].expected.device_ids[0]}
    assert first["power"] == 131 and first["temperature"] == 38 and first["memory_total"] == 196592 * 2**20
    assert first["ecc_errors_uncorrected"] == 0


def test_zero_hardware_real_host_reports_nothing_and_no_problem(manager):
    inventory = build_inventory(manager, RealHost(env={"PATH": "/nonexistent"}))
    assert inventory.family("amd") is None
    assert [p for p in inventory.problems if p.plugin == "amd"] == []


def test_real_adapter_without_amdsmi_is_library_unavailable():
    with pytest.raises(LibraryUnavailable, match="amdsmi"):
        amdsmi_adapter.open_real()


def test_rocr_visible_devices_alone_is_refused_with_the_fix(manager, fixtures):
    data = fixtures["mi355x-8"].model_dump(mode="json", by_alias=True)
    data["host"]["env"] = {"ROCR_VISIBLE_DEVICES": "0,1"}
    inventory = build_inventory(manager, SimulatedHost(parse_fixture(data, "test")))
    (problem,) = [p for p in inventory.problems if p.plugin == "amd"]
    assert "ROCR_VISIBLE_DEVICES='0,1' is set but HIP_VISIBLE_DEVICES is not" in problem.message
    assert "set HIP_VISIBLE_DEVICES='0,1'" in problem.message
    data["host"]["env"]["HIP_VISIBLE_DEVICES"] = "0,1"  # both set: HIP wins, as in Ray
    assert build_inventory(manager, SimulatedHost(parse_fixture(data, "test"))).family("amd") is not None


def test_simulated_amdsmi_answers_like_the_library(fixtures):
    lib = amdsmi_adapter.open_simulated(fixtures["mi210-pair"].host.libraries["amdsmi"])
    handles = lib.amdsmi_get_processor_handles()
    assert lib.amdsmi_get_gpu_id(handles[0]) == 0x740F
    with pytest.raises(lib.AmdSmiLibraryException) as info:
        lib.amdsmi_get_gpu_compute_partition(handles[0])
    # The binding's err_info is the status name and its text, as amdsmi_exception.py writes it.
    assert info.value.get_error_code() == 2
    assert info.value.get_error_info() == "AMDSMI_STATUS_NOT_SUPPORTED - Feature not supported"
    assert lib.amdsmi_topo_get_link_type(handles[0], handles[1]) == {"hops": 2, "type": 1}
    lib.amdsmi_shut_down()
    with pytest.raises(lib.AmdSmiLibraryException, match="NOT_INIT"):
        lib.amdsmi_get_processor_handles()
    with pytest.raises(LibraryUnavailable, match="INIT_ERROR"):
        amdsmi_adapter.open_simulated({"init_error": 18, "gpus": {}})


def test_catalog_validates_and_agrees_with_rays_table():
    from ray._private.accelerators.amd_gpu import amd_product_dict

    catalog = load_catalog(PLUGIN_DIR / "skus.yaml")
    for sku in catalog.skus:
        for pci in sku.match.pci_device_ids:
            if pci in amd_product_dict:
                assert sku.accelerator_type == amd_product_dict[pci], sku.id


def test_fixture_for_sku_rewrites_library_and_cli_answers(manager, fixtures):
    sku = SkuRecord(id="mi400x", marketing_name="AMD Instinct MI400X", accelerator_type="AMD-Instinct-MI400X",
                    memory_mib=442368, match=SkuMatch(pci_device_ids=["0x75b0"], product_names=["AMD Instinct MI400X"]))
    for name in ("mi300x-8", "mi355x-8"):
        data = plugin.rayaccel_fixture_for_sku(fixtures[name].model_dump(mode="json", by_alias=True), sku)
        family = build_inventory(manager, SimulatedHost(parse_fixture(data, name))).family("amd")
        assert {(d.product_name, d.pci_device_id, d.memory_mib) for d in family.devices} == {
            ("AMD Instinct MI400X", "0x75b0", 442368)}
        assert family.accelerator_type == "AMD-Instinct-MI400X"  # derived from the product name: not yet catalogued


def test_cloud_hints(rayaccel_kit):
    hint = rayaccel_kit.cloud_hint("azure", "Standard_ND96isr_MI300X_v5")
    assert (hint.count, hint.accelerator_type) == (8, "AMD-Instinct-MI300X-OAM")
    assert rayaccel_kit.cloud_hint("oci", "BM.GPU.MI300X.8").count == 8
    assert rayaccel_kit.cloud_hint("aws", "p5.48xlarge") is None


def test_rccl_transport_is_a_real_ray_transport_manager():
    from ray.experimental import TensorTransportManager
    from ray.experimental.rdt.collective_tensor_transport import NCCLTensorTransport
    from ray.experimental.rdt.util import register_tensor_transport, transport_manager_info

    from rayaccel.ray.transports import measured_class  # the wrapped class (rayaccel.ray.transports measures)

    specs = {s.name: s for s in plugin.rayaccel_transports()}
    rccl = pkgutil.resolve_name(specs["RCCL"].manager_class)
    assert issubclass(rccl, TensorTransportManager) and issubclass(rccl, NCCLTensorTransport)
    assert rccl().tensor_transport_backend() == "NCCL" and not rccl.is_one_sided()
    assert pkgutil.resolve_name(specs["NCCL"].manager_class) is NCCLTensorTransport and specs["NCCL"].builtin_in_ray
    # rayaccel.ray.init registers every declared transport in its process: an earlier test may have done so.
    earlier = transport_manager_info.pop("RCCL", None)
    assert earlier is None or measured_class(earlier.transport_manager_class) is rccl  # registered measured
    try:
        register_tensor_transport("RCCL", ["cuda"], rccl, object)
        assert transport_manager_info["RCCL"].transport_manager_class is rccl
    finally:
        transport_manager_info.pop("RCCL", None)
        if earlier is not None:
            transport_manager_info["RCCL"] = earlier


def test_each_hook_runs_only_the_amd_smi_commands_it_needs(fixtures):
    ran: list[str] = []

    class Recording(SimulatedHost):
        def run(self, argv, timeout=5.0):  # type: ignore[no-untyped-def]
            ran.append(argv[1])
            return super().run(argv, timeout)

    host = Recording(fixtures["mi300x-8"])
    devices = plugin.rayaccel_discover(host)
    assert ran == ["list", "static", "version"]
    ran.clear()
    plugin.rayaccel_health(host, devices)
    plugin.rayaccel_metrics(host, devices)
    assert ran == ["list", "metric", "list", "metric"]
    ran.clear()
    plugin.rayaccel_topology(host, devices)
    assert ran == ["list", "topology"]


def test_only_the_topology_hook_asks_amdsmi_for_links(fixtures, monkeypatch):
    """The library's links are a GPU x GPU table (64 x 63 queries on a CPX machine): asked by the hook that
    reports them, as `amd-smi topology` runs only for it, not by every discovery and health poll."""
    host = SimulatedHost(fixtures["mi300x-cpx-nps4"])
    lib = host.library(amdsmi_adapter.AMDSMI)
    asked: list[object] = []
    answer = lib.amdsmi_topo_get_link_type
    monkeypatch.setattr(lib, "amdsmi_topo_get_link_type", lambda src, dst: asked.append(src) or answer(src, dst))
    devices = plugin.rayaccel_discover(host)
    plugin.rayaccel_health(host, devices)
    plugin.rayaccel_metrics(host, devices)
    assert devices and asked == []
    plugin.rayaccel_topology(host, devices)
    assert len(asked) == 64 * 63


def test_unresponsive_gpu_keeps_an_id_and_the_nodes_model(manager, fixtures):
    family = build_inventory(manager, SimulatedHost(fixtures["mi355x-8"], faults=["gpu4-unresponsive"])).family("amd")
    gpu4 = family.devices[4]
    assert (gpu4.id, gpu4.product_name, gpu4.sku) == ("pci-0000:85:00.0", "AMD Instinct MI355X", "mi355x")
    assert gpu4.attributes["product_inferred"] is True and family.sku_known


def test_umc_ras_disabled_is_reported_but_keeps_the_gpu(manager, fixtures):
    data = fixtures["mi210-pair"].model_dump(mode="json", by_alias=True)
    data["host"]["libraries"]["amdsmi"]["gpus"]["0"]["ras_block_features"][0]["status"] = "DISABLED"
    family = build_inventory(manager, SimulatedHost(parse_fixture(data, "no-ras"))).family("amd")
    report = family.health[0]
    assert report.state == "healthy" and [r.code for r in report.reasons] == ["ras-umc-disabled"]


def test_units_are_hip_device_ids_when_amdsmi_reports_them(manager, fixtures):
    data = fixtures["mi355x-8"].model_dump(mode="json", by_alias=True)
    for key, gpu in data["host"]["libraries"]["amdsmi"]["gpus"].items():
        gpu["enumeration_info"]["hip_id"] = 7 - int(key)  # HIP enumerates in the opposite order
    family = build_inventory(manager, SimulatedHost(parse_fixture(data, "reordered"))).family("amd")
    assert [d.units for d in family.devices] == [[str(7 - i)] for i in range(8)]
    lost = build_inventory(manager, SimulatedHost(fixtures["mi355x-8"], faults=["gpu6-lost"])).family("amd")
    assert lost.schedulable_units == [str(i) for i in range(7)]


def test_failing_metric_command_makes_health_unknown_not_healthy(manager, fixtures):
    data = fixtures["mi300x-8"].model_dump(mode="json", by_alias=True)
    data["host"]["commands"]["amd-smi metric --json"] = {"stdout": "", "stderr": "ERROR: amdgpu not ready\n",
                                                         "returncode": 1}
    inventory = build_inventory(manager, SimulatedHost(parse_fixture(data, "no-metric")))
    family = inventory.family("amd")
    assert {h.state for h in family.health} == {"unknown"}
    assert inventory.resources["GPU"] == 8  # unknown is still scheduled
