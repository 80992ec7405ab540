"""broken-spec: written for a hook spec 2.0 that this SDK does not implement; fails RAC103."""

from __future__ import annotations

from rayaccel_testplugins.broken_base import broken_plugin

FAMILY = broken_plugin(globals(), "broken-spec", spec_version="2.0")  # the defect
