"""Held-out grading, round 17 (issue 46, lane J11): a Gaudi type unlike Ray's for a module the catalog does not list.

``g1`` (a Gaudi wrapper) typed an uncatalogued module by hl-smi's board name alone (``HL-338``), without the
``Intel-`` Ray's HPU manager writes before the HPU runtime's device name; every fixture's module is catalogued, so
the catalog's ``Intel-GAUDI2`` won, and RAC270 compared nothing: Ray's manager reads ``habana_frameworks``, which the
suite cannot wire to a fixture. RAC270's ``invariant accelerator-type-as-ray-answers-it`` now stands the runtime in
(``ray_runtimes``) to learn the frame Ray writes around the name, and holds the family's type to it, as recorded and
with each product name written as one the catalog cannot list yet. Shown on the Gaudi plugin with g1's one edit, on
two corpus shapes graded alone (one claimant of HABANA_VISIBLE_MODULES per manager), and passed by the Gaudi plugin
and by the corpus's HPU-like control.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from mutant_grading import evidence, failure, wrapped

import rayaccel
import rayaccel_gaudi.plugin as gaudi
from rayaccel_conformance.checks.experimental import _ray_validator
from rayaccel_conformance.checks.ray_runtimes import in_frame, ray_type_frame
from rayaccel_conformance.registry import CHECKS, CheckFailed
from rayaccel_testplugins import corpus_ray_types
from rayaccel_testplugins.corpus import Healthy
from rayaccel_testplugins.corpus_ray_types import HPU_TYPE_MUTANTS

INVARIANT = "invariant accelerator-type-as-ray-answers-it"
GAUDI_PACKAGE = Path(gaudi.__file__).parent
SAID = "Ray's HPUAcceleratorManager answers 'Intel-' + the runtime's device name for every node it types"


def name_of(cls: type[Healthy]) -> str:
    return "c-" + "".join(f"-{c.lower()}" if c.isupper() else c for c in cls.__name__).lstrip("-")


def gaudi_with(**hooks: Any) -> Any:
    return wrapped(gaudi, "gaudi", str(GAUDI_PACKAGE), **hooks)


def board_name_typed(host: rayaccel.Host, devices: list[rayaccel.Device],
                     topology: rayaccel.Topology) -> rayaccel.ResourceContribution:
    """g1's edit: hl-smi's board name as the type, without Ray's prefix (the catalog's wins for a SKU it lists)."""
    named = rayaccel.to_label_value(devices[0].product_name) if devices else None
    return rayaccel.ResourceContribution(accelerator_type=named)


def test_ray_s_hpu_manager_frames_the_runtime_s_name_and_is_left_as_it_was() -> None:
    """The oracle: Ray's own manager, its runtime stood in; afterwards Ray sees no runtime again."""
    manager = _ray_validator("HPU", "HABANA_VISIBLE_MODULES")
    assert ray_type_frame(manager) == ("Intel-", "")
    assert manager.get_current_node_accelerator_type() is None
    assert not [name for name in sys.modules if name.startswith("habana_frameworks")]
    assert in_frame("Intel-GAUDI2", ("Intel-", "")) and not in_frame("HL-338", ("Intel-", ""))
    assert not in_frame("Intel-", ("Intel-", "")) and not in_frame(None, ("Intel-", ""))


def test_g1_board_name_as_type_fails_rac270_naming_it() -> None:
    subject = gaudi_with(rayaccel_resources=board_name_typed)
    with pytest.raises(CheckFailed) as failed:
        CHECKS["RAC270"].function(subject, "gaudi/hls-gaudi2")
    said = str(failed.value)
    assert f"{INVARIANT}, gaudi/hls-gaudi2 made of a product the catalog does not list (product 'HL-225' -> " \
           f"'HL-225Z9'): the family's accelerator type is 'HL-225Z9', where {SAID}" in said, said


def test_the_gaudi_plugin_as_it_is_types_an_unknown_module_in_ray_s_frame() -> None:
    subject = gaudi_with()
    said = str(CHECKS["RAC270"].function(subject, "gaudi/hls-gaudi3"))
    assert "HABANA_VISIBLE_MODULES as Ray's HPUAcceleratorManager writes and reads it" in said, said


@pytest.mark.parametrize("mutant", HPU_TYPE_MUTANTS, ids=lambda cls: cls.__name__)
def test_a_type_out_of_ray_s_frame_for_an_unknown_product_fails_rac270_naming_it(mutant: type[Healthy]) -> None:
    name = name_of(mutant)
    said = failure(getattr(corpus_ray_types, name.replace("-", "_")), "RAC270", "acme-4")
    assert mutant.KILLED_BY == ("RAC270", INVARIANT)
    made = f"{INVARIANT}, {name}/acme-4 made of a product the catalog does not list (product 'ACME Roadrunner R1' " \
           "-> 'ACME Roadrunner R1Z9')"
    assert made in said and SAID in said, said


def test_the_hpu_like_control_passes_rac270() -> None:
    said = evidence(corpus_ray_types.c_hpu_like, "RAC270", "acme-4")
    assert "as Ray's HPUAcceleratorManager writes and reads it" in said, said
