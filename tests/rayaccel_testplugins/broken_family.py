"""broken-family: claims Ray's GPU resource with an env var of its own; fails RAC104."""

from __future__ import annotations

from rayaccel import hookimpl
from rayaccel_testplugins.broken_base import declare, fixture_dirs, inherit

PLUGIN = "broken-family"
FAMILY = declare(PLUGIN, resource="GPU")  # the defect: GPU belongs to Ray's CUDA/HIP/ZE managers
inherit(globals())


@hookimpl
def rayaccel_family():  # type: ignore[no-untyped-def]
    return FAMILY


@hookimpl
def rayaccel_fixture_dirs() -> list[str]:
    return fixture_dirs(PLUGIN)
