"""Held-out grading, round 14 (issue 46, lane K6): an extra resource never pools an amount each device states of itself
into one node quantity (``invariant a-device-quantity-is-not-pooled``, RAC111).

The python-library bake ``l2`` offered ``LAIDON_MEMORY_MIB``, the devices' memory summed: Ray ties only the family's
resource to devices (per-unit ids, the visible-devices variable), so a task asking 150000 of it was placed on a node
of 98304 MiB devices, and tasks sharing a device drew from the pool, not from that device. Only the fixture's expected
resources (RAC105) said so, and with them edited to the code's answer (``l2e``) it passed ``supported``. Withholding
each device in turn from ``rayaccel_resources`` now shows a resource dropping by the device's own amount and adding
up to those amounts: two corpus shapes (the node's memory in GiB, each NUMA node's in bytes), l2's edit on the NVIDIA
plugin (MiB, GB) and Gaudi's scale-out ports pooled (a number among the devices' attributes) are named; the NVIDIA
plugin as shipped and a TPU slice's constant resources pass.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from mutant_grading import failure, mutant, wrapped

import rayaccel_gaudi.plugin
import rayaccel_nvidia.plugin
import rayaccel_tpu.plugin
from rayaccel import ResourceContribution
from rayaccel.records import Device
from rayaccel_conformance.registry import CHECKS, CheckFailed
from rayaccel_testplugins.corpus_offered_resources import MemoryOfDevicesGiven
from rayaccel_testplugins.corpus_pooled_quantities import MemoryPooledOnTheNode, MemoryPooledPerNumaNode

INVARIANT = "invariant a-device-quantity-is-not-pooled"


@pytest.mark.parametrize(("shape", "named", "value", "what", "pooled"), [
    (MemoryPooledOnTheNode, "_MEMORY_GIB", "256", "memory in GiB", "4 devices'"),
    (MemoryPooledPerNumaNode, "_NUMA1_MEMORY_BYTES", "137438953472", "memory in bytes", "2 devices'")])
def test_memory_pooled_over_the_cards_is_named(shape: type[MemoryPooledOnTheNode], named: str, value: str, what: str,
                                               pooled: str) -> None:
    plugin = mutant(shape)
    said = failure(plugin, "RAC111", "acme-4")
    name = f"{plugin.family.resource_name}{named}"
    assert f"rayaccel_resources offers {name} {value} for the 4 devices given" in said, said
    assert f"drops it by that device's own {what}" in said and f"it pools {pooled} {what}" in said, said
    assert INVARIANT in said and "expected" not in said, said  # the fixture expects what the code answers


def pooled(module: Any, name: str, amount: Any) -> Any:
    """``module``'s rayaccel_resources with l2's edit: ``name`` offered as ``amount(device)`` summed."""
    def resources(host: Any, devices: list[Device], topology: Any) -> ResourceContribution:
        answer: ResourceContribution = module.rayaccel_resources(host, devices, topology)
        total = float(sum(amount(d) for d in devices))
        return answer.model_copy(update={"extra": {**answer.extra, name: total}})
    return resources


@pytest.mark.parametrize(("module", "family", "fixture", "hook", "offered", "what"), [
    (rayaccel_nvidia.plugin, "nvidia", "dgx-h100",
     pooled(rayaccel_nvidia.plugin, "NVIDIA_MEMORY_MIB", lambda d: d.memory_mib or 0), "NVIDIA_MEMORY_MIB",
     "memory in MiB"),
    (rayaccel_nvidia.plugin, "nvidia", "a100-pcie-pair",
     pooled(rayaccel_nvidia.plugin, "NVIDIA_MEMORY_GB", lambda d: (d.memory_mib or 0) * 2**20 / 10**9),
     "NVIDIA_MEMORY_GB", "memory in GB"),
    (rayaccel_gaudi.plugin, "gaudi", "hls-gaudi2",
     pooled(rayaccel_gaudi.plugin, "HPU_SCALE_OUT_PORTS", lambda d: d.attributes.get("scale_out_ports", 0)),
     "HPU_SCALE_OUT_PORTS", "attributes['scale_out_ports']")])
def test_a_reference_plugin_pooling_an_amount_of_its_devices_is_named(module: Any, family: str, fixture: str,
                                                                      hook: Any, offered: str, what: str) -> None:
    subject = wrapped(module, family, str(Path(module.__file__).parent), rayaccel_resources=hook)
    with pytest.raises(CheckFailed) as failed:
        CHECKS["RAC111"].function(subject, f"{family}/{fixture}")
    said = str(failed.value)
    assert f"rayaccel_resources offers {offered} " in said and f"that device's own {what}:" in said, said
    assert INVARIANT in said, said


@pytest.mark.parametrize("fixture", ["dgx-h100", "a100-mig"])
def test_the_reference_plugin_as_shipped_pools_nothing(fixture: str) -> None:
    subject = wrapped(rayaccel_nvidia.plugin, "nvidia", str(Path(rayaccel_nvidia.plugin.__file__).parent))
    assert "none counts the devices again" in str(CHECKS["RAC111"].function(subject, f"nvidia/{fixture}"))


def test_constant_resources_of_a_tpu_slice_pass() -> None:
    subject = wrapped(rayaccel_tpu.plugin, "tpu", str(Path(rayaccel_tpu.plugin.__file__).parent))
    said = str(CHECKS["RAC111"].function(subject, "tpu/v5p-16-worker0"))
    assert "TPU-v5p-16-head=1" in said, said


def test_memory_of_the_devices_given_is_named_as_a_pool() -> None:
    said = failure(MemoryOfDevicesGiven("c-memory-of-devices-given"), "RAC111", "acme-4")
    assert INVARIANT in said and "devices-are-counted-once" not in said, said
