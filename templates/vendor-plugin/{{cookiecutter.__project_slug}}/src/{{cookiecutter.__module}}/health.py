"""Device health from the driver's error counters."""

from __future__ import annotations

from collections.abc import Sequence

from rayaccel import Device, HealthReason, HealthReport, HealthState, report_problem

from {{ cookiecutter.__module }}.readings import DeviceHealth

# VENDOR: how many corrected errors your hardware tolerates before it should be looked at.
CORRECTED_ERRORS_DEGRADED = 1000

#: Every reason code this plugin reports: (code, state, fatal, meaning). VENDOR: one row per code you add; an
#: operator's health policy names these codes (drain, drain-after, degrade, ignore), docs/index.md lists them;
#: the family declares them (``ReasonCode.table(REASONS)`` in plugin.py).
REASONS: tuple[tuple[str, HealthState, bool, str], ...] = (
    ("fatal-error", "unhealthy", True, "the driver counts fatal errors: the device needs a reset"),
    ("corrected-errors", "degraded", False, f"at least {CORRECTED_ERRORS_DEGRADED} corrected errors"),
    ("no-health-data", "unknown", False, "the driver reported no error counters: nothing is known"),
    ("probe-error", "unknown", False, "the vendor interface could not be read (plugin.py): every device's health is "
                                      "unknown"),
    ("device-lost", "unhealthy", True, "the device is no longer listed by the vendor interface (plugin.py)"),
)


def to_reports(devices: Sequence[Device], health: dict[str, DeviceHealth]) -> list[HealthReport]:
    reports = []
    missing = [d.index for d in devices if d.id not in health]
    if missing:
        # A device discovery saw with no counters now: gone, or the answer was cut short. Say so, not just "unknown".
        report_problem("no-health-data", f"no error counters for devices {missing}; their health is unknown",
                       severity="error" if len(missing) == len(devices) else "warning")
    for device in devices:
        counters = health.get(device.id)
        if counters is None:
            reports.append(HealthReport(device=device.id, state="unknown", reasons=[
                HealthReason(code="no-health-data", message="the driver reported no error counters")]))
        elif counters.fatal_errors:
            # Fatal: the device is taken out of the resource count and cordoned on the node (the others keep working).
            # One fatal error is the fault, never a threshold to count up to (RAC203: one-fatal-error-is-enough).
            reports.append(HealthReport(device=device.id, state="unhealthy", reasons=[
                HealthReason(code="fatal-error", message=f"{counters.fatal_errors} fatal errors", fatal=True)]))
        elif counters.corrected_errors >= CORRECTED_ERRORS_DEGRADED:
            reports.append(HealthReport(device=device.id, state="degraded", reasons=[
                HealthReason(code="corrected-errors", message=f"{counters.corrected_errors} corrected errors")]))
        else:
            reports.append(HealthReport(device=device.id, state="healthy"))
    return reports
