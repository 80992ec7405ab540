"""Corpus mutants whose health reason fires one step off the threshold their declared row states (issue 46,
held-out round 10's ``s1``: a sysfs bake degrading a device past 1000 corrected errors, ``>``, where its reason
table says "at least 1000"). A fault standing past the threshold fires the reason either way, so only the row itself
tells: RAC264's ``a-declared-threshold-is-where-it-fires`` sets the reading the fault moves at the row's threshold and
one step short of it.

Each machine is acme-4 with ``acme-smi`` listing each card's ECC counters (all 0) and a fault ``corrected-2`` raising
card 2's corrected count to 12, past the threshold (10) either way, degraded. Two shapes: a JSON record read with
``>`` where the row says "at least 10" (fires one late), and a CSV row read with ``>=`` where the row says "more than
10" (fires one early). :class:`AtLeastAsDeclared` is the right reader. Imported by
tests/conformance/test_conformance_corpus.py (``corpus.MUTANT_MODULES``); each mutant is bound here under its name
(``c-threshold-past-at-least`` as ``c_threshold_past_at_least``) so a Ray node loads it by ``RAYACCEL_PLUGINS``.
"""

from __future__ import annotations

import json
from collections.abc import Callable

from rayaccel import Device, HealthReason, HealthReport, Host, MetricSample, ReasonCode, malformed
from rayaccel_testplugins import acme
from rayaccel_testplugins.corpus import Healthy, add_import_defect, read_machine, tool_output, write_machine

ECC_JSON = ("acme-smi", "--json", "--query-ecc")
ECC_CSV = ("acme-smi", "--query-ecc=index,uuid,ecc.corrected,ecc.uncorrected", "--format=csv,noheader")
#: The corrected count the reason's row names, and card 2's count under the fault (past it either way).
THRESHOLD = 10
RAISED = 12
CODE = "acme-corrected"


def _rows(phrase: str) -> list[ReasonCode]:
    return ReasonCode.table((
        ("acme-fatal", "unhealthy", True, "the driver counts fatal errors: the card needs a reset"),
        ("acme-counters-unreadable", "unknown", False, "the card's error counters cannot be read"),
        ("acme-lost", "unhealthy", True, "the card fell off the bus"),
        (CODE, "degraded", False, f"{phrase} {THRESHOLD} corrected memory errors: the card should be looked at")))


def _json_output(ids: list[str], corrected: list[int]) -> str:
    cards = [{"index": i, "uuid": ids[i], "ecc": {"corrected": corrected[i], "uncorrected": 0}} for i in range(4)]
    return json.dumps({"cards": cards}, indent=1) + "\n"


def _csv_output(ids: list[str], corrected: list[int]) -> str:
    return "".join(f"{i}, {ids[i]}, {corrected[i]}, 0\n" for i in range(4))


def _add_ecc_tool(plugin: str, command: tuple[str, ...], render: Callable[[list[str], list[int]], str]) -> None:
    """The plugin's acme-4 with ``command`` printing each card's ECC counters, all 0, and the fault raising card 2's
    corrected count past the threshold; once, though every process importing the corpus calls it again."""
    data = read_machine(plugin)
    files = data["host"]["files"]
    ids = [files[f"/sys/class/acme/acme{i}/uuid"].strip() for i in range(4)]
    line = " ".join(command)
    if line in (data["host"].get("commands") or {}):
        return
    data["description"] = f"{data['description']}, ECC counters listed by acme-smi"
    data["host"]["commands"] = {**(data["host"].get("commands") or {}), line: {"stdout": render(ids, [0] * 4)}}
    data["perturbations"] = []  # the tool names each card by its uuid: renaming the driver's files contradicts it
    data["faults"] = [*(data.get("faults") or []), {
        "name": "corrected-2", "kind": "ecc",
        "description": f"card 2 corrected {RAISED} memory errors, past the {THRESHOLD} its reason's row names",
        "patch": {"commands": {line: {"stdout": render(ids, [0, 0, RAISED, 0])}}},
        "expected": {"health": {ids[2]: "degraded"}, "reasons": {ids[2]: [CODE]}}}]
    write_machine(plugin, "acme-4", data)


def _count(value: object, what: str, card: object) -> int | None:
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < 2**53:
        malformed(what, value, "a whole number", where=f"card {card}")
        return None
    return value


def _json_counts(host: Host) -> dict[str, tuple[int, int]]:
    """Each card's (corrected, uncorrected) counts by uuid, from acme-smi's JSON."""
    stdout = tool_output(host, ECC_JSON)
    try:
        cards = json.loads(stdout)["cards"] if stdout is not None else []
    except (ValueError, KeyError, TypeError):
        malformed(" ".join(ECC_JSON), "its output", "JSON with an ECC record per card")
        return {}
    counts = {}
    for card in cards if isinstance(cards, list) else []:
        uuid, ecc = card.get("uuid"), card.get("ecc") or {}
        corrected = _count(ecc.get("corrected"), "ecc.corrected", uuid)
        uncorrected = _count(ecc.get("uncorrected"), "ecc.uncorrected", uuid)
        if isinstance(uuid, str) and corrected is not None and uncorrected is not None:
            counts[uuid] = (corrected, uncorrected)
    return counts


