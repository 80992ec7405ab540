"""broken-metrics: reports memory in MiB under the standard name whose unit is bytes; fails RAC206."""

from __future__ import annotations

from typing import Any

from rayaccel import Device, Host, hookimpl
from rayaccel_testplugins.broken_base import declare, fixture_dirs, inherit

PLUGIN = "broken-metrics"
FAMILY = declare(PLUGIN)
inherit(globals(), keep=("rayaccel_metrics",))


@hookimpl
def rayaccel_family():  # type: ignore[no-untyped-def]
    return FAMILY


@hookimpl
def rayaccel_fixture_dirs() -> list[str]:
    return fixture_dirs(PLUGIN)


@hookimpl
def rayaccel_metrics(host: Host, devices: list[Device]) -> list[dict[str, Any]]:
    return [{"device": d.id, "name": "memory_total", "unit": "MiB", "value": d.memory_mib or 0}  # the defect
            for d in devices]
