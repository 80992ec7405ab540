"""broken-hang: asks its vendor tool ``acme-smi`` for the device list and, when the tool times out, asks
again, for ever; fails RAC204 (the SDK has to abandon the hook)."""

from __future__ import annotations

from rayaccel import CommandTimeout, Device, Host, hookimpl
from rayaccel_testplugins import acme
from rayaccel_testplugins.broken_base import broken_plugin

TOOL = ["acme-smi", "--list"]
FAMILY = broken_plugin(globals(), "broken-hang", keep=("rayaccel_discover",))


@hookimpl
def rayaccel_discover(host: Host) -> list[Device]:
    if not host.is_dir(acme.SYSFS):
        return []
    while True:
        try:
            host.run(TOOL, timeout=1)
            break
        except CommandTimeout:
            continue  # the defect: an unbounded retry
    return acme.rayaccel_discover(host)
