"""broken-metrics: reports memory in MiB under the standard name whose unit is bytes; fails RAC206."""

from __future__ import annotations

from typing import Any

from rayaccel import Device, Host, hookimpl
from rayaccel_testplugins.broken_base import broken_plugin

FAMILY = broken_plugin(globals(), "broken-metrics", keep=("rayaccel_metrics",))


@hookimpl
def rayaccel_metrics(host: Host, devices: list[Device]) -> list[dict[str, Any]]:
    return [{"device": d.id, "name": "memory_total", "unit": "MiB", "value": d.memory_mib or 0}  # the defect
            for d in devices]
