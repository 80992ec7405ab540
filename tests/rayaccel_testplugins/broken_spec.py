"""broken-spec: written for a hook spec 2.0 that this SDK does not implement; fails RAC103."""

from __future__ import annotations

from rayaccel import hookimpl
from rayaccel_testplugins.broken_base import declare, fixture_dirs, inherit

PLUGIN = "broken-spec"
FAMILY = declare(PLUGIN, spec_version="2.0")  # the defect
inherit(globals())


@hookimpl
def rayaccel_family():  # type: ignore[no-untyped-def]
    return FAMILY


@hookimpl
def rayaccel_fixture_dirs() -> list[str]:
    return fixture_dirs(PLUGIN)
