"""Real-hardware semantics (issue 15): MI300X compute partitions, amdsmi's own link-type enum, PCI-id-only GPUs.

- CPX/NPS4: each MI300X is 8 logical GPUs, each an amdsmi handle Ray counts. ROCm before 7.12 gives the 8 the same
  uuid: before the fix the node reported ``duplicate-device`` errors and far fewer GPUs than Ray.
- ``amdsmi_topo_get_link_type``'s numbering changed across releases: the kind is read from the library's
  ``AmdSmiLinkType`` rather than a hard-coded ``{1: pcie, 2: xgmi}``.
- A GPU amdsmi identifies only by its PCI device id is offered (as Ray counts it), with a warning.
"""

from __future__ import annotations

import copy
import importlib
import sys
import types
from typing import Any

import pytest

from rayaccel.testing import ID_FALLBACK, SimulatedHost, build_inventory, parse_fixture
from rayaccel_amd import amdsmi as amdsmi_adapter, library


def ray_count(monkeypatch: pytest.MonkeyPatch, host: SimulatedHost) -> int:
    """What Ray 2.60's AMD manager counts on this host, fed the host's amdsmi answers at its vendor interface."""
    import ray._private.thirdparty.pyamdsmi.pyamdsmi as binding
    from ray._private.accelerators.amd_gpu import AMDGPUAcceleratorManager

    lib = amdsmi_adapter.SimulatedAmdSmi(copy.deepcopy(host.state().libraries["amdsmi"]))
    module = types.ModuleType("amdsmi")
    for name in dir(lib):
        if name.startswith(("amdsmi_", "AmdSmi")):
            setattr(module, name, getattr(lib, name))
    monkeypatch.setitem(sys.modules, "amdsmi", module)
    monkeypatch.delenv("ROCR_VISIBLE_DEVICES", raising=False)
    importlib.reload(binding)
    try:
        return int(AMDGPUAcceleratorManager.get_current_node_num_accelerators())
    finally:
        monkeypatch.undo()
        importlib.reload(binding)


def test_partitions_sharing_a_uuid_are_all_offered(manager, fixtures, monkeypatch) -> None:
    host = SimulatedHost(fixtures["mi300x-cpx-nps4-shared-uuid"])
    result = build_inventory(manager, host)
    family = result.family("amd")
    assert family is not None
    assert "duplicate-device" not in {p.code for p in result.problems}
    # Ray counts 64 GPUs; here they are 64 compute partitions of 8 GPUs (a deliberate difference, README).
    assert result.resources["GPU_COMPUTE_PARTITION_cpx.1xcd.24gb"] == 64.0 == ray_count(monkeypatch, host)
    assert "GPU" not in result.resources and len(family.devices) == 8
    ids = [d.id for d in family.devices]
    assert len({p.attributes["uuid"] for d in family.devices for p in d.partitions}) == 64
    assert all(ID_FALLBACK in d.attributes for d in family.devices)
    (warning,) = [p for p in result.problems if p.code == "fallback-device-id"]
    assert warning.severity == "warning" and "and 7 more devices" in warning.message
    assert "ROCm before 7.12" in warning.message and "stays on the upgrade" in warning.message
    # Ids are stable from one probe to the next (health and the Ray bridge rely on it).
    again = build_inventory(manager, host).family("amd")
    assert again is not None and [d.id for d in again.devices] == ids


def test_partitions_with_their_own_uuids_carry_their_partition_id(manager, fixtures, monkeypatch) -> None:
    host = SimulatedHost(fixtures["mi300x-cpx-nps4"])
    result = build_inventory(manager, host)
    family = result.family("amd")
    assert family is not None
    assert [p for p in result.problems if p.severity == "error"] == []
    assert "fallback-device-id" not in {p.code for p in result.problems}
    assert result.resources["GPU_COMPUTE_PARTITION_cpx.1xcd.24gb"] == 64.0 == ray_count(monkeypatch, host)
    assert [p.attributes["partition_id"] for p in family.devices[0].partitions] == list(range(8))
    # Partition queries answer N/A on partitions other than 0: the primary's answer is the GPU's.
    assert {d.attributes["compute_partition"] for d in family.devices} == {"CPX"}
    assert {h.state for h in family.health} == {"healthy"}


def test_a_gpu_known_only_by_its_pci_id_is_offered_with_a_warning(manager, fixtures, monkeypatch) -> None:
    host = SimulatedHost(fixtures["mi300x-cpx-nps4"], faults=["gpu9-pci-id-only"])
    result = build_inventory(manager, host)
    family = result.family("amd")
    assert family is not None
    assert result.resources["GPU_COMPUTE_PARTITION_cpx.1xcd.24gb"] == 64.0 == ray_count(monkeypatch, host)
    # Its HIP uuid (the package's) still places it: partition 1 of GPU 1, not a GPU of its own.
    gpu = family.devices[1]
    assert len(family.devices) == 8 and gpu.partitions[1].id == "9"
    assert gpu.partitions[1].attributes["uuid"] == "amdsmi-gpu-9" and gpu.pci_device_id == "0x74a1"
    assert gpu.sku == "mi300x"
    assert [(p.code, p.severity) for p in result.problems] == [("fallback-device-id", "warning")]


def _with_link_layout(fixtures: Any, layout: dict[str, int], xgmi: int) -> SimulatedHost:
    data = fixtures["mi355x-8"].model_dump(mode="json", by_alias=True)
    amdsmi = data["host"]["libraries"]["amdsmi"]
    amdsmi["link_type_enum"] = layout
    for gpu in amdsmi["gpus"].values():
        for link in (gpu.get("links") or {}).values():
            link["type"] = xgmi
    return SimulatedHost(parse_fixture(data, "mi355x-8 on another amdsmi release"))


def test_link_kinds_come_from_the_librarys_own_enum(manager, fixtures) -> None:
    # A release whose amdsmi_link_type_t has no INTERNAL: PCIE 0, XGMI 1 (1 was "pcie" in the hard-coded map).
    layout = {"AMDSMI_LINK_TYPE_PCIE": 0, "AMDSMI_LINK_TYPE_XGMI": 1, "AMDSMI_LINK_TYPE_NOT_APPLICABLE": 2,
              "AMDSMI_LINK_TYPE_UNKNOWN": 3}
    family = build_inventory(manager, _with_link_layout(fixtures, layout, xgmi=1)).family("amd")
    assert family is not None
    assert {ln.kind for ln in family.topology.links} == {"xgmi"} and len(family.topology.links) == 28
    assert family.labels["rayaccel.io/interconnect"] == "xgmi"


def test_link_kind_table_of_each_layout() -> None:
    default = amdsmi_adapter.open_simulated({"gpus": {}})
    assert library.link_kinds(default) == {1: "pcie", 2: "xgmi"}
    older = amdsmi_adapter.open_simulated({"gpus": {}, "link_type_enum": {
        "AMDSMI_LINK_TYPE_PCIE": 0, "AMDSMI_LINK_TYPE_XGMI": 1, "AMDSMI_LINK_TYPE_UNKNOWN": 3}})
    assert library.link_kinds(older) == {0: "pcie", 1: "xgmi"}
