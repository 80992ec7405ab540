"""broken-import: imports vendor bindings that are not installed, at import time; fails RAC101."""

from __future__ import annotations

import acme_vendor_bindings  # type: ignore[import-not-found]  # noqa: F401  (the defect: no such module)

from rayaccel_testplugins.broken_base import broken_plugin

FAMILY = broken_plugin(globals(), "broken-import")
