"""Real-hardware semantics (issue 15): what a real H100, B200 or GB200 answers, not what was assumed.

Each test fails on the code before the fix: NVLink versions as ``nvmlNvlinkVersion_t`` enums, per-link
throughput counters (``scopeId``), an empty MIG slot answered ``NVML_ERROR_INVALID_ARGUMENT``, GPUs
without UUIDs, and an NVL72 clique that spans trays.
"""

from __future__ import annotations

import copy
import time
from functools import cache
from pathlib import Path
from typing import Any

import pynvml
import pytest

from rayaccel import NodeInventory
from rayaccel.ray.placement import find_scale_up_domain, scale_up_domains
from rayaccel.testing import (
    ID_FALLBACK,
    PluginManager,
    SimulatedHost,
    build_inventory,
    load_fixture as read_fixture,
    plugin_manager,
)
from rayaccel_nvidia import metrics, nvml as adapter, plugin, topology

load_fixture = cache(read_fixture)
FIXTURES = Path(plugin.__file__).parent / "fixtures"


@pytest.fixture
def manager() -> PluginManager:
    return plugin_manager(plugin, "nvidia")


def inventory(manager: PluginManager, name: str, faults: tuple[str, ...] = ()) -> NodeInventory:
    return build_inventory(manager, SimulatedHost(load_fixture(FIXTURES / f"{name}.yaml"), faults=faults))


def nvml_data(name: str) -> dict[str, Any]:
    data = load_fixture(FIXTURES / f"{name}.yaml").model_dump(mode="json", by_alias=True)
    return copy.deepcopy(data["host"]["libraries"]["nvml"])


# NVLink version ------------------------------------------------------------------------------------

def test_the_bandwidth_table_is_keyed_by_the_bindings_nvlink_version_enum() -> None:
    table = topology.nvlink_gbps(pynvml)
    assert table[pynvml.NVML_NVLINK_VERSION_3_0] == 25.0  # A100: 12 links, 600 GB/s both ways
    assert table[pynvml.NVML_NVLINK_VERSION_4_0] == 25.0  # H100: 18 links, 900 GB/s both ways
    assert table[pynvml.NVML_NVLINK_VERSION_5_0] == 50.0  # B200: 18 links, 1.8 TB/s both ways
    assert pynvml.NVML_NVLINK_VERSION_INVALID not in table
    # The simulated adapter's constants are the bindings' own.
    assert topology.nvlink_gbps(adapter.open_simulated({})) == table


@pytest.mark.parametrize(("name", "version", "gbps"), [
    ("dgx-h100", pynvml.NVML_NVLINK_VERSION_4_0, 18 * 25.0),
    ("hgx-b200", pynvml.NVML_NVLINK_VERSION_5_0, 18 * 50.0),
    ("gb200-nvl72-tray", pynvml.NVML_NVLINK_VERSION_5_0, 18 * 50.0),
])
def test_fixtures_store_the_enum_and_links_get_their_real_bandwidth(manager: PluginManager, name: str, version: int,
                                                                     gbps: float) -> None:
    devices = nvml_data(name)["devices"]
    assert {link["version"] for d in devices.values() for link in d["nvlink"].values()} == {version}
    family = inventory(manager, name).family("nvidia")
    assert family is not None and family.topology.links
    assert {ln.bandwidth_gbps for ln in family.topology.links} == {gbps}


# Per-link throughput counters -------------------------------------------------------------------------

def test_nvlink_throughput_adds_up_every_link_by_scope_id() -> None:
    data = nvml_data("hgx-b200")  # counters recorded once: they stand still
    nvml = adapter.open_simulated(data)
    handle = nvml.nvmlDeviceGetHandleByIndex(0)
    recorded = data["devices"]["0"]["field_values"]
    _, tx, rx = metrics.nvlink_counters(nvml, handle) or (0, 0, 0)
    assert len(recorded[str(pynvml.NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX)]) == 18
    assert tx == sum(recorded[str(pynvml.NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX)].values())
    assert rx == sum(recorded[str(pynvml.NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX)].values())


