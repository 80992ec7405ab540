"""Real-hardware semantics (issue 15): v7x by PCI id, chips on VFIO, and "no accelerator type" like Ray.

- tpu-info names TPU7x chips by PCI device id 0x0076; without the pod type the chips still say v7x.
- v5e, v5p, v6e and TPU7x VMs expose chips as ``/dev/vfio/<group>``, not ``/dev/accel*``.
- With no valid pod type and no PCI id, Ray reports no accelerator type; the SDK must not invent one
  (``accelerator_type:Google-TPU`` and ``ray.io/accelerator-type=Google-TPU`` before the fix).
- A TPU7x chip is two chiplets, two PCI functions (``.0``/``.1``) in two VFIO groups (issue 27): tpu7x-8 is 8
  groups and 4 chips, and ``TPU_VISIBLE_CHIPS`` counts chips (before the fix: 8 devices, a slice of 8, and
  ``TPU_VISIBLE_CHIPS=0,1`` for the two halves of chip 0).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from rayaccel import ResourceContribution
from rayaccel.testing import PluginManager, SimulatedHost, build_inventory, load_fixture
from rayaccel_tpu import plugin, probe

FIXTURES = Path(plugin.__file__).parent / "fixtures"


@pytest.fixture(scope="module")
def manager(rayaccel_manager: PluginManager) -> PluginManager:
    return rayaccel_manager  # the testing kit's: just this plugin, under its entry-point name


def host(name: str, *faults: str) -> SimulatedHost:
    return SimulatedHost(load_fixture(FIXTURES / f"{name}.yaml"), faults=list(faults))


def test_v7x_chips_are_named_by_their_pci_id_without_a_pod_type(manager: PluginManager) -> None:
    assert probe.PCI_DEVICE_GENERATIONS["0x0076"] == "v7x"
    result = build_inventory(manager, host("tpu7x-8", "metadata-unreachable"))
    family = result.family("tpu")
    assert family is not None
    assert {d.pci_device_id for d in family.devices} == {"0x0076"}
    assert {d.sku for d in family.devices} == {"tpu7x"}
    assert result.resources == {"TPU": 4.0, "accelerator_type:TPU-V7X": 1.0}
    assert result.labels["ray.io/accelerator-type"] == "TPU-V7X"


def test_tpu7x_chiplets_are_grouped_into_chips(manager: PluginManager, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RAY_TPU_RESOURCE_PER_CHIP", raising=False)
    simulated = host("tpu7x-8")
    assert len([g for g in simulated.list_dir("/dev/vfio") if g.isdigit()]) == 8
    found = probe.find_chips(simulated)
    assert [c.nodes for c in found] == [(f"/dev/vfio/{2 * i}", f"/dev/vfio/{2 * i + 1}") for i in range(4)]
    assert [c.pci_bus_id for c in found] == [f"0000:00:0{4 + i}.0" for i in range(4)]
    result = build_inventory(manager, simulated)
    family = result.family("tpu")
    assert family is not None and len(family.devices) == 4 and result.resources["TPU"] == 4.0
    assert result.labels["rayaccel.io/scale-up-domain-size"] == "4"
    assert family.topology.domains[0].hosts == 1
    # Units 0 and 1 are chips 0 and 1 (four chiplets), as the TPU runtime reads TPU_VISIBLE_CHIPS.
    assert manager.visible_env("tpu", ["0", "1"])["TPU_VISIBLE_CHIPS"] == "0,1"
    assert [d.attributes["chiplet_nodes"] for d in family.devices][1] == "/dev/vfio/2,/dev/vfio/3"


def test_tpu7x_one_unit_per_chiplet_with_ray_s_resource_per_chip(manager: PluginManager,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAY_TPU_RESOURCE_PER_CHIP", "2")
    result = build_inventory(manager, host("tpu7x-8"))
    family = result.family("tpu")
    assert family is not None and len(family.devices) == 4 and result.resources["TPU"] == 8.0
    assert family.devices[1].unit_ids == ["2", "3"]
    # Both chiplets of chip 1 are the one physical chip 1 to the runtime.
    assert manager.visible_env("tpu", ["2", "3"]) == {"TPU_VISIBLE_CHIPS": "1", "TPU_CHIPS_PER_HOST_BOUNDS": "1,1,1",
                                                      "TPU_HOST_BOUNDS": "1,1,1"}


def test_a_lost_tpu7x_chiplet_takes_its_chip_out(manager: PluginManager) -> None:
    result = build_inventory(manager, host("tpu7x-8", "chiplet-lost"))
    family = result.family("tpu")
    assert family is not None and len(family.devices) == 4 and result.resources["TPU"] == 3.0
    (report,) = [h for h in family.health if h.state == "unhealthy"]
    assert report.device == "tpu-0000:00:05.0" and report.reasons[0].code == "tpu-chiplet-lost"
    assert report.reasons[0].fatal


def test_a_chiplet_vanishing_after_the_inventory_makes_the_chip_unhealthy(tmp_path: Path) -> None:
    fixture = load_fixture(FIXTURES / "tpu7x-8.yaml")
    devices = plugin.rayaccel_discover(SimulatedHost(fixture))
    fault_file = tmp_path / "faults"
    live = SimulatedHost(fixture, fault_file=str(fault_file))
    assert all(r.state == "healthy" for r in plugin.rayaccel_health(live, devices))
    fault_file.write_text("chiplet-lost\n")
    reports = {r.device: r for r in plugin.rayaccel_health(live, devices)}
    assert reports["tpu-0000:00:05.0"].reasons[0].code == "tpu-chiplet-lost"
    assert [d for d, r in reports.items() if r.state == "unhealthy"] == ["tpu-0000:00:05.0"]


def test_v5e_chips_are_vfio_groups(manager: PluginManager) -> None:
    simulated = host("v5e-8")
    assert simulated.glob("/dev/accel*") == []
    found = probe.find_chips(simulated)
    assert [c.node for c in found] == [f"/dev/vfio/{g}" for g in range(8)]
    assert {c.pci_device_id for c in found} == {"0x0063"}
    family = build_inventory(manager, simulated).family("tpu")
    assert family is not None and {d.sku for d in family.devices} == {"tpu-v5e"}


def test_a_lost_vfio_chip_leaves_seven(manager: PluginManager) -> None:
    result = build_inventory(manager, host("v5e-8", "chip-lost"))
    assert result.resources["TPU"] == 7.0
    family = result.family("tpu")
    assert family is not None and "tpu-0000:00:09.0" not in {d.id for d in family.devices}


def test_no_pod_type_and_no_pci_id_gives_no_accelerator_type(manager: PluginManager) -> None:
    result = build_inventory(manager, host("tpu7x-8", "no-pod-type-no-pci-id"))
    family = result.family("tpu")
    assert family is not None and family.accelerator_type is None
    assert result.resources == {"TPU": 4.0}
    assert "ray.io/accelerator-type" not in result.labels
    assert "ray.io/accelerator-type" not in family.labels
    (unknown,) = [p for p in result.problems if p.code == "unknown-sku"]
    assert "no accelerator type" in unknown.message and unknown.severity == "warning"


def test_the_resources_hook_can_say_no_type_but_not_both() -> None:
    assert ResourceContribution(no_accelerator_type=True).accelerator_type is None
    with pytest.raises(ValidationError, match="not both"):
        ResourceContribution(accelerator_type="TPU-V4", no_accelerator_type=True)


def test_a_known_sku_still_gives_its_type_when_the_plugin_says_none(manager: PluginManager) -> None:
    # Pod type unreadable but PCI ids present: the catalog (by PCI id) decides, as before.
    result = build_inventory(manager, host("v5e-8", "garbage-accelerator-type"))
    assert result.resources["accelerator_type:TPU-V5LITEPOD"] == 1.0
