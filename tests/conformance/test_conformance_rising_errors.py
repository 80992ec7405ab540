"""Mutation round 10 (issue 46, lane J18): more errors counted take no reason back and make no device better
(``invariant more-errors-clear-no-reason``, RAC211).

The round's ``amd.health:72`` survivor compared a GPU's correctable ECC count ``== 0`` where ``> 0`` was meant: every
clean GPU carried ``ecc-correctable`` and a GPU with correctable errors only (amd-smi's ``CORRECTABLE_COUNT: 2,
UNCORRECTABLE_COUNT: 0``, ROCm/device-metrics-exporter#368) did not. Every fixture counts 0 on healthy GPUs and no
fault raises correctable errors alone, and a fault's expected reasons are "among others", so nothing saw it. RAC211
now raises every error count the machine states for one device by a few: every reason it had must still be given.
Both corpus shapes and the round's edit on the AMD plugin are named; the controls and the AMD plugin as shipped pass.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from mutant_grading import evidence, failure, mutant, wrapped

import rayaccel_amd.health
import rayaccel_amd.plugin
from rayaccel import Device, HealthReason, HealthReport, Host
from rayaccel_amd.readings import GpuRecord
from rayaccel_conformance.checks.readings import Reading
from rayaccel_conformance.checks.rising_errors import counts_errors
from rayaccel_conformance.registry import CHECKS, CheckFailed
from rayaccel_testplugins.corpus import Healthy
from rayaccel_testplugins.corpus_rising_errors import (
    FILES_MACHINE,
    JSON_MACHINE,
    CorrectedCountAsFlag,
    CorrectedReasonAtZero,
    ecc_files,
    with_ecc,
)

INVARIANT = "invariant more-errors-clear-no-reason"
AMD = str(Path(rayaccel_amd.plugin.__file__).parent)
CARD = "ACME-0001-5e1f-4c2a-9d3b-000000000001"


class CorrectedReasonAboveZero(CorrectedReasonAtZero):
    """The driver's files read right: the reason from the first corrected error."""

    def rayaccel_health(self, host: Host, devices: list[Device]) -> list[HealthReport]:
        reports = []
        for device, report in zip(devices, Healthy.rayaccel_health(self, host, devices), strict=True):
            corrected, uncorrected = ecc_files(host, device)
            reports.append(with_ecc(report, corrected, uncorrected, bool(corrected and corrected > 0)))
        return reports


class CorrectedCountAsCount(CorrectedCountAsFlag):
    """acme-smi's JSON read right: the count taken as a count."""

    def rayaccel_health(self, host: Host, devices: list[Device]) -> list[HealthReport]:
        records = self.ecc_records(host)
        reports = []
        for device, report in zip(devices, Healthy.rayaccel_health(self, host, devices), strict=True):
            ecc = records.get(device.id) or {}
            corrected = ecc.get("corrected_count")
            reports.append(with_ecc(report, corrected, ecc.get("uncorrected_count"), bool(corrected)))
        return reports


@pytest.mark.parametrize(("shape", "machine", "first"), [
    (CorrectedReasonAtZero, FILES_MACHINE, "file /sys/class/acme/acme1/"),
    (CorrectedCountAsFlag, JSON_MACHINE, "file /sys/class/acme/acme1/")], ids=["driver-files", "tool-json"])
def test_a_reason_taken_back_by_more_errors_is_named(shape: type[Healthy], machine: str, first: str) -> None:
    plugin = mutant(shape)
    said = failure(plugin, "RAC211", machine)
    assert f"{INVARIANT}, {plugin.name}/{machine} with {CARD}'s 3 error counts raised by 3 ({first}" in said, said
    assert f"{CARD} had reason ecc-corrected (0 corrected ECC errors); with more errors counted it is gone" in said


@pytest.mark.parametrize(("cls", "machine"), [(CorrectedReasonAboveZero, FILES_MACHINE),
                                              (CorrectedCountAsCount, JSON_MACHINE)], ids=["driver-files", "tool-json"])
def test_reasons_from_the_first_error_pass_on_the_same_machine(cls: type[Healthy], machine: str) -> None:
    said = evidence(cls("c-" + cls.__name__.lower()), "RAC211", machine)
    assert f"{CARD}'s 3 error counts raised" in said, said


def test_the_rounds_amd_edit_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    own = rayaccel_amd.health.report_for

    def correctable_at_zero(gpu: GpuRecord) -> HealthReport:
        """amd.health:72's edit: ``(gpu.ecc.correctable or 0) == 0`` where the plugin says ``> 0``."""
        report = own(gpu)
        reasons = [r for r in report.reasons if r.code != "ecc-correctable"]
        if gpu.ecc is not None and (gpu.ecc.correctable or 0) == 0:
            reasons.append(HealthReason(code="ecc-correctable",
                                        message=f"{gpu.ecc.correctable} correctable ECC errors"))
        return HealthReport(device=report.device, state=report.state, reasons=reasons)

    monkeypatch.setattr(rayaccel_amd.health, "report_for", correctable_at_zero)
    subject = wrapped(rayaccel_amd.plugin, "amd", AMD)
    for fixture, source in (("mi300x-8", "`amd-smi metric --json` output gpu_data.1.ecc.total_correctable_count"),
                            ("mi210-pair", "library amdsmi gpus.1.total_ecc_count.correctable_count")):
        with pytest.raises(CheckFailed) as failed:
            CHECKS["RAC211"].function(subject, f"amd/{fixture}")
        said = str(failed.value)
        assert f"{INVARIANT}, amd/{fixture} with " in said and f"raised by 3 ({source}, ...)" in said, said
        assert "had reason ecc-correctable (0 correctable ECC errors); with more errors counted it is gone" in said


@pytest.mark.parametrize("fixture", ["mi300x-8", "mi210-pair", "mi300x-cpx-nps4"])
def test_the_amd_plugin_as_shipped_keeps_its_reasons(fixture: str) -> None:
    said = str(CHECKS["RAC211"].function(wrapped(rayaccel_amd.plugin, "amd", AMD), f"amd/{fixture}"))
    assert "error counts raised" in said, said


@pytest.mark.parametrize(("reading", "counted"), [
    (Reading("library", "amdsmi", ("gpus", 1, "total_ecc_count", "correctable_count"), 0), True),
    (Reading("library", "nvml", ("devices", 1, "ecc", "volatile", "uncorrected"), 0), True),
    (Reading("file", "/sys/class/acme/acme1/fatal_errors", (), 0), True),
    (Reading("table", "hl-smi -Q index,ecc.errors.corrected.volatile.total -f csv,noheader", (0, 1), 0, "1, 0"), True),
    (Reading("library", "nvml", ("devices", 1, "ecc_mode"), 1), False),  # a mode, not a count
    (Reading("library", "nvml", ("devices", 1, "xid_errors", 0), 79), False),  # an event's number in a list
    (Reading("table", "hl-smi -Q index,power.draw -f csv,noheader", (0, 1), 96, "1, 96"), False),
    (Reading("library", "amdsmi", ("gpus", 1, "ecc_correctable_threshold"), 100), False)])
def test_an_error_count_is_what_the_machine_names_one(reading: Reading, counted: bool) -> None:
    assert counts_errors(reading) is counted