def _csv_counts(host: Host) -> dict[str, tuple[int, int]]:
    """Each card's (corrected, uncorrected) counts by uuid, from acme-smi's CSV."""
    counts = {}
    for line in (tool_output(host, ECC_CSV) or "").splitlines():
        cells = [cell.strip() for cell in line.split(",")]
        if len(cells) != 4 or not cells[0].isdigit():
            if line.strip():
                malformed(" ".join(ECC_CSV), line, "index, uuid, ecc.corrected, ecc.uncorrected")
            continue
        corrected, uncorrected = _count(cells[2], "ecc.corrected", cells[1]), _count(cells[3], "ecc.uncorrected",
                                                                                       cells[1])
        if corrected is not None and uncorrected is not None:
            counts[cells[1]] = (corrected, uncorrected)
    return counts


def _counts(host: Host, command: tuple[str, ...]) -> dict[str, tuple[int, int]]:
    return _json_counts(host) if command == ECC_JSON else _csv_counts(host)


def _set_up(plugin: Healthy, command: tuple[str, ...], phrase: str) -> None:
    """The plugin's family declaring the rows, and its machine with the tool and the fault."""
    plugin.family = plugin.family.model_copy(update={"health_reasons": _rows(phrase)})
    _add_ecc_tool(plugin.name, command, _json_output if command == ECC_JSON else _csv_output)


def _health(host: Host, devices: list[Device], command: tuple[str, ...],
            past: Callable[[int], bool]) -> list[HealthReport]:
    """acme's health, a card whose counters the tool does not give unknown, and one ``past`` the corrected count
    degraded."""
    counts = _counts(host, command)
    reports = []
    for report in acme.rayaccel_health(host, devices):
        if report.state == "healthy" and report.device not in counts:  # its ECC counters could not be read
            report = HealthReport(device=report.device, state="unknown", reasons=[
                HealthReason(code="acme-counters-unreadable", message="acme-smi gave no ECC counters for it")])
        elif report.state == "healthy" and past(counts[report.device][0]):
            report = HealthReport(device=report.device, state="degraded", reasons=[
                HealthReason(code=CODE, message=f"{counts[report.device][0]} corrected memory errors")])
        reports.append(report)
    return reports


def _metrics(plugin: Healthy, host: Host, devices: list[Device], command: tuple[str, ...]) -> list[MetricSample]:
    """The healthy samples of each card and, where the tool gave them, its ECC counts."""
    counts = _counts(host, command)
    out = []
    for device in devices:
        out += plugin.samples(host, device)
        if device.id in counts:
            corrected, uncorrected = counts[device.id]
            out += [MetricSample(device=device.id, name="ecc_errors_corrected", unit="count", value=corrected),
                    MetricSample(device=device.id, name="ecc_errors_uncorrected", unit="count", value=uncorrected)]
    return out


class AtLeastAsDeclared(Healthy):
    """Degraded from the tenth corrected error, as its row says (the right reader)."""

    def __init__(self, name: str) -> None:
        super().__init__(name)
        _set_up(self, ECC_JSON, "at least")

    def rayaccel_health(self, host: Host, devices: list[Device]) -> list[HealthReport]:
        return _health(host, devices, ECC_JSON, lambda corrected: corrected >= THRESHOLD)

    def rayaccel_metrics(self, host: Host, devices: list[Device]) -> list[MetricSample]:
        return _metrics(self, host, devices, ECC_JSON)


class ThresholdPastAtLeast(Healthy):
    DEFECT = (f"a card is degraded only past {THRESHOLD} corrected errors (`>`), where its declared row says 'at least "
              f"{THRESHOLD}': the JSON record's count compared one step late")
    KILLED_BY = ("RAC264", "invariant a-declared-threshold-is-where-it-fires")

    def __init__(self, name: str) -> None:
        super().__init__(name)
        _set_up(self, ECC_JSON, "at least")

    def rayaccel_health(self, host: Host, devices: list[Device]) -> list[HealthReport]:
        return _health(host, devices, ECC_JSON, lambda corrected: corrected > THRESHOLD)  # the defect

    def rayaccel_metrics(self, host: Host, devices: list[Device]) -> list[MetricSample]:
        return _metrics(self, host, devices, ECC_JSON)


class ThresholdAtMoreThan(Healthy):
    DEFECT = (f"a card is degraded at {THRESHOLD} corrected errors already (`>=`), where its declared row says 'more "
              f"than {THRESHOLD}': the CSV row's count compared one step early")
    KILLED_BY = ("RAC264", "invariant a-declared-threshold-is-where-it-fires")

    def __init__(self, name: str) -> None:
        super().__init__(name)
        _set_up(self, ECC_CSV, "more than")

    def rayaccel_health(self, host: Host, devices: list[Device]) -> list[HealthReport]:
        return _health(host, devices, ECC_CSV, lambda corrected: corrected >= THRESHOLD)  # the defect

    def rayaccel_metrics(self, host: Host, devices: list[Device]) -> list[MetricSample]:
        return _metrics(self, host, devices, ECC_CSV)


for _cls in (ThresholdPastAtLeast, ThresholdAtMoreThan):
    _plugin = add_import_defect(_cls)
    globals()[_plugin.name.replace("-", "_")] = _plugin
