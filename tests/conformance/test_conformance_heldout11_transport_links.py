"""Held-out grading, round 11 (issue 46, lane F2): a transport that moves CPU tensors only declares no scale-up link
(``invariant host-memory-crosses-no-scale-up-link``, RAC305).

The Neuron wrapper ``e1`` declared Ray's NIXL (registered for the family with devices ``cpu``, over EFA) to carry
``neuronlink`` too, so path selection offered it between two NeuronLinked devices, where it moves only copies staged
through host memory: Ray moves a tensor only on the device types a transport is registered for, and a scale-up link
joins two devices' memories with no host memory on the way. Two corpus shapes fail (Ray's GLOO, a family's own
shared-memory transport); the Neuron plugin as shipped (NIXL over EFA), NVIDIA's NIXL (cuda and cpu over NVLink) and
the template's transport (cpu over PCIe) pass.
"""

from __future__ import annotations

import pytest
from mutant_grading import graded, mutant, wrapped

import rayaccel_neuron.plugin
import rayaccel_nvidia.transport
from rayaccel import TransportSpec
from rayaccel.inventory.transport_paths import Endpoint, choose_transport
from rayaccel.testing import plugin_kit
from rayaccel_conformance.checks.certified import scale_up_problems
from rayaccel_conformance.registry import CHECKS, CheckFailed
from rayaccel_testplugins import corpus
from rayaccel_testplugins.corpus_transport_links import GlooOverScaleUp, HostCopyOverScaleUp

FRAGMENT = "invariant host-memory-crosses-no-scale-up-link"


def _e1() -> list[TransportSpec]:
    """The Neuron plugin's declaration with e1's one edit: NIXL to carry neuronlink beside EFA."""
    (nixl,) = rayaccel_neuron.plugin.rayaccel_transports()
    return [nixl.model_copy(update={"link_kinds": ["efa", "neuronlink"]})]


@pytest.mark.parametrize(("shape", "named"), [(GlooOverScaleUp, "transport GLOO moves cpu tensors only, yet declares "
                                               "xgmi"),
                                              (HostCopyOverScaleUp, "transport ACME_HOST_COPY moves cpu tensors only, "
                                               "yet declares neuronlink")], ids=["ray-gloo", "own-shared-memory"])
def test_a_cpu_transport_claiming_a_scale_up_link_is_named(shape: type[corpus.Healthy], named: str) -> None:
    subject = graded(mutant(shape))
    with pytest.raises(CheckFailed) as failed:
        CHECKS["RAC305"].function(subject)
    text = str(failed.value)
    assert f"{FRAGMENT}: {named}" in text and "path selection never offers" in text, text


def test_the_neuron_plugin_with_e1s_edit_fails_and_as_shipped_passes() -> None:
    subject = wrapped(rayaccel_neuron.plugin, "neuron", "rayaccel_neuron", rayaccel_transports=_e1)
    with pytest.raises(CheckFailed) as failed:
        CHECKS["RAC305"].function(subject)
    assert f"{FRAGMENT}: transport NIXL moves cpu tensors only, yet declares neuronlink" in str(failed.value)
    assert CHECKS["RAC305"].function(wrapped(rayaccel_neuron.plugin, "neuron", "rayaccel_neuron"))


def test_path_selection_gives_the_edit_the_host_path_between_two_neuronlinked_devices() -> None:
    """Before lane S the defect reached users: `rayaccel transports` offered NIXL over NeuronLink. Path selection now
    passes a CPU-only transport over for a scale-up path and names it, so the edit gets the shipped plugin's host path;
    RAC305 still fails the declaration (above)."""
    inventory = plugin_kit(rayaccel_neuron.plugin, "neuron").inventory("trn1.32xlarge")
    family = inventory.family("neuron")
    assert family is not None
    link = next(link for link in family.topology.links if link.kind == "neuronlink")
    a, b = Endpoint(inventory, "neuron", link.a), Endpoint(inventory, "neuron", link.b)
    edited = choose_transport(a, b, {family.plugin: _e1()}, same_node=True)
    shipped = choose_transport(a, b, {family.plugin: rayaccel_neuron.plugin.rayaccel_transports()}, same_node=True)
    assert (edited.transport, edited.path) == (shipped.transport, shipped.path) == ("NIXL", "host")
    assert "scale-up over neuronlink: NIXL moves CPU tensors only" in edited.reason, edited.reason
    assert "NIXL moves CPU tensors only" not in shipped.reason, shipped.reason


def test_transports_that_move_device_tensors_or_cross_host_links_pass() -> None:
    for spec in rayaccel_nvidia.transport.transports():  # NIXL: cuda and cpu over NVLink
        assert scale_up_problems(spec) == [], spec.name
    template = TransportSpec(name="ACME_SHM", devices=["cpu"], link_kinds=["pcie"], one_sided=True, reach="node",
                             manager_class="rayaccel.transports.shared_memory:SharedMemoryTransport")
    assert scale_up_problems(template) == []
    assert scale_up_problems(template.model_copy(update={"link_kinds": ["pcie", "ici"]}))
