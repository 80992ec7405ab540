"""broken-quantity: claims Ray's HPU pair but lets tasks ask for 0.5 or 1.5 HPU; fails RAC106."""

from __future__ import annotations

from rayaccel import QuantityRule, hookimpl
from rayaccel_testplugins.broken_base import declare, fixture_dirs, inherit

PLUGIN = "broken-quantity"
# The defect: Ray's HPUAcceleratorManager takes whole numbers only.
FAMILY = declare(PLUGIN, resource="HPU", env_var="HABANA_VISIBLE_MODULES", rule=QuantityRule(kind="fractional"))
inherit(globals())


@hookimpl
def rayaccel_family():  # type: ignore[no-untyped-def]
    return FAMILY


@hookimpl
def rayaccel_fixture_dirs() -> list[str]:
    return fixture_dirs(PLUGIN)
