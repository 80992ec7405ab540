"""broken-discovery: loses the last device it enumerates (an off-by-one); fails RAC105."""

from __future__ import annotations

from rayaccel import Device, Host, hookimpl
from rayaccel_testplugins import acme
from rayaccel_testplugins.broken_base import broken_plugin

FAMILY = broken_plugin(globals(), "broken-discovery", keep=("rayaccel_discover",))


@hookimpl
def rayaccel_discover(host: Host) -> list[Device]:
    return acme.rayaccel_discover(host)[:-1]  # the defect
