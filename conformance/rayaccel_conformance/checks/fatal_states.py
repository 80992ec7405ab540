"""A fatal reason drains its device, so the device it is reported on is unhealthy (RAC264, issue 46, held-out round
14's ``s3``: a sysfs bake declaring and reporting its corrected-errors reason ``degraded`` and ``fatal=True``, "to
drain a device wearing out", table and reports agreeing, so it passed ``supported``).

The SDK reads the two fields apart: it drains a device, cordoned by the monitor, left out of Ray's resources at
start and NFD's count, tainted ``NoSchedule`` by DRA, only where it is ``unhealthy``
(``rayaccel.inventory.health_findings.fatal_findings``, ``builder``; ``HealthReport.drains``), while the reason's
fatal flag is what the plugin's table tells operators their policies act on: a ``degraded`` or ``unknown`` device with
a fatal reason is declared drained and keeps taking work. Where the SDK decides
itself (``rayaccel.inventory.health_decisions``) a reason that drains makes the device ``unhealthy`` and no other reason
is fatal; the plugin's own classification must say the same.
"""

from __future__ import annotations

from collections.abc import Sequence

from rayaccel.records import HealthReport, ReasonCode

INVARIANT = "invariant a-fatal-reason-is-unhealthy"
_WHY = ("a fatal reason says the device is drained (health_reasons, what operators write policies from) while the "
        "SDK drains only an unhealthy device: one that is not stays uncordoned in Ray's resources, NFD's count and "
        "DRA's untainted devices, taking work (the SDK's own health policy makes a draining reason unhealthy and no "
        "other reason fatal)")


def fatal_state_failures(ref: str, table: Sequence[ReasonCode],
                         runs: Sequence[tuple[str, Sequence[HealthReport]]]) -> list[str]:
    """Each row of ``table`` declared fatal in a state other than ``unhealthy``, and each report of ``runs`` (where it
    was taken, its reports) with a fatal reason whose state is not ``unhealthy``, named."""
    wrong = [f"{INVARIANT}, {ref}: health_reasons declares {row.code!r} {row.state} with fatal=True: {_WHY}; declare "
             f"it unhealthy where it drains the device, else fatal=False"
             for row in table if row.fatal and row.state != "unhealthy"]
    for where, reports in runs:
        for report in reports:
            fatal = [reason.code for reason in report.reasons if reason.fatal]
            if fatal and report.state != "unhealthy":
                wrong.append(f"{INVARIANT}, {ref}, {where}: {report.device} is {report.state} with fatal reason(s) "
                             f"{fatal}: {_WHY}; report it unhealthy where a reason drains it, else the reason "
                             f"fatal=False")
    return wrong
