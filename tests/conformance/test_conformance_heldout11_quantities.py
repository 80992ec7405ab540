"""Held-out grading, round 11 (issue 46, lane F1): a quantity rule narrower than Ray's own manager for the family.

``p2`` (a TPU wrapper) declared quantity choices [1, 4, 8] ("no 2-chip GCE shape"), where Ray 2.60's TPU manager
accepts 1, 2, 4, 8 (``TPU_VALID_CHIP_OPTIONS``) and writes the sub-host bounds for two chips, as the plugin's own
visible env does. RAC106 compared one direction only (the rule accepting what Ray refuses). Its ``invariant
whole-quantities-as-ray-takes-them`` names a whole quantity Ray's manager accepts that the plugin's rule (which the
SDK checks requests with) refuses; fractions stay the family's word (Ray's GPU managers take any). Shown on the TPU
plugin with p2's one edit, on two corpus shapes graded alone (one claimant of a Ray variable per manager), and
passed by the five reference plugins' rules.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from mutant_grading import graded, wrapped

from rayaccel import FamilyDeclaration, QuantityRule
from rayaccel_conformance.registry import CHECKS, CheckFailed
from rayaccel_testplugins import corpus_quantity_choices
from rayaccel_testplugins.corpus import Healthy
from rayaccel_testplugins.corpus_quantity_choices import QUANTITY_MUTANTS
from rayaccel_tpu import plugin as tpu

INVARIANT = "invariant whole-quantities-as-ray-takes-them"
TPU_PACKAGE = Path(tpu.__file__).parent


def name_of(cls: type[Healthy]) -> str:
    return "c-" + "".join(f"-{c.lower()}" if c.isupper() else c for c in cls.__name__).lstrip("-")


def tpu_with(**hooks: Any) -> Any:
    return wrapped(tpu, "tpu", str(TPU_PACKAGE), **hooks)


def test_p2_tpu_choices_without_two_fail_rac106_naming_it() -> None:
    def without_two() -> FamilyDeclaration:
        return tpu.rayaccel_family().model_copy(update={"quantity_rule": QuantityRule(kind="choices",
                                                                                      choices=[1, 4, 8])})

    subject = tpu_with(rayaccel_family=without_two)
    with pytest.raises(CheckFailed) as failed:
        CHECKS["RAC106"].function(subject)
    said = str(failed.value)
    assert f"{INVARIANT}: the rule refuses 2 TPU" in said and "which Ray's TPUAcceleratorManager accepts" in said, said


def test_the_tpu_plugin_as_it_is_takes_what_ray_takes() -> None:
    subject = tpu_with()
    said = str(CHECKS["RAC106"].function(subject))
    assert "agrees with Ray's TPUAcceleratorManager" in said, said


@pytest.mark.parametrize("mutant", QUANTITY_MUTANTS, ids=lambda cls: cls.__name__)
def test_a_whole_quantity_ray_takes_refused_fails_rac106_naming_it(mutant: type[Healthy]) -> None:
    plugin = getattr(corpus_quantity_choices, name_of(mutant).replace("-", "_"))
    subject = graded(plugin)  # first: it registers the checks that CHECKS holds
    with pytest.raises(CheckFailed) as failed:
        CHECKS["RAC106"].function(subject)
    said = str(failed.value)
    assert mutant.KILLED_BY == ("RAC106", INVARIANT)
    assert f"{INVARIANT}: the rule refuses 3 {plugin.family.resource_name}" in said \
        or f"{INVARIANT}: the rule refuses 2 {plugin.family.resource_name}" in said, said


@pytest.mark.parametrize("mutant", QUANTITY_MUTANTS, ids=lambda cls: cls.__name__)
def test_the_same_family_with_ray_s_whole_rule_passes_rac106(mutant: type[Healthy]) -> None:
    class Whole(mutant):  # type: ignore[misc,valid-type]
        rule = QuantityRule(kind="whole")

    subject = graded(Whole(f"c-whole-{mutant.rule.choices[-1]}"))  # the mutant's name and a suffix exceed 32
    said = str(CHECKS["RAC106"].function(subject))
    assert "agrees with Ray's" in said, said
