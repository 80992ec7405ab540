"""Held-out grading, round 3 (issue 46, lane D): what its survivors broke, checked on the real reference plugins.

RAC268 on Gaudi: the reference plugin (a module is not responding only when every live field hl-smi prints is
N/A) keeps its health when one measurement is garbage; the held-out defect (any live field N/A) fails naming
the invariant. RAC266 and RAC267 pass on ACME's own plugin (the corpus shows their failing shapes). A plugin
whose fixture directory is relative to the directory its author ran in is told so, not only that it ships none.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from mutant_grading import replaced

from rayaccel.catalog import load_catalog
from rayaccel_conformance.checks import all_checks
from rayaccel_conformance.harness.subject import Subject
from rayaccel_conformance.registry import CheckFailed
from rayaccel_gaudi import health, plugin as gaudi
from rayaccel_testplugins import acme

CHECKS = {c.id: c for c in all_checks()}


def gaudi_subject(health_hook: object) -> Subject:
    here = Path(gaudi.__file__).parent  # the SDK finds these beside a plugin's module; a namespace has none
    return replaced(gaudi, "gaudi", rayaccel_health=health_hook,
                      rayaccel_fixture_dirs=lambda: [str(here / "fixtures")],
                      rayaccel_sku_catalog=lambda: load_catalog(here / "skus.yaml"))


def any_field_missing_is_dead(host, devices):  # type: ignore[no-untyped-def]
    """The held-out defect: a module with ANY live field N/A is called not responding."""
    snapshot = gaudi.quiet_probe(host, port_types=True, port_states=True)
    for device in snapshot.devices if snapshot else []:
        if device.aip.missing:
            device.aip.missing = ["memory.used", "temperature.aip", "power.draw", "utilization.aip"]
    return health.health_of(snapshot, devices)


def test_rac268_gaudi_passes_and_any_unreadable_field_taken_for_a_dead_module_fails() -> None:
    passed = gaudi_subject(gaudi.rayaccel_health).run(CHECKS["RAC268"], "gaudi/hls-gaudi2")
    assert passed.outcome == "passed", passed.evidence
    assert "its health held" in passed.evidence[0] and "power" in passed.evidence[0]
    failed = gaudi_subject(any_field_missing_is_dead).run(CHECKS["RAC268"], "gaudi/hls-gaudi2")
    assert failed.outcome == "failed", failed.evidence
    text = " ".join(failed.evidence)
    assert "invariant unreadable-sensor-costs-its-reading, gaudi/hls-gaudi2" in text
    assert "went healthy -> unhealthy (device-not-responding (fatal))" in text, text


@pytest.mark.parametrize("check_id", ["RAC266", "RAC267"])
def test_acme_passes_the_pci_address_and_link_reading_invariants(check_id: str) -> None:
    result = replaced(acme, "acme").run(CHECKS[check_id], "acme/acme-4")
    assert result.outcome == "passed", result.evidence


def test_a_relative_fixture_directory_is_named_not_only_missing_fixtures() -> None:
    subject = replaced(acme, "acme", rayaccel_fixture_dirs=lambda: ["fixtures/acme"])
    with pytest.raises(CheckFailed) as failed:
        subject.fixture(None)
    text = str(failed.value)
    assert "ships no fixtures" in text
    assert "returns 'fixtures/acme', a path relative to the working directory" in text and "absolute path" in text
