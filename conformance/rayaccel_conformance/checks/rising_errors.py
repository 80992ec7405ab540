"""More errors clear no reason (RAC211's ``more-errors-clear-no-reason``; issue 46, mutation round 10's
``amd.health:72``).

A device's error counters only go up while it runs: correctable ECC errors are counted and corrected, and a GPU
with some of them and no uncorrectable one is a common, healthy state (``amd-smi metric -g 0 -k`` on an MI300X:
``UMC: CORRECTABLE_COUNT: 2, UNCORRECTABLE_COUNT: 0, DEFERRED_COUNT: 0``, ROCm/device-metrics-exporter#368;
``mcelog`` and EDAC's ``ce_count`` likewise). A reason a plugin gives about a device says why it is in its state or
what an operator should know about it; more errors of any class are never a reason to take one back, nor to
call the device better. Fixtures record counts of 0 on every healthy device and raise one class under a fault,
so a comparison made the wrong way round at 0 (``== 0`` for ``> 0``: a reason on every clean device, none on one
with errors) passed every fixture. The suite raises every error count the machine states for one device (a
number whose name, with the keys that lead to it, says corrected or uncorrected, correctable or uncorrectable,
or counts errors) by a few, as the driver would have counted them, and builds once: every reason the device had
must still be given, its state no better, and no other device may change.
"""

from __future__ import annotations

import re
from typing import Any

from rayaccel.records import Device, FamilyInventory
from rayaccel_conformance.checks.readings import Reading, host_readings, owned_by, with_reading

#: How many errors each count gains: a few, as between two polls of a device correcting errors, below any
#: threshold a plugin degrades at (the bake's 1000 corrected errors).
RAISED_BY = 3
_CLASSES = {"correctable", "uncorrectable", "corrected", "uncorrected"}
_NOT_COUNTS = {"threshold", "limit", "max", "min", "enabled", "mode", "supported", "pending", "rate", "percent"}
_RANK = {"healthy": 0, "degraded": 1, "unhealthy": 2}


def _words(reading: Reading) -> set[str]:
    if reading.where == "table":  # a CSV cell is named by the field the command line asked for in its place
        names = [_field_name(reading)]
    else:
        names = [reading.key] + [str(p) for p in reading.path if isinstance(p, str)]
    return {w for name in names for w in re.split(r"[^a-z]+", name.lower()) if w}


def _field_name(reading: Reading) -> str:
    """The name of a CSV cell's field: the command line's list of fields (``-Q a,b``, ``--query-gpu=a,b``) with
    as many fields as the row has cells, at the cell's place; '' when the line names none."""
    cells = reading.row.split(",")
    for token in reading.key.split():
        fields = token.split("=", 1)[-1].split(",")
        if len(fields) == len(cells) > 1:
            return fields[int(reading.path[1])]
    return ""


def counts_errors(reading: Reading) -> bool:
    """Whether the machine names this number, by its own field or file name, a count of errors: corrected or
    uncorrected, correctable or uncorrectable, or errors (``fatal_errors``, ``err_count``)."""
    if not float(reading.value).is_integer() or reading.value < 0:
        return False
    if reading.where in ("library", "command") and (not reading.path or not isinstance(reading.path[-1], str)):
        return False  # an entry of a list (an event's number: XID 79) is no count; a count is a named field
    words = _words(reading)
    if words & _NOT_COUNTS:
        return False
    return bool(words & _CLASSES) or bool(words & {"errors", "errs"}) or bool(
        words & {"error", "err"} and words & {"count", "cnt", "total"})


def error_counts(host: dict[str, Any], device: Device) -> list[Reading]:
    """The error counts the machine states for ``device`` (its own readings, zeros included)."""
    return [r for r in host_readings(host, zeros=True) if owned_by(r, device) and counts_errors(r)]


def raised_host(host: dict[str, Any], readings: list[Reading]) -> dict[str, Any]:
    """The host state with each of ``readings`` raised by :data:`RAISED_BY`, written as the vendor wrote it."""
    for reading in readings:
        raised = reading.value + RAISED_BY

        def text(old: str, raised: float = raised) -> str:
            return str(int(raised))  # every count raised is a whole number (counts_errors)

        def value(old: Any, raised: float = raised) -> Any:
            return int(raised) if isinstance(old, int) else raised

        host = with_reading(host, reading, text, value)
    return host


def cleared_reasons(healthy: FamilyInventory, raised: FamilyInventory | None, device: Device,
                    where: str) -> list[str]:
    """What the raised counts took back on ``device``: a reason it had, or a state as bad as before."""
    if raised is None:
        return []
    before = next((r for r in healthy.health if r.device == device.id), None)
    after = next((r for r in raised.health if r.device == device.id), None)
    if before is None or after is None:
        return []
    wrong = []
    gone = sorted({r.code for r in before.reasons} - {r.code for r in after.reasons})
    if gone:
        kept = ", ".join(sorted({r.code for r in after.reasons})) or "none"
        wrong.append(f"{where}: {device.id} had reason {', '.join(gone)} ({_message(before, gone[0])}); with more "
                     f"errors counted it is gone (reasons now: {kept}): more errors are no reason to take one back "
                     "(a reason about errors fires from the first one counted, and stays while they are)")
    if before.state in _RANK and after.state in _RANK and _RANK[after.state] < _RANK[before.state]:
        wrong.append(f"{where}: {device.id} was {before.state} and with more errors counted it is {after.state}")
    return wrong


def _message(report: Any, code: str) -> str:
    return next((str(r.message)[:80] for r in report.reasons if r.code == code), "")
