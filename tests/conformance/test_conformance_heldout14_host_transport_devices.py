"""Held-out grading, round 14 (issue 46, lane K1): a transport whose class moves host memory declares no device type
(``invariant host-memory-declares-no-device``, RAC305), and path selection never offers it for device tensors.

``l1`` (a python-library bake) declared its shared-memory transport, the SDK's ``SharedMemoryTransport`` under the
family's name, with devices ``['cpu', 'ericht']``. Ray registers a transport for its declared devices and matches a
tensor by ``tensor.device.type`` in them (``ray.experimental.rdt.util.device_match_transport``), so the family's device
tensors would be handed to a class whose extract step refuses every tensor not on the CPU; no check compared the
declaration with what the class moves, and it survived ``supported``. The class's own answer is the oracle:
``moved_device_types()``, ``('cpu',)`` while its memory steps are the SDK's, None once a subclass replaces them.
"""

from __future__ import annotations

from typing import Any

import pytest
from mutant_grading import graded

import rayaccel_amd.plugin
import rayaccel_neuron.plugin
import rayaccel_nvidia.plugin
from rayaccel import SharedMemoryTransport, TransportSpec
from rayaccel.inventory.transport_paths import Endpoint, choose_transport, moves_host_memory_only
from rayaccel.plugins.transport_classes import ask_class, ask_classes
from rayaccel.testing import plugin_kit
from rayaccel_conformance.checks.transport_devices import class_device_problems
from rayaccel_conformance.registry import CHECKS, CheckFailed
from rayaccel_testplugins import corpus_host_transport_devices
from rayaccel_testplugins.corpus import Healthy
from rayaccel_testplugins.corpus_host_transport_devices import (
    HERE,
    HOST_TRANSPORT_DEVICE_MUTANTS,
    AcmeDeviceShm,
    AcmeGuardedShm,
    AcmeShm,
)

INVARIANT = "invariant host-memory-declares-no-device"


def _spec(devices: list[str], cls: str = "AcmeShm", links: tuple[str, ...] = ("pcie",)) -> TransportSpec:
    """The declaration as the SDK hands it on: its class asked where the plugin runs (here, in process)."""
    return ask_class(TransportSpec(name="ACME_SHM", devices=devices, link_kinds=list(links), one_sided=True,
                                   reach="node", manager_class=f"{HERE}:{cls}"))


def test_the_shared_memory_class_answers_host_memory_while_its_memory_steps_are_its_own() -> None:
    assert SharedMemoryTransport.moved_device_types() == ("cpu",)
    # Renamed, or with only its bookkeeping replaced, it still copies host memory; its own steps make it another.
    assert AcmeShm.moved_device_types() == ("cpu",) and AcmeGuardedShm.moved_device_types() == ("cpu",)
    assert AcmeDeviceShm.moved_device_types() is None


def test_l1s_declaration_is_named_and_host_memory_alone_passes() -> None:
    said = class_device_problems(_spec(["cpu", "ericht"]))
    assert len(said) == 1 and said[0].startswith(f"{INVARIANT}: transport ACME_SHM is declared for device types "
                                                 "['cpu', 'ericht'], but its class"), said
    assert "'ericht' tensors it cannot read" in said[0] and "declare ['cpu'] alone" in said[0], said
    assert class_device_problems(_spec(["cpu"])) == []
    # A class moving its device's memory answers for nothing: its declaration stands.
    assert class_device_problems(_spec(["cpu", "ericht"], "AcmeDeviceShm")) == []
    # A class that does not import here is RAC301's to name, not this invariant's.
    assert class_device_problems(_spec(["cpu", "ericht"], "NoSuchClass")) == []


def test_the_reference_plugins_declarations_pass() -> None:
    for plugin in (rayaccel_nvidia.plugin, rayaccel_amd.plugin, rayaccel_neuron.plugin):
        specs = ask_classes(plugin.rayaccel_transports())
        assert specs and all(class_device_problems(spec) == [] for spec in specs), plugin


def _plugin(mutant: type[Healthy]) -> Healthy:
    return next(p for p in vars(corpus_host_transport_devices).values() if type(p) is mutant)


@pytest.mark.parametrize("mutant", HOST_TRANSPORT_DEVICE_MUTANTS, ids=lambda cls: cls.__name__)
def test_a_host_memory_transport_declared_for_a_device_fails_rac305_naming_it(mutant: type[Healthy]) -> None:
    subject = graded(_plugin(mutant))  # first: it registers the checks that CHECKS holds
    with pytest.raises(CheckFailed) as failed:
        CHECKS["RAC305"].function(subject)
    said = str(failed.value)
    assert mutant.KILLED_BY == ("RAC305", INVARIANT)
    assert f"{INVARIANT}: transport" in said and said.count(INVARIANT) == 1 and "'acme' tensors" in said, said


@pytest.mark.parametrize("mutant", HOST_TRANSPORT_DEVICE_MUTANTS, ids=lambda cls: cls.__name__)
def test_the_same_transport_declared_for_host_memory_passes_rac305(mutant: type[Healthy]) -> None:
    class Right(mutant):  # type: ignore[misc]
        def rayaccel_transports(self) -> list[TransportSpec]:
            return [spec.model_copy(update={"devices": ["cpu"]}) for spec in super().rayaccel_transports()]

    Right.__module__ = mutant.__module__  # the plugin's package is its class's (RAC305 asks transports to live there)
    subject = graded(Right(f"c-right-{mutant.__name__.lower()[:12]}"))
    said = str(CHECKS["RAC305"].function(subject))
    assert "cpu)" in said, said


def test_path_selection_never_offers_a_host_memory_class_for_device_tensors() -> None:
    """The SDK's shared-memory class declared for cuda beside cpu and for NVLink (l1's declaration on an NVIDIA pair)
    is passed over for the NVLink path, the reason naming it: it moves copies staged through host memory. A class
    moving the device's memory, declared the same, carries the link."""
    inventory = plugin_kit(rayaccel_nvidia.plugin, "nvidia").inventory("dgx-h100")
    family = inventory.family("nvidia")
    assert family is not None
    link = next(link for link in family.topology.links if link.kind == "nvlink")
    a, b = Endpoint(inventory, "nvidia", link.a), Endpoint(inventory, "nvidia", link.b)
    claimed = _spec(["cpu", "cuda"], links=("pcie", "nvlink"))
    assert moves_host_memory_only(claimed)
    offered: Any = choose_transport(a, b, {family.plugin: [claimed]}, same_node=True)
    assert offered.path != "scale-up" and "ACME_SHM moves CPU tensors only" in offered.reason, offered
    moving = _spec(["cpu", "cuda"], "AcmeDeviceShm", links=("pcie", "nvlink"))
    assert not moves_host_memory_only(moving)
    carried = choose_transport(a, b, {family.plugin: [moving]}, same_node=True)
    assert (carried.transport, carried.path, carried.link) == ("ACME_SHM", "scale-up", "nvlink"), carried
