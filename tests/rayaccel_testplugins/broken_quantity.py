"""broken-quantity: claims Ray's HPU pair but lets tasks ask for 0.5 or 1.5 HPU; fails RAC106."""

from __future__ import annotations

from rayaccel import QuantityRule
from rayaccel_testplugins.broken_base import broken_plugin

# The defect: Ray's HPUAcceleratorManager takes whole numbers only.
FAMILY = broken_plugin(globals(), "broken-quantity", resource="HPU", env_var="HABANA_VISIBLE_MODULES",
                       rule=QuantityRule(kind="fractional"))
