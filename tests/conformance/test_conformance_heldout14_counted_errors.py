"""Held-out grading, round 14 (issue 46, lane K3): an ECC error is counted once, in its own class (``invariant
an-error-is-counted-once``, RAC223).

The CSV bake ``c3`` published ``ecc_errors_corrected`` as corrected plus uncorrected ("every error the ECC logic
saw"): each uncorrectable error counted in both classes. Every fixture's counters are 0, so no build told the sum from
its part, and it passed ``supported``. Under each fault of the fixture that only raises numbers, the ECC counters
together may rise by no more than the machine's numbers rose: two corpus shapes and ``c3``'s edit on the AMD plugin are
named; the reference plugins pass.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from mutant_grading import failure, mutant, wrapped

import rayaccel_amd.plugin
import rayaccel_gaudi.plugin
import rayaccel_nvidia.plugin
from rayaccel.records import MetricSample
from rayaccel_conformance.checks.counted_errors import errors_counted_twice
from rayaccel_conformance.registry import CHECKS, CheckFailed
from rayaccel_testplugins.corpus_counted_errors import EccTotalInBothClasses, EccUncorrectedCountsAll

INVARIANT = "invariant an-error-is-counted-once"


@pytest.mark.parametrize("shape", [EccUncorrectedCountsAll, EccTotalInBothClasses])
def test_an_error_counted_in_both_classes_is_named(shape: type[EccUncorrectedCountsAll]) -> None:
    plugin = mutant(shape)
    said = failure(plugin, "RAC223", "acme-4")
    assert f"{INVARIANT}, {plugin.name}/acme-4 under fault corrected-2: the machine's numbers rose by 12 in all" in said
    assert "yet the ECC counters rose by 24" in said and "expected" not in said, said


def counted_in_both(module: Any) -> Any:
    """``module``'s rayaccel_metrics with c3's edit: ecc_errors_corrected given the uncorrected errors too."""
    def metrics(host: Any, devices: list[Any]) -> list[MetricSample]:
        out = list(module.rayaccel_metrics(host, devices))
        uncorrected = {s.device: s.value for s in out if s.name == "ecc_errors_uncorrected"}
        return [s.model_copy(update={"value": s.value + uncorrected.get(s.device, 0.0)})
                if s.name == "ecc_errors_corrected" else s for s in out]
    return metrics


def test_the_amd_plugin_with_c3s_edit_is_named() -> None:
    home = str(Path(rayaccel_amd.plugin.__file__).parent)
    CHECKS["RAC223"].function(wrapped(rayaccel_amd.plugin, "amd", home), "amd/mi300x-8")
    subject = wrapped(rayaccel_amd.plugin, "amd", home, rayaccel_metrics=counted_in_both(rayaccel_amd.plugin))
    with pytest.raises(CheckFailed) as failed:
        CHECKS["RAC223"].function(subject, "amd/mi300x-8")
    said = str(failed.value)
    assert f"{INVARIANT}, amd/mi300x-8 under fault gpu3-ecc-uncorrectable: the machine's numbers rose by 4" in said
    assert "yet the ECC counters rose by 8" in said, said


@pytest.mark.parametrize(("module", "name"), [(rayaccel_amd.plugin, "amd"), (rayaccel_gaudi.plugin, "gaudi"),
                                              (rayaccel_nvidia.plugin, "nvidia")])
def test_reference_plugins_count_each_error_once(module: Any, name: str) -> None:
    subject = wrapped(module, name, str(Path(module.__file__).parent))
    family = subject.family().name
    for ref in (r for r in subject.fixture_paths() if r.startswith(f"{name}/")):
        fam = subject.inventory(ref).family(family)
        assert fam is None or errors_counted_twice(subject, subject.fixture(ref), fam) == [], ref
