"""Every NVIDIA fixture gives its expected inventory; faults give their expected health and recover."""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
from functools import cache
from pathlib import Path

import pytest

from rayaccel import LibraryUnavailable, NodeInventory, RealHost
from rayaccel.testing import (
    Fixture,
    PluginManager,
    SimulatedHost,
    build_inventory,
    fixture_differences,
    load_fixture as read_fixture,
    merge_patch,
    parse_fixture,
    plugin_manager,
    plugin_suite,
)
from rayaccel_nvidia import plugin
from rayaccel_nvidia.nvml import NVML

# Parsing a fixture is the slow part of these tests; fixtures are immutable, so share them.
load_fixture = cache(read_fixture)

FIXTURES = sorted((Path(plugin.__file__).parent / "fixtures").glob("*.yaml"))


@pytest.fixture
def manager() -> PluginManager:
    return plugin_manager(plugin, "nvidia")


def inventory(manager: PluginManager, fixture: Fixture, faults: tuple[str, ...] = ()) -> NodeInventory:
    return build_inventory(manager, SimulatedHost(fixture, faults=faults))


def test_the_plugin_ships_the_fixtures_of_the_issues() -> None:
    assert {p.stem for p in FIXTURES} == {"dgx-h100", "hgx-b200", "gb200-nvl72-tray", "gb200-nvl72-tray-08",
                                          "h100-mig", "h200-vm", "l4-single", "a100-pcie-pair", "a100-mig",
                                          "a100-80gb-mig-mixed", "a100-pcie-nvlink-bridge"}


# Every fixture gives its expected inventory with no problem, every fault its expected state and recovers, and the
# rest of what every plugin is held to (rayaccel.testing.plugin_suite; conftest.py makes NVML give up quickly).
TestNvidiaPlugin = plugin_suite(plugin)


def test_every_fixture_state_counts_in_the_lifetime_ecc_counter_what_the_gpu_counted() -> None:
    """NVML's aggregate ECC counter counts for the GPU's lifetime, its volatile one since the driver loaded
    (nvmlEccCounterType_t), and a remapped row is an error the lifetime counter counted: a state, healthy or under a
    fault, whose lifetime count is below either is one no GPU shows (short of an administrator clearing the
    aggregate counters with ``nvidia-smi -p 1``). Held-out round 9 found ecc-uncorrectable at volatile 2, aggregate 0.
    """
    wrong = []
    for path in FIXTURES:
        fixture = load_fixture(path)
        for fault in [None, *fixture.faults]:
            state = fixture.host.model_dump(mode="json")
            state = merge_patch(state, fault.patch) if fault else state
            for index, gpu in ((state.get("libraries") or {}).get("nvml") or {}).get("devices", {}).items():
                ecc, rows = gpu.get("ecc") or {}, gpu.get("remapped_rows") or [0, 0, 0, 0]
                lifetime, since_boot = ecc.get("aggregate") or {}, ecc.get("volatile") or {}
                for kind, remapped in (("corrected", rows[0]), ("uncorrected", rows[1])):
                    if lifetime.get(kind, 0) < max(since_boot.get(kind, 0), remapped):
                        wrong.append(f"{path.stem} {fault.name if fault else 'healthy'} GPU {index}: {kind} aggregate "
                                     f"{lifetime.get(kind, 0)}, volatile {since_boot.get(kind, 0)}, rows {remapped}")
    assert not wrong


def test_dgx_h100_every_pair_of_gpus_is_nvlinked_through_the_switches(manager: PluginManager) -> None:
    result = inventory(manager, load_fixture(FIXTURES[[p.stem for p in FIXTURES].index("dgx-h100")]))
    family = result.family("nvidia")
    assert family is not None
    pairs = {frozenset((ln.a, ln.b)) for ln in family.topology.links if ln.kind == "nvlink"}
    ids = [d.id for d in family.devices]
    assert pairs == {frozenset(p) for p in itertools.combinations(ids, 2)}
    assert {(ln.lanes, ln.bandwidth_gbps) for ln in family.topology.links} == {(18, 450.0)}
    assert all(d.memory_mib == 81559 for d in family.devices)
    assert result.resources == {"GPU": 8.0, "accelerator_type:H100": 1.0}
    assert result.labels["ray.io/accelerator-type"] == "H100"


