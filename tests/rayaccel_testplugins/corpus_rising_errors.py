"""Corpus mutants whose reason about corrected errors is given where the count is 0 and taken back where it is not
(issue 46, mutation round 10's ``amd.health:72``: the AMD plugin's ``correctable > 0`` made ``== 0``, so every clean
GPU carried ``ecc-correctable`` and one with correctable errors only, amd-smi's common ``CORRECTABLE_COUNT: 2,
UNCORRECTABLE_COUNT: 0``, did not). Each machine states the corrected and uncorrected counts as 0 on every card,
as every recorded fixture does, so every fixture passes; RAC211 raises one card's error counts by a few and the
reason must not go (``invariant more-errors-clear-no-reason``). Two shapes: the driver's files
(``acme<i>/ecc_corrected``, ``acme<i>/ecc_uncorrected``), the count compared ``== 0``; and ``acme-smi ecc --json``
(a record per card, by uuid), the count taken for a flag (``not corrected``).

Imported by tests/conformance/test_conformance_corpus.py (``corpus.MUTANT_MODULES``); each is bound here under its
name (``c-corrected-reason-at-zero`` as ``c_corrected_reason_at_zero``) so a Ray node loads it by ``RAYACCEL_PLUGINS``.
"""

from __future__ import annotations

import json

from rayaccel import Device, HealthReason, HealthReport, Host
from rayaccel_testplugins import acme
from rayaccel_testplugins.corpus import SYSFS, Healthy, add_import_defect, read_machine, tool_output, write_machine

FILES_MACHINE = "acme-4-ecc-files"
JSON_MACHINE = "acme-4-ecc-json"
ECC_ARGV = ("acme-smi", "ecc", "--json")


def add_files_machine(plugin: str) -> None:
    """The plugin's acme-4 with each card's ECC counts in the driver's files, none counted yet."""
    data = read_machine(plugin)
    data["name"], data["description"] = FILES_MACHINE, f"{data['description']}, ECC counts in driver files"
    for i in range(4):
        for name in ("ecc_corrected", "ecc_uncorrected"):
            data["host"]["files"][f"{SYSFS}/acme{i}/{name}"] = "0\n"
    write_machine(plugin, FILES_MACHINE, data)


def add_json_machine(plugin: str) -> None:
    """The plugin's acme-4 with each card's ECC counts printed by ``acme-smi ecc --json``, none counted yet."""
    data = read_machine(plugin)
    data["name"], data["description"] = JSON_MACHINE, f"{data['description']}, ECC counts from acme-smi"
    ids = [data["host"]["files"][f"{SYSFS}/acme{i}/uuid"].strip() for i in range(4)]
    report = {"cards": [{"uuid": card, "ecc": {"corrected_count": 0, "uncorrected_count": 0}} for card in ids]}
    data["host"]["commands"] = {**(data["host"].get("commands") or {}),
                                " ".join(ECC_ARGV): {"stdout": json.dumps(report) + "\n", "returncode": 0}}
    write_machine(plugin, JSON_MACHINE, data)


def with_ecc(report: HealthReport, corrected: float | None, uncorrected: float | None,
             corrected_reason: bool) -> HealthReport:
    """The card's report with its ECC reasons: uncorrected errors drain it; corrected ones are said, still healthy."""
    reasons, state = list(report.reasons), report.state
    if uncorrected:
        reasons.append(HealthReason(code="ecc-uncorrected", message=f"{uncorrected:g} uncorrected ECC errors",
                                    fatal=True))
        state = "unhealthy"
    if corrected is not None and corrected_reason:
        reasons.append(HealthReason(code="ecc-corrected", message=f"{corrected:g} corrected ECC errors"))
    return report.model_copy(update={"state": state, "reasons": reasons})


def ecc_files(host: Host, device: Device) -> tuple[float | None, float | None]:
    """The card's corrected and uncorrected counts from the driver's files; (None, None) where it writes none."""
    path = f"{SYSFS}/acme{device.index}"
    if not host.exists(f"{path}/ecc_corrected"):
        return None, None
    return acme._number(host, f"{path}/ecc_corrected"), acme._number(host, f"{path}/ecc_uncorrected")


class CorrectedReasonAtZero(Healthy):
    DEFECT = ("a card's corrected-error reason given where the driver's count is 0 (`== 0` for `> 0`), and not "
              "where corrected errors were counted")
    KILLED_BY = ("RAC211", "invariant more-errors-clear-no-reason")

    def __init__(self, name: str) -> None:
        super().__init__(name)
        add_files_machine(name)

    def rayaccel_health(self, host: Host, devices: list[Device]) -> list[HealthReport]:
        reports = []
        for device, report in zip(devices, super().rayaccel_health(host, devices), strict=True):
            corrected, uncorrected = ecc_files(host, device)
            reports.append(with_ecc(report, corrected, uncorrected, corrected == 0))  # the defect: > 0
        return reports


class CorrectedCountAsFlag(Healthy):
    DEFECT = ("a card's corrected-error count from acme-smi's JSON taken for a flag the wrong way round (`not "
              "corrected`): the reason given on every clean card, and taken back once errors are counted")
    KILLED_BY = ("RAC211", "invariant more-errors-clear-no-reason")

    def __init__(self, name: str) -> None:
        super().__init__(name)
        add_json_machine(name)

    def ecc_records(self, host: Host) -> dict[str, dict[str, float]]:
        """acme-smi's ECC record per card id; {} where the tool is not installed or unreadable."""
        try:
            return {str(card["uuid"]): card["ecc"] for card in json.loads(tool_output(host, ECC_ARGV) or "")["cards"]}
        except (ValueError, KeyError, TypeError):
            return {}

    def rayaccel_health(self, host: Host, devices: list[Device]) -> list[HealthReport]:
        records = self.ecc_records(host)
        reports = []
        for device, report in zip(devices, super().rayaccel_health(host, devices), strict=True):
            ecc = records.get(device.id)
            if ecc is None:
                reports.append(report)
                continue
            corrected = ecc.get("corrected_count")
            reports.append(with_ecc(report, corrected, ecc.get("uncorrected_count"), not corrected))  # the defect
        return reports


for _cls in (CorrectedReasonAtZero, CorrectedCountAsFlag):
    _plugin = add_import_defect(_cls)
    globals()[_plugin.name.replace("-", "_")] = _plugin
