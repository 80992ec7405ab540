"""Held-out grading, round 11 (issue 46, lane F1): an accelerator type derived unlike Ray's for a SKU the catalog
does not list.

``e2`` (a Neuron wrapper) answered the product name (``Trainium2``, ``Inferentia2``) as the family's accelerator type
where its catalog lists no SKU; every fixture's SKU is catalogued, so the catalog's ``aws-neuron-core`` won and
nothing saw it. Ray's Neuron manager answers ``aws-neuron-core`` for every Neuron node and adds
``accelerator_type:aws-neuron-core`` itself. RAC270's ``invariant accelerator-type-as-ray-answers-it`` asks Ray's
manager, wired to the simulated machine, and the plugin, on the machine as recorded and with each device's product
name and PCI device id written as a product's the catalog cannot list yet. Shown on the Neuron plugin with e2's one
edit, on two corpus shapes graded alone (one claimant of NEURON_RT_VISIBLE_CORES per manager), and passed by the
Neuron plugin and by the corpus's Neuron-like control.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from mutant_grading import evidence, failure, wrapped

import rayaccel
import rayaccel_neuron.plugin as neuron
from rayaccel_conformance.checks.experimental import _ray_validator
from rayaccel_conformance.checks.ray_types import ray_accelerator_type
from rayaccel_conformance.registry import CHECKS, CheckFailed
from rayaccel_testplugins import corpus_ray_types
from rayaccel_testplugins.corpus import Healthy
from rayaccel_testplugins.corpus_ray_types import NEURON_TYPE, TYPE_MUTANTS

INVARIANT = "invariant accelerator-type-as-ray-answers-it"
NEURON_PACKAGE = Path(neuron.__file__).parent


def name_of(cls: type[Healthy]) -> str:
    return "c-" + "".join(f"-{c.lower()}" if c.isupper() else c for c in cls.__name__).lstrip("-")


def neuron_with(**hooks: Any) -> Any:
    return wrapped(neuron, "neuron", str(NEURON_PACKAGE), **hooks)


def product_typed(host: rayaccel.Host, devices: list[rayaccel.Device],
                  topology: rayaccel.Topology) -> rayaccel.ResourceContribution:
    """e2's edit: the first device's product name as the type (the catalog's still wins for a SKU it lists)."""
    named = rayaccel.to_label_value(devices[0].product_name) if devices else None
    return rayaccel.ResourceContribution(accelerator_type=named)


def test_ray_s_neuron_manager_answers_its_type_on_the_simulated_machine() -> None:
    """The oracle, wired to a recorded machine: Ray's type for every Neuron node."""
    subject = neuron_with()
    manager = _ray_validator("neuron_cores", "NEURON_RT_VISIBLE_CORES")
    assert ray_accelerator_type(manager, subject.fixture("neuron/trn2.48xlarge")) == NEURON_TYPE


def test_e2_product_name_as_type_fails_rac270_naming_it() -> None:
    subject = neuron_with(rayaccel_resources=product_typed)
    with pytest.raises(CheckFailed) as failed:
        CHECKS["RAC270"].function(subject, "neuron/trn2.48xlarge")
    said = str(failed.value)
    assert f"{INVARIANT}, neuron/trn2.48xlarge made of a product the catalog does not list (product 'Trainium2' -> " \
           "'Trainium2Z9'; PCI device id 0x7364 -> 0xfe30): the family's accelerator type is 'Trainium2Z9', where " \
           "Ray's NeuronAcceleratorManager answers 'aws-neuron-core'" in said, said


def test_the_neuron_plugin_as_it_is_answers_ray_s_type_for_an_unknown_product() -> None:
    subject = neuron_with()
    said = str(CHECKS["RAC270"].function(subject, "neuron/trn2.48xlarge"))
    assert "NEURON_RT_VISIBLE_CORES as Ray's NeuronAcceleratorManager writes and reads it" in said, said


@pytest.mark.parametrize("mutant", TYPE_MUTANTS, ids=lambda cls: cls.__name__)
def test_a_type_unlike_ray_s_for_an_unknown_product_fails_rac270_naming_it(mutant: type[Healthy]) -> None:
    name = name_of(mutant)
    said = failure(getattr(corpus_ray_types, name.replace("-", "_")), "RAC270", "acme-4")
    assert mutant.KILLED_BY == ("RAC270", INVARIANT)
    made = f"{INVARIANT}, {name}/acme-4 made of a product the catalog does not list (product 'ACME Roadrunner R1' " \
           "-> 'ACME Roadrunner R1Z9')"
    assert made in said and "Ray's NeuronAcceleratorManager answers 'aws-neuron-core'" in said, said


def test_the_neuron_like_control_passes_rac270() -> None:
    said = evidence(corpus_ray_types.c_neuron_like, "RAC270", "acme-4")
    assert "as Ray's NeuronAcceleratorManager writes and reads it" in said, said
