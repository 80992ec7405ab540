"""broken-unvalidated: builds its device records with ``Device.model_construct`` (no validation), so a memory
size read as text stays text (``'65536'``); fails RAC105, and the report is still written (issue 46)."""

from __future__ import annotations

from rayaccel import Device, Host, hookimpl
from rayaccel_testplugins import acme
from rayaccel_testplugins.broken_base import broken_plugin

FAMILY = broken_plugin(globals(), "broken-unvalidated", keep=("rayaccel_discover",))


@hookimpl
def rayaccel_discover(host: Host) -> list[Device]:
    return [Device.model_construct(**{**dict(d), "memory_mib": str(d.memory_mib)})  # the defect
            for d in acme.rayaccel_discover(host)]
