"""broken-schedulers: an ACME card advertised to Kubernetes as NVIDIA's GPU, with no Slurm GRES name; fails RAC304
(and holds supported)."""

from __future__ import annotations

from rayaccel import SchedulerNames, hookimpl
from rayaccel_testplugins.broken_base import declare, fixture_dirs, inherit

PLUGIN = "broken-schedulers"
FAMILY = declare(PLUGIN, schedulers=SchedulerNames(kubernetes_resource="nvidia.com/gpu", dra_driver="gpu.nvidia.com",
                                                    device_files=["/dev/acme{index}"]))
inherit(globals())


@hookimpl
def rayaccel_family():  # type: ignore[no-untyped-def]
    return FAMILY


@hookimpl
def rayaccel_fixture_dirs() -> list[str]:
    return fixture_dirs(PLUGIN)
