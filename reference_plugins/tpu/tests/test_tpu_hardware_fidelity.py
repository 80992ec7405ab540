"""Real-hardware semantics (issue 15): v7x by PCI id, chips on VFIO, and "no accelerator type" like Ray.

- tpu-info names TPU7x chips by PCI device id 0x0076; without the pod type the chips still say v7x.
- v5e, v5p, v6e and TPU7x VMs expose chips as ``/dev/vfio/<group>``, not ``/dev/accel*``.
- With no valid pod type and no PCI id, Ray reports no accelerator type; the SDK must not invent one
  (``accelerator_type:Google-TPU`` and ``ray.io/accelerator-type=Google-TPU`` before the fix).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from rayaccel.inventory.builder import collect_inventory
from rayaccel.plugins.manager import PluginManager
from rayaccel.records import ResourceContribution
from rayaccel.simulation.fixtures import load_fixture
from rayaccel.simulation.simulated_host import SimulatedHost
from rayaccel_tpu import chips, plugin

FIXTURES = Path(plugin.__file__).parent / "fixtures"


@pytest.fixture(scope="module")
def manager() -> PluginManager:
    pm = PluginManager(autoload=False)
    assert pm.register(plugin, "tpu")
    return pm


def host(name: str, *faults: str) -> SimulatedHost:
    return SimulatedHost(load_fixture(FIXTURES / f"{name}.yaml"), faults=list(faults))


def test_v7x_chips_are_named_by_their_pci_id_without_a_pod_type(manager: PluginManager) -> None:
    assert chips.PCI_DEVICE_GENERATIONS["0x0076"] == "v7x"
    result = collect_inventory(manager, host("tpu7x-8", "metadata-unreachable"))
    family = result.family("tpu")
    assert family is not None
    assert {d.pci_device_id for d in family.devices} == {"0x0076"}
    assert {d.sku for d in family.devices} == {"tpu7x"}
    assert result.resources == {"TPU": 4.0, "accelerator_type:TPU-V7X": 1.0}
    assert result.labels["ray.io/accelerator-type"] == "TPU-V7X"


def test_v5e_chips_are_vfio_groups(manager: PluginManager) -> None:
    simulated = host("v5e-8")
    assert simulated.glob("/dev/accel*") == []
    found = chips.find_chips(simulated)
    assert [c.node for c in found] == [f"/dev/vfio/{g}" for g in range(8)]
    assert {c.pci_device_id for c in found} == {"0x0063"}
    family = collect_inventory(manager, simulated).family("tpu")
    assert family is not None and {d.sku for d in family.devices} == {"tpu-v5e"}


def test_a_lost_vfio_chip_leaves_seven(manager: PluginManager) -> None:
    result = collect_inventory(manager, host("v5e-8", "chip-lost"))
    assert result.resources["TPU"] == 7.0
    family = result.family("tpu")
    assert family is not None and "tpu-0000:00:09.0" not in {d.id for d in family.devices}


def test_no_pod_type_and_no_pci_id_gives_no_accelerator_type(manager: PluginManager) -> None:
    result = collect_inventory(manager, host("tpu7x-8", "no-pod-type-no-pci-id"))
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
    result = collect_inventory(manager, host("v5e-8", "garbage-accelerator-type"))
    assert result.resources["accelerator_type:TPU-V5LITEPOD"] == 1.0