def test_gb200_tray_reports_its_nvlink_clique_as_domain_and_label(manager: PluginManager,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    fixture = load_fixture(next(p for p in FIXTURES if p.stem == "gb200-nvl72-tray"))
    monkeypatch.setenv("RAYACCEL_NVIDIA_CLIQUE_SIZE", "72")
    result = inventory(manager, fixture)
    family = result.family("nvidia")
    assert family is not None
    (domain,) = family.topology.domains
    assert (domain.kind, domain.size, len(domain.members)) == ("nvlink-clique", 72, 4)
    assert result.labels["nvidia.com/gpu.clique"] == "5f2c1a9e-7d3b-4e8a-9c61-0b7d2e4f8a13.32766"
    assert result.labels["rayaccel.io/scale-up-domain-size"] == "72"


def test_a100_mig_reports_its_instances_as_partitions(manager: PluginManager) -> None:
    family = inventory(manager, load_fixture(next(p for p in FIXTURES if p.stem == "a100-mig"))).family("nvidia")
    assert family is not None
    (gpu,) = family.devices
    assert [(p.kind, p.profile) for p in gpu.partitions] == [("mig", "3g.20gb"), ("mig", "2g.10gb"), ("mig", "2g.10gb")]
    assert gpu.attributes["mig_mode"] == "enabled"
    # Slices: 3 + 2 + 2 of the A100's 7 compute, 4 + 2 + 2 of its 8 memory slices; GPU instance ids from NVML.
    assert [(p.compute_slices, p.memory_slices) for p in gpu.partitions] == [(3, 4), (2, 2), (2, 2)]
    assert gpu.partition_capacity is not None
    assert (gpu.partition_capacity.compute_slices, gpu.partition_capacity.memory_slices) == (7, 8)
    assert [p.attributes["gpu_instance_id"] for p in gpu.partitions] == [2, 3, 4]
    assert all(p.id.startswith("MIG-") for p in gpu.partitions)
    # A GPU in MIG mode is offered only as its instances, never whole.
    assert family.schedulable_units == []
    assert family.partition_units == {"GPU_MIG_3g.20gb": [gpu.partitions[0].id],
                                      "GPU_MIG_2g.10gb": [gpu.partitions[1].id, gpu.partitions[2].id]}


def test_a100_pcie_pair_is_linked_by_pcie_only(manager: PluginManager) -> None:
    family = inventory(manager, load_fixture(next(p for p in FIXTURES if p.stem == "a100-pcie-pair"))).family("nvidia")
    assert family is not None
    assert [ln.kind for ln in family.topology.links] == ["pcie"]
    assert family.labels["rayaccel.io/interconnect"] == "pcie"


def test_a100_pcie_pair_bridged_is_one_point_to_point_nvlink_of_twelve_lanes(manager: PluginManager) -> None:
    # Each GPU reports its 12 links ending at the other (no NVSwitch): one link, 12 lanes of 25 GB/s one way.
    family = inventory(manager, load_fixture(next(p for p in FIXTURES if p.stem == "a100-pcie-nvlink-bridge"))
                       ).family("nvidia")
    assert family is not None
    assert [(ln.kind, ln.lanes, ln.bandwidth_gbps) for ln in family.topology.links] == [("nvlink", 12, 300.0)]
    assert family.labels["rayaccel.io/interconnect"] == "nvlink"


def test_faults_switched_on_and_off_while_the_host_is_in_use_recover(manager: PluginManager, tmp_path: Path) -> None:
    fixture = load_fixture(next(p for p in FIXTURES if p.stem == "dgx-h100"))
    fault_file = tmp_path / "faults"
    host = SimulatedHost(fixture, fault_file=str(fault_file))
    assert build_inventory(manager, host).resources["GPU"] == 8.0
    for fault in ("xid-79", "ecc-uncorrectable", "gpu-lost"):
        fault_file.write_text(fault + "\n")
        assert build_inventory(manager, host).resources["GPU"] == 7.0, fault
        fault_file.write_text("")
        healed = build_inventory(manager, host)
        assert fixture_differences(healed, fixture) == [], fault


def test_an_xid_stays_until_nvml_is_reinitialised(manager: PluginManager) -> None:
    # The event is delivered once; the device must not look healthy on the next health check.
    fixture = load_fixture(next(p for p in FIXTURES if p.stem == "dgx-h100"))
    host = SimulatedHost(fixture, faults=("xid-79",))
    first = build_inventory(manager, host)
    second = build_inventory(manager, host)
    assert first.resources["GPU"] == second.resources["GPU"] == 7.0


def test_on_this_machine_without_a_gpu_the_plugin_reports_nothing_and_no_problem(manager: PluginManager) -> None:
    result = build_inventory(manager, RealHost())
    try:
        gpus = RealHost().library(NVML).nvmlDeviceGetCount()
    except LibraryUnavailable:
        gpus = 0  # no driver here: the plugin must see nothing
    family = result.family("nvidia")
    assert (len(family.devices) if family else 0) == gpus
    assert [p for p in result.problems if p.plugin == "nvidia"] == []


def test_inspect_cli_shows_dgx_h100() -> None:
    env = {**os.environ, "RAYACCEL_DISABLE": "amd,tpu,neuron,gaudi"}
    result = subprocess.run([sys.executable, "-m", "rayaccel", "inspect", "--simulate", "nvidia/dgx-h100", "--json"],
                            capture_output=True, text=True, env=env, timeout=60, check=False)
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["resources"] == {"GPU": 8.0, "accelerator_type:H100": 1.0}
    assert data["labels"]["ray.io/accelerator-type"] == "H100"
    assert len(data["devices"]) == 8 and all(d["memory_mib"] for d in data["devices"])
    nvlinked = {frozenset((ln["a"], ln["b"])) for ln in data["topology"]["links"] if ln["kind"] == "nvlink"}
    assert len(nvlinked) == 28


def test_a_lost_gpu_keeps_the_nodes_model_and_is_marked_as_inferred(manager: PluginManager) -> None:
    fixture = load_fixture(next(p for p in FIXTURES if p.stem == "dgx-h100"))
    family = inventory(manager, fixture, ("gpu-lost",)).family("nvidia")
    assert family is not None
    lost = next(d for d in family.devices if d.id == "nvml-index-5")
    assert lost.attributes["model_inferred"] is True and lost.sku == "h100-sxm5-80gb"
    assert family.labels["rayaccel.io/sku-known"] == "true"
    report = next(h for h in family.health if h.device == lost.id)
    assert [(r.code, r.fatal) for r in report.reasons] == [("gpu-lost", True)]


def test_a_driver_that_hangs_after_discovery_leaves_gpus_unknown_not_unhealthy() -> None:
    fixture = load_fixture(next(p for p in FIXTURES if p.stem == "l4-single"))
    devices = plugin.rayaccel_discover(SimulatedHost(fixture))
    data = fixture.model_dump(mode="json", by_alias=True)
    data["host"]["libraries"]["nvml"]["hang"] = True  # the driver wedges after the node came up
    hung = SimulatedHost(parse_fixture(data, "hung l4"))
    reports = plugin.rayaccel_health(hung, devices)
    assert [(r.state, [x.code for x in r.reasons]) for r in reports] == [("unknown", ["nvml-timeout"])]


def test_metrics_in_standard_units_and_nvlink_rates_from_the_second_sample_on() -> None:
    host = SimulatedHost(load_fixture(next(p for p in FIXTURES if p.stem == "dgx-h100")))
    devices = plugin.rayaccel_discover(host)
    first = {(m.device, m.name): m for m in plugin.rayaccel_metrics(host, devices)}
    second = {(m.device, m.name): m for m in plugin.rayaccel_metrics(host, devices)}
    gpu0 = devices[0].id
    assert first[(gpu0, "power")].value == 70.0  # NVML's 70000 mW
    assert first[(gpu0, "memory_total")].value == 81559 * 2**20
    assert (gpu0, "interconnect_tx") not in first  # a rate needs two counter samples
    # The counters advance as recorded on the busy machine: 18 links x 16,000,000 KiB/s, in bytes per second.
    assert abs(second[(gpu0, "interconnect_tx")].value - 18 * 16_000_000 * 1024) <= 0.01 * 18 * 16_000_000 * 1024
    assert second[(gpu0, "interconnect_tx")].unit == "bytes_per_second"
    l4 = SimulatedHost(load_fixture(next(p for p in FIXTURES if p.stem == "l4-single")))
    l4_devices = plugin.rayaccel_discover(l4)
    plugin.rayaccel_metrics(l4, l4_devices)
    assert not [m for m in plugin.rayaccel_metrics(l4, l4_devices) if m.name.startswith("interconnect")]


# -- Issue 27: per-link NVLink bandwidth follows the architecture, not the version enum alone ------------------

def _nvlink_gbps(family) -> set[float | None]:  # type: ignore[no-untyped-def]
    return {link.bandwidth_gbps for link in family.topology.links if link.kind == "nvlink"}


def test_h100_answering_nvlink_5_keeps_hopper_bandwidth_and_says_so(manager: PluginManager) -> None:
    fixture = load_fixture(next(p for p in FIXTURES if p.stem == "dgx-h100"))
    healthy = inventory(manager, fixture).family("nvidia")
    assert healthy is not None and _nvlink_gbps(healthy) == {18 * 25.0}
    result = inventory(manager, fixture, ("nvlink-version-5-0-on-hopper",))
    family = result.family("nvidia")
    assert family is not None
    # 18 links x Hopper's 25 GB/s, not 18 x 50 as NVML_NVLINK_VERSION_5_0 alone would say.
    assert _nvlink_gbps(family) == {18 * 25.0}
    mismatches = [p for p in result.problems if p.code == "nvlink-version-mismatch"]
    assert len(mismatches) == 8 and {p.severity for p in mismatches} == {"warning"}
    first = next(p for p in mismatches if "GPU 0 " in p.message)
    for part in (family.devices[0].id, "NVML_NVLINK_VERSION_5_0 (7)", "hopper", "NVML_NVLINK_VERSION_4_0",
                 "25 GB/s", "would give 50 GB/s"):
        assert part in first.message


def test_a100_answering_nvlink_3_1_is_reported_with_the_same_bandwidth(manager: PluginManager) -> None:
    fixture = load_fixture(next(p for p in FIXTURES if p.stem == "a100-mig"))
    result = inventory(manager, fixture, ("nvlink-version-3-1-on-ampere",))
    (problem,) = [p for p in result.problems if p.code == "nvlink-version-mismatch"]
    assert problem.severity == "info"
    for part in ("GPU 0", "NVIDIA A100-SXM4-40GB", "NVML_NVLINK_VERSION_3_1 (5)", "ampere",
                 "NVML_NVLINK_VERSION_3_0", "25 GB/s"):
        assert part in problem.message
    assert inventory(manager, fixture).problems == []


def test_nvlink_bandwidth_without_a_known_architecture_follows_the_version() -> None:
    from types import SimpleNamespace

    from rayaccel import Device
    from rayaccel_nvidia import topology
    from rayaccel_nvidia.nvml import CONSTANTS

    nvml = SimpleNamespace(**CONSTANTS)  # the nvmlNvlinkVersion_t values, as the bindings carry them
    pascal = Device(index=0, id="GPU-p", product_name="Tesla P100-SXM2-16GB", architecture=None)
    assert topology.per_link_gbps(nvml, pascal, [nvml.NVML_NVLINK_VERSION_1_0]) == 20.0
    blackwell = Device(index=0, id="GPU-b", product_name="NVIDIA B200", architecture="blackwell")
    assert topology.per_link_gbps(nvml, blackwell, [None]) == 50.0  # no version readable: the architecture's


@pytest.mark.parametrize("setting", ["five", "0", "-1", "nan", "inf"])
def test_a_malformed_nvml_timeout_is_reported_and_the_default_bounds_the_calls(setting: str,
                                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAYACCEL_NVIDIA_NVML_TIMEOUT", setting)
    result = build_inventory(plugin_manager(plugin, "nvidia"),
                             SimulatedHost(load_fixture(next(p for p in FIXTURES if p.stem == "l4-single"))))
    warnings = [p for p in result.problems if p.code == "malformed-setting"]
    assert warnings and all(p.severity == "warning" for p in warnings)
    assert f"RAYACCEL_NVIDIA_NVML_TIMEOUT='{setting}' is not a positive number of seconds" in warnings[0].message
    assert "default 5s" in warnings[0].message
    family = result.family("nvidia")
    assert family is not None and len(family.devices) == 1  # the node is still read, with the default bound


@pytest.mark.parametrize("setting", ["seventy-two", "0", "-4", "7.5"])
def test_a_malformed_clique_size_is_reported_and_the_clique_keeps_the_gpus_it_has(
        setting: str, manager: PluginManager, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAYACCEL_NVIDIA_CLIQUE_SIZE", setting)
    result = build_inventory(manager, SimulatedHost(load_fixture(next(p for p in FIXTURES
                                                                      if p.stem == "gb200-nvl72-tray"))))
    warnings = [p for p in result.problems if p.code == "malformed-setting"]
    assert warnings and all(p.severity == "warning" for p in warnings)
    assert f"RAYACCEL_NVIDIA_CLIQUE_SIZE='{setting}' is not a positive whole number" in warnings[0].message
    family = result.family("nvidia")
    assert family is not None
    (domain,) = [d for d in family.topology.domains if d.kind == "nvlink-clique"]
    assert domain.size == len(domain.members) == 4  # what this tray sees, not a size nobody set
