"""broken-metadata: one maintainer, no license, no tested Ray versions; fails RAC302 (and holds supported)."""

from __future__ import annotations

from rayaccel import SupportInfo
from rayaccel_testplugins.broken_base import broken_plugin

FAMILY = broken_plugin(globals(), "broken-metadata",
                       support=SupportInfo(maintainers=["Wile E. Coyote"], contact="https://acme.example"))
