"""broken-import: imports vendor bindings that are not installed, at import time; fails RAC101."""

from __future__ import annotations

import acme_vendor_bindings  # type: ignore[import-not-found]  # noqa: F401  (the defect: no such module)

from rayaccel import hookimpl
from rayaccel_testplugins.broken_base import declare, inherit

PLUGIN = "broken-import"
FAMILY = declare(PLUGIN)
inherit(globals())


@hookimpl
def rayaccel_family():  # type: ignore[no-untyped-def]
    return FAMILY
