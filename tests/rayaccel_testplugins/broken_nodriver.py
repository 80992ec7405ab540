"""broken-nodriver: reads the driver's sysfs without checking it exists, so it raises on a machine without
the driver; fails RAC102."""

from __future__ import annotations

from rayaccel import Device, Host, hookimpl
from rayaccel_testplugins import acme
from rayaccel_testplugins.broken_base import declare, fixture_dirs, inherit

PLUGIN = "broken-nodriver"
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
    host.read_text("/sys/module/acme/version")  # the defect: FileNotFoundError without the driver
    return acme.rayaccel_discover(host)
