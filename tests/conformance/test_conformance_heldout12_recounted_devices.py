"""Held-out grading, round 12 (issue 46, lane H1): an extra resource never counts the family's devices again under
another name (``invariant devices-are-counted-once``, RAC111).

The command-csv bake ``c1`` offered ``FOXHOLLOW_X1``, one per device given, beside ``FOXHOLLOW``: Ray gives per-unit
ids, and the visible-devices variable, only for the family's resource, so a task asking for ``FOXHOLLOW_X1`` saw no
device, and each device was offered twice. Only the fixture's expected resources (RAC105) said so, and with them
edited to the code's answer it passed ``supported``. Withholding each device in turn from ``rayaccel_resources``
now shows a resource dropping by one device (or its units) for each device that changes it, and adding up to
those drops: two corpus shapes (per model, per NUMA node), c1's edit on the Gaudi plugin, and a Neuron resource
counting the cores again are named; resources that are constant (a TPU slice's head and name) pass (an amount of
each device summed, its memory, is named by ``a-device-quantity-is-not-pooled`` instead:
test_conformance_heldout14_pooled_quantities.py).
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from mutant_grading import failure, mutant, wrapped

import rayaccel_gaudi.plugin
import rayaccel_neuron.plugin
import rayaccel_tpu.plugin
from rayaccel import ResourceContribution, to_label_value
from rayaccel.records import Device
from rayaccel_conformance.registry import CHECKS, CheckFailed
from rayaccel_testplugins.corpus_recounted_devices import CardsPerModelResource, CardsPerNumaNode

INVARIANT = "invariant devices-are-counted-once"


@pytest.mark.parametrize(("shape", "named", "value", "withheld"), [
    (CardsPerModelResource, "_R1", 4, "every device given"), (CardsPerNumaNode, "_NUMA1", 2, "2 of the 4 devices")])
def test_a_resource_counting_the_cards_again_is_named(shape: type[CardsPerModelResource], named: str, value: int,
                                                      withheld: str) -> None:
    plugin = mutant(shape)
    said = failure(plugin, "RAC111", "acme-4")
    name = f"{plugin.family.resource_name}{named}"
    assert f"rayaccel_resources offers {name} {value} for the 4 devices given" in said, said
    assert f"it counts {withheld}" in said and f"a task asking for {name} gets no device" in said, said
    assert INVARIANT in said and "expected" not in said, said  # the fixture expects what the code answers


def per_model(module: Any) -> Any:
    """``module``'s rayaccel_resources with c1's edit: one resource per model, one for each device of it given."""
    def resources(host: Any, devices: list[Device], topology: Any) -> ResourceContribution:
        answer: ResourceContribution = module.rayaccel_resources(host, devices, topology)
        models = Counter(to_label_value(d.product_name).upper().replace("-", "_") for d in devices)
        return answer.model_copy(update={"extra": {**answer.extra, **{k: float(n) for k, n in models.items()}}})
    return resources


def cores_again(host: Any, devices: list[Device], topology: Any) -> ResourceContribution:
    """The Neuron plugin's answer with its cores (the devices' units) offered again under a name of their own."""
    answer: ResourceContribution = rayaccel_neuron.plugin.rayaccel_resources(host, devices, topology)
    cores = sum(len(d.unit_ids) for d in devices)
    return answer.model_copy(update={"extra": {**answer.extra, "NEURON_CORES_ANY": float(cores)}})


@pytest.mark.parametrize(("module", "name", "fixture", "hook", "counted"), [
    (rayaccel_gaudi.plugin, "gaudi", "hls-gaudi2", per_model(rayaccel_gaudi.plugin), "HL_225 8"),
    (rayaccel_neuron.plugin, "neuron", "trn1.32xlarge", cores_again, "NEURON_CORES_ANY 32")])
def test_a_reference_plugin_counting_its_devices_again_is_named(module: Any, name: str, fixture: str, hook: Any,
                                                                counted: str) -> None:
    subject = wrapped(module, name, str(Path(module.__file__).parent), rayaccel_resources=hook)
    with pytest.raises(CheckFailed) as failed:
        CHECKS["RAC111"].function(subject, f"{name}/{fixture}")
    said = str(failed.value)
    assert f"rayaccel_resources offers {counted} for the " in said and INVARIANT in said, said


@pytest.mark.parametrize("fixture", ["v5p-16-worker0", "v5p-16-worker1", "v6e-256-worker"])
def test_constant_resources_of_a_tpu_slice_pass(fixture: str) -> None:
    subject = wrapped(rayaccel_tpu.plugin, "tpu", str(Path(rayaccel_tpu.plugin.__file__).parent))
    said = str(CHECKS["RAC111"].function(subject, f"tpu/{fixture}"))
    assert "extra resources none" not in said and "none counts the devices again" in said, said

