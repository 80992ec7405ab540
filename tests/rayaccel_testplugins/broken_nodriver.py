"""broken-nodriver: reads the driver's sysfs without checking it exists, so it raises on a machine without
the driver; fails RAC102."""

from __future__ import annotations

from rayaccel import Device, Host, hookimpl
from rayaccel_testplugins import acme
from rayaccel_testplugins.broken_base import broken_plugin

FAMILY = broken_plugin(globals(), "broken-nodriver", keep=("rayaccel_discover",))


@hookimpl
def rayaccel_discover(host: Host) -> list[Device]:
    host.read_text("/sys/module/acme/version")  # the defect: FileNotFoundError without the driver
    return acme.rayaccel_discover(host)
