"""broken-faults: reports every device healthy whatever its fatal-error counter says; fails RAC203."""

from __future__ import annotations

from rayaccel import Device, HealthReport, Host, hookimpl
from rayaccel_testplugins.broken_base import broken_plugin

FAMILY = broken_plugin(globals(), "broken-faults", keep=("rayaccel_health",))


@hookimpl
def rayaccel_health(host: Host, devices: list[Device]) -> list[HealthReport]:
    return [HealthReport(device=d.id, state="healthy") for d in devices]  # the defect: never reads the counter
