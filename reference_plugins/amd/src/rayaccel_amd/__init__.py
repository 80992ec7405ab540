"""rayaccel reference plugin for AMD Instinct GPUs."""

from __future__ import annotations

__version__ = "0.1.0"
