"""rayaccel reference plugin for Intel Gaudi AI accelerators (HPU)."""

from __future__ import annotations

__version__ = "0.1.0"
