"""broken-family: claims Ray's GPU resource with an env var of its own; fails RAC104."""

from __future__ import annotations

from rayaccel_testplugins.broken_base import broken_plugin

# The defect: GPU belongs to Ray's CUDA/HIP/ZE managers.
FAMILY = broken_plugin(globals(), "broken-family", resource="GPU")
