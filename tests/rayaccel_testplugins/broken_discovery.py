"""broken-discovery: loses the last device it enumerates (an off-by-one); fails RAC105."""

from __future__ import annotations

from rayaccel import Device, Host, hookimpl
from rayaccel_testplugins import acme
from rayaccel_testplugins.broken_base import declare, fixture_dirs, inherit

PLUGIN = "broken-discovery"
FAMILY = declare(PLUGIN)
inherit(globals(), keep=("rayaccel_discover",))


@hookimpl
def rayaccel_family():  # type: ignore[no-untyped-def]
    return FAMILY


@hookimpl
def rayaccel_fixture_dirs() -> list[str]:
    return fixture_dirs(PLUGIN)


@hookimpl
def rayaccel_discover(host: Host) -> list[Device]:
    return acme.rayaccel_discover(host)[:-1]  # the defect
