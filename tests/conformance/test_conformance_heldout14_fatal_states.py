"""Held-out grading, round 14 (issue 46, lane K4): a reason that drains its device is reported on an unhealthy device
only (``invariant a-fatal-reason-is-unhealthy``, RAC264).

The sysfs bake ``s3`` declared and reported its corrected-errors reason ``degraded`` with ``fatal=True``; table and
reports agreed, so RAC264's reported-reason-as-declared passed, and its variant with the fault's expected ``fatal``
edited to the code's answer passed ``supported``. The SDK drains only an unhealthy device (the monitor's cordon, Ray's
resources at start, NFD, DRA) while its metrics publish a fatal reason as ``action="drain"``: the device is called
drained and keeps taking work. Two corpus shapes (degraded from a JSON record, unknown from a CSV row) and ``s3``'s
edit on the AMD and Gaudi plugins are named; the reference plugins pass.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from mutant_grading import failure, mutant, wrapped

import rayaccel_amd.plugin
import rayaccel_gaudi.plugin
from rayaccel.records import FamilyDeclaration, HealthReason, HealthReport, ReasonCode
from rayaccel_conformance.checks.fatal_states import fatal_state_failures
from rayaccel_conformance.registry import CHECKS, CheckFailed
from rayaccel_testplugins.corpus_fatal_states import FatalWhileDegraded, FatalWhileUnknown

INVARIANT = "invariant a-fatal-reason-is-unhealthy"


@pytest.mark.parametrize(("shape", "state"), [(FatalWhileDegraded, "degraded"), (FatalWhileUnknown, "unknown")])
def test_a_fatal_reason_on_a_device_that_is_not_unhealthy_is_named(shape: type[FatalWhileDegraded],
                                                                    state: str) -> None:
    plugin = mutant(shape)
    said = failure(plugin, "RAC264", "acme-4")
    assert f"{INVARIANT}, {plugin.name}/acme-4: health_reasons declares 'acme-corrected' {state} with fatal=True" \
        in said, said
    assert f"{INVARIANT}, {plugin.name}/acme-4, fault corrected-2: " in said, said
    assert f"is {state} with fatal reason(s) ['acme-corrected']" in said and "expected" not in said, said


def made_fatal(module: Any, code: str) -> dict[str, Any]:
    """``module``'s family and health hooks with s3's edit: the reason ``code`` declared and reported fatal, its state
    as it was."""
    def family() -> FamilyDeclaration:
        declared: FamilyDeclaration = module.rayaccel_family()
        rows = [row.model_copy(update={"fatal": True}) if row.code == code else row for row in declared.health_reasons]
        return declared.model_copy(update={"health_reasons": rows})

    def health(host: Any, devices: list[Any]) -> list[HealthReport]:
        return [report.model_copy(update={"reasons": [
            reason.model_copy(update={"fatal": True}) if reason.code == code else reason
            for reason in report.reasons]}) for report in module.rayaccel_health(host, devices)]
    return {"rayaccel_family": family, "rayaccel_health": health}


@pytest.mark.parametrize(("module", "name", "fixture", "code", "where"), [
    (rayaccel_amd.plugin, "amd", "mi210-pair", "ecc-deferred", "fault gpu0-one-deferred-ecc"),
    (rayaccel_gaudi.plugin, "gaudi", "hls-gaudi2", "scale-up-port-down", "fault ")])
def test_a_reference_plugin_with_s3s_edit_is_named(module: Any, name: str, fixture: str, code: str,
                                                    where: str) -> None:
    home = str(Path(module.__file__).parent)
    CHECKS["RAC264"].function(wrapped(module, name, home), f"{name}/{fixture}")  # passes as shipped
    subject = wrapped(module, name, home, **made_fatal(module, code))
    with pytest.raises(CheckFailed) as failed:
        CHECKS["RAC264"].function(subject, f"{name}/{fixture}")
    said = str(failed.value)
    assert f"{INVARIANT}, {name}/{fixture}: health_reasons declares {code!r} degraded with fatal=True" in said, said
    assert f"{INVARIANT}, {name}/{fixture}, {where}" in said, said
    assert f"is degraded with fatal reason(s) ['{code}']" in said, said


def test_an_unhealthy_device_with_a_fatal_reason_and_a_degraded_one_without_pass() -> None:
    table = ReasonCode.table((("lost", "unhealthy", True, "gone"), ("warm", "degraded", False, "hot")))
    reports = [HealthReport(device="a", state="unhealthy", reasons=[HealthReason(code="lost", message="", fatal=True),
                                                                    HealthReason(code="warm", message="")]),
               HealthReport(device="b", state="degraded", reasons=[HealthReason(code="warm", message="")])]
    assert fatal_state_failures("x/y", table, [("the healthy fixture", reports)]) == []
