"""Held-out round 9's ``n2`` (issue 46): NVIDIA's uncorrectable-ECC health read from NVML's lifetime (aggregate)
counter instead of the since-boot (volatile) one. dgx-h100's ``ecc-uncorrectable-before-reboot`` (an error before
the last reboot, its row remapped at the reset: aggregate 1, volatile 0) is the state that tells them apart; RAC203
fails such a plugin naming the reading it took for a fault, and passes NVIDIA's own; Gaudi's hls-gaudi3
``lifetime-ecc-only`` (hl-smi's aggregate column 1, volatile 0) is the same state in a CSV row."""

from __future__ import annotations

from typing import Any

import pytest

from rayaccel.plugins.manager import PluginManager
from rayaccel_conformance.checks import all_checks
from rayaccel_conformance.harness.subject import Subject
from rayaccel_conformance.registry import CHECKS, CheckFailed
from rayaccel_nvidia import health

all_checks()  # registers the checks


class LifetimeCounters:
    """NVML as a plugin that asks for the lifetime counter sees it: NVML_VOLATILE_ECC answers NVML_AGGREGATE_ECC."""

    def __init__(self, nvml: Any) -> None:
        self._nvml = nvml

    def __getattr__(self, name: str) -> Any:
        return getattr(self._nvml, "NVML_AGGREGATE_ECC" if name == "NVML_VOLATILE_ECC" else name)


def test_rac203_names_the_lifetime_counter_a_plugin_takes_for_a_fault(monkeypatch: pytest.MonkeyPatch) -> None:
    since_boot = health.device_reasons
    monkeypatch.setattr(health, "device_reasons", lambda nvml, handle: since_boot(LifetimeCounters(nvml), handle))
    with pytest.raises(CheckFailed) as failed:
        CHECKS["RAC203"].run(Subject("nvidia", PluginManager()), "nvidia/dgx-h100")
    named = [line for line in failed.value.evidence if " is reported unhealthy (ecc-uncorrectable: " in line]
    assert len(named) == 1, failed.value.evidence
    assert named[0].startswith("fault ecc-uncorrectable-before-reboot: GPU-")
    assert ("changes on it only library nvml devices.7.ecc.aggregate.uncorrected 0 -> 1, library nvml "
            "devices.7.remapped_rows.1 0 -> 1, and states it healthy") in named[0]


@pytest.mark.parametrize(("plugin", "fixture", "fault"), [
    ("nvidia", "nvidia/dgx-h100", "ecc-uncorrectable-before-reboot"),
    ("gaudi", "gaudi/hls-gaudi3", "lifetime-ecc-only")])
def test_rac203_passes_the_plugins_reading_the_since_boot_counter(plugin: str, fixture: str, fault: str) -> None:
    evidence = CHECKS["RAC203"].run(Subject(plugin, PluginManager()), fixture)
    assert f" {fault}," in str(evidence)


def test_rac203_names_the_lifetime_column_a_gaudi_plugin_takes_for_a_fault(monkeypatch: pytest.MonkeyPatch) -> None:
    # The same defect in another shape: hl-smi's CSV, whose aggregate and volatile counts are columns of one row.
    from dataclasses import replace

    from rayaccel_gaudi import health as gaudi_health

    since_boot = gaudi_health.report_for
    monkeypatch.setattr(gaudi_health, "report_for", lambda device: since_boot(
        replace(device, aip=replace(device.aip, ecc_uncorrected=device.aip.ecc_uncorrected_lifetime))))
    with pytest.raises(CheckFailed) as failed:
        CHECKS["RAC203"].run(Subject("gaudi", PluginManager()), "gaudi/hls-gaudi3")
    named = [line for line in failed.value.evidence if line.startswith("fault lifetime-ecc-only: 01P0-")]
    assert len(named) == 1, failed.value.evidence
    assert "is reported unhealthy (ecc-uncorrectable: 1 uncorrectable ECC errors since the driver loaded)" in named[0]
    assert "field 12 (ecc.errors.uncorrected.aggregate.total) 0 -> 1" in named[0]
