"""An operator's visible-devices setting naming devices by their own ids (issue 46, held-out round 16's ``l2``).

The runtimes take a device's own id beside its index (CUDA_VISIBLE_DEVICES ``GPU-<uuid>``), and a parser keeps such
an entry as written (RAC114's ``an-entry-is-kept-or-refused`` and ``an-id-names-its-device``): only the inventory
knows which device has the id, so ``restrict_to_visible`` (``rayaccel start``) places it at that device's units.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from rayaccel.errors import RayaccelError
from rayaccel.hosts.fixtures import load_fixture
from rayaccel.hosts.simulated import SimulatedHost
from rayaccel.inventory.builder import collect_inventory
from rayaccel.inventory.visible_units import restrict_to_visible
from rayaccel.plugins.manager import PluginManager
from rayaccel_nvidia import plugin


def test_a_device_named_by_its_own_id_is_offered_as_its_units() -> None:
    manager = PluginManager(autoload=False)
    assert manager.register(plugin, "nvidia"), manager.problems
    fixture = load_fixture(Path(plugin.__file__).parent / "fixtures" / "dgx-h100.yaml")
    node = collect_inventory(manager, SimulatedHost(fixture))
    family = node.family("nvidia")
    assert family is not None
    third, fifth = family.devices[2], family.devices[4]
    # The UUID of the third GPU beside the fifth's index: both offered, by the device that has each.
    named = restrict_to_visible(node, manager, {"CUDA_VISIBLE_DEVICES": f"{third.id},{fifth.unit_ids[0]}"})
    kept = named.family("nvidia")
    assert kept is not None and kept.schedulable_units == [*third.unit_ids, *fifth.unit_ids]
    assert named.resources["GPU"] == 2.0
    # An id no device has is still refused, naming it.
    with pytest.raises(RayaccelError, match="GPU-00000000-0000-0000-0000-000000000000"):
        restrict_to_visible(node, manager, {"CUDA_VISIBLE_DEVICES": "GPU-00000000-0000-0000-0000-000000000000"})