def test_traffic_on_a_link_other_than_0_shows_in_the_rate() -> None:
    data = nvml_data("hgx-b200")
    nvml = adapter.open_simulated(data)
    devices = plugin.rayaccel_discover(SimulatedHost(load_fixture(FIXTURES / "hgx-b200.yaml")))
    metrics.metrics(nvml, devices)  # first sample
    first_us, deadline = time.time_ns() // 1000, time.monotonic() + 5
    while time.time_ns() // 1000 <= first_us and time.monotonic() < deadline:
        pass  # the next sample must carry a later NVML timestamp
    tx_field = data["devices"]["0"]["field_values"][str(pynvml.NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX)]
    tx_field["7"] += 1024 * 1024  # 1 GiB sent over link 7 only
    second = {(m.device, m.name): m.value for m in metrics.metrics(nvml, devices)}
    assert second[(devices[0].id, "interconnect_tx")] > 0
    assert second[(devices[0].id, "interconnect_rx")] == 0.0
    assert second[(devices[1].id, "interconnect_tx")] == 0.0


def test_a_counter_recorded_on_a_busy_node_advances_at_its_recorded_rate() -> None:
    data = nvml_data("dgx-h100")  # each counter read twice, one second apart, during an all-reduce
    nvml = adapter.open_simulated(data)
    handle = nvml.nvmlDeviceGetHandleByIndex(2)
    tx = pynvml.NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX
    first, = nvml.nvmlDeviceGetFieldValues(handle, [(tx, 5)])
    deadline = time.monotonic() + 5
    while time.time_ns() // 1000 < first.timestamp + 10_000 and time.monotonic() < deadline:
        pass  # 10 ms of NVML's clock
    second, = nvml.nvmlDeviceGetFieldValues(handle, [(tx, 5)])
    recorded = data["devices"]["2"]["field_values"][str(tx)]["5"]
    per_us = (recorded[1]["value"] - recorded[0]["value"]) / (recorded[1]["timestamp"] - recorded[0]["timestamp"])
    advanced = second.value.ullVal - first.value.ullVal
    assert first.value.ullVal >= recorded[0]["value"]
    assert abs(advanced - per_us * (second.timestamp - first.timestamp)) <= 1  # KiB, truncated


def test_a_link_the_gpu_lacks_answers_its_own_error_code() -> None:
    nvml = adapter.open_simulated(nvml_data("dgx-h100"))
    handle = nvml.nvmlDeviceGetHandleByIndex(0)
    tx = pynvml.NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX
    inside, outside = nvml.nvmlDeviceGetFieldValues(handle, [(tx, 17), (tx, 18)])
    assert (inside.scopeId, inside.nvmlReturn) == (17, pynvml.NVML_SUCCESS)
    assert outside.nvmlReturn == pynvml.NVML_ERROR_INVALID_ARGUMENT


# MIG --------------------------------------------------------------------------------------------------

def test_h100_mig_an_empty_slot_answered_invalid_argument_is_skipped(manager: PluginManager) -> None:
    nvml = adapter.open_simulated(nvml_data("h100-mig"))
    gpu = nvml.nvmlDeviceGetHandleByIndex(0)
    with pytest.raises(pynvml.NVMLError) as raised:
        nvml.nvmlDeviceGetMigDeviceHandleByIndex(gpu, 2)
    assert raised.value.value == pynvml.NVML_ERROR_INVALID_ARGUMENT
    result = inventory(manager, "h100-mig")
    family = result.family("nvidia")
    assert family is not None and result.problems == []
    (device,) = family.devices
    assert [p.profile for p in device.partitions] == ["2c.3g.40gb", "2g.20gb", "1g.10gb", "1g.10gb.me", "1c.3g.40gb"]
    assert [h.state for h in family.health] == ["healthy"]
    assert result.resources == {"accelerator_type:H100": 1.0, "GPU_MIG_2c.3g.40gb": 1.0, "GPU_MIG_1c.3g.40gb": 1.0,
                                "GPU_MIG_2g.20gb": 1.0, "GPU_MIG_1g.10gb": 1.0, "GPU_MIG_1g.10gb.me": 1.0}


