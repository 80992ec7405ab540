"""broken-metadata: one maintainer, no license, no tested Ray versions; fails RAC302 (and holds supported)."""

from __future__ import annotations

from rayaccel import SupportInfo, hookimpl
from rayaccel_testplugins.broken_base import declare, fixture_dirs, inherit

PLUGIN = "broken-metadata"
FAMILY = declare(PLUGIN, support=SupportInfo(maintainers=["Wile E. Coyote"], contact="https://acme.example"))
inherit(globals())


@hookimpl
def rayaccel_family():  # type: ignore[no-untyped-def]
    return FAMILY


@hookimpl
def rayaccel_fixture_dirs() -> list[str]:
    return fixture_dirs(PLUGIN)
