"""broken-faults: reports every device healthy whatever its fatal-error counter says; fails RAC203."""

from __future__ import annotations

from rayaccel import Device, HealthReport, Host, hookimpl
from rayaccel_testplugins.broken_base import declare, fixture_dirs, inherit

PLUGIN = "broken-faults"
FAMILY = declare(PLUGIN)
inherit(globals(), keep=("rayaccel_health",))


@hookimpl
def rayaccel_family():  # type: ignore[no-untyped-def]
    return FAMILY


@hookimpl
def rayaccel_fixture_dirs() -> list[str]:
    return fixture_dirs(PLUGIN)


@hookimpl
def rayaccel_health(host: Host, devices: list[Device]) -> list[HealthReport]:
    return [HealthReport(device=d.id, state="healthy") for d in devices]  # the defect: never reads the counter