def test_h100_mig_compute_instances_take_their_own_slices_of_their_gpu_instance(manager: PluginManager) -> None:
    # GPU instance 2 (3g.40gb) split into compute instances 2c.3g.40gb and 1c.3g.40gb: each runs on its own share
    # of the instance's 3 slices and both see its memory, so the GPU's 7 slices hold every MIG device at once.
    family = inventory(manager, "h100-mig").family("nvidia")
    assert family is not None
    (device,) = family.devices
    sizes = {p.profile: (p.compute_slices, p.memory_slices, p.memory_mib, p.shared_memory,
                         p.attributes["gpu_instance_id"], p.attributes["compute_instance_id"])
             for p in device.partitions}
    assert sizes["2c.3g.40gb"] == (2, None, 40320, "gpu-instance-2", 2, 0)
    assert sizes["1c.3g.40gb"] == (1, None, 40320, "gpu-instance-2", 2, 1)
    assert sizes["2g.20gb"][3] is None  # a GPU instance with one compute instance holds its memory alone
    assert sum(p.compute_slices or 0 for p in device.partitions) == 7
    assert sum(device.partition_memory_mib()) == 40320 + 20096 + 9984 * 2  # the shared memory counted once


# GPUs without UUIDs -----------------------------------------------------------------------------------

def test_gpus_without_uuids_are_counted_under_their_pci_bus_ids_with_a_warning(manager: PluginManager) -> None:
    result = inventory(manager, "a100-pcie-pair", ("uuid-not-supported",))
    family = result.family("nvidia")
    assert family is not None
    assert [d.id for d in family.devices] == ["nvml-pci-00000000:3b:00.0", "nvml-pci-00000000:d8:00.0"]
    assert all(ID_FALLBACK in d.attributes and d.sku == "a100-pcie-40gb" for d in family.devices)
    assert [h.state for h in family.health] == ["healthy", "healthy"]
    assert result.resources == {"GPU": 2.0, "accelerator_type:A100": 1.0}  # Ray counts 2 as well
    (warning,) = result.problems  # one per node, naming how many devices
    assert (warning.code, warning.severity) == ("fallback-device-id", "warning")
    assert "and 1 more devices" in warning.message and "NVML_ERROR_NOT_SUPPORTED" in warning.message
    # The ids are stable: a second look gives the same ones.
    again = inventory(manager, "a100-pcie-pair", ("uuid-not-supported",)).family("nvidia")
    assert again is not None and [d.id for d in again.devices] == [d.id for d in family.devices]


# NVL72 across trays -----------------------------------------------------------------------------------

def ray_node(node_id: str, result: NodeInventory) -> dict[str, Any]:
    """What ray.nodes() says about a node started with this inventory's resources and labels."""
    return {"NodeID": node_id, "Alive": True, "Labels": dict(result.labels), "Resources": dict(result.resources)}


def test_two_nvl72_trays_publish_one_clique_and_the_bridge_adds_them_up(manager: PluginManager) -> None:
    trays = [inventory(manager, "gb200-nvl72-tray"), inventory(manager, "gb200-nvl72-tray-08")]
    cliques = {t.labels["rayaccel.io/scale-up-domain"] for t in trays}
    assert len(cliques) == 1
    ids = [d.id for t in trays for f in t.families for d in f.devices]
    assert len(set(ids)) == 8  # two trays, eight distinct GPUs
    # Each tray sees only its own 4 GPUs ...
    assert {t.labels["rayaccel.io/scale-up-domain-size"] for t in trays} == {"4"}
    # ... the cluster-wide view adds up the trays of the clique.
    nodes = [ray_node("tray-07", trays[0]), ray_node("tray-08", trays[1]),
             {"NodeID": "head", "Alive": True, "Labels": {}, "Resources": {"CPU": 8.0}}]
    (clique,) = cliques
    domains = scale_up_domains(nodes)
    assert set(domains) == {clique}
    domain = domains[clique]
    assert (domain.kind, domain.size, domain.nodes) == ("nvlink-clique", 8, ("tray-07", "tray-08"))
    assert domain.capacity["GPU"] == 8.0
    # Placement uses that view: 8 GPUs fit the clique, and a clique of at least 8 devices exists.
    assert find_scale_up_domain([{"GPU": 4}, {"GPU": 4}], nodes=nodes, min_size=8) == (clique, None)
    with pytest.raises(Exception, match="at least 72 devices"):
        find_scale_up_domain([{"GPU": 4}], nodes=nodes, min_size=72)


def test_a_platform_given_clique_size_wins_over_the_sum(manager: PluginManager,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(topology.CLIQUE_SIZE_ENV, "72")
    trays = [inventory(manager, "gb200-nvl72-tray"), inventory(manager, "gb200-nvl72-tray-08")]
    domains = scale_up_domains([ray_node(f"n{i}", t) for i, t in enumerate(trays)])
    assert [d.size for d in domains.values()] == [72]
