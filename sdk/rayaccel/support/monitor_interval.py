"""The health monitor's polling interval: its default and bounds, and the check every entry point applies
(``rayaccel start --monitor-interval``, the driver, ``rayaccel export --monitor-interval``, the monitor itself)."""

from __future__ import annotations

import math

from rayaccel.errors import RayaccelError

#: Seconds between the health monitor's polls when nothing else is said (``rayaccel start``'s default); exported
#: node-state files (NFD) are rewritten this often and expire after three.
DEFAULT_MONITOR_INTERVAL = 5.0

#: Bounds of the polling interval (seconds): below the minimum the monitor would busy-poll the vendor
#: tools; above the maximum a fault would go unnoticed for hours.
MIN_INTERVAL = 0.1
MAX_INTERVAL = 3600.0


def interval_error(interval: object) -> str | None:
    """Why ``interval`` is not a usable polling interval (None when it is)."""
    try:
        value = float(interval)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return f"{interval!r} is not a number of seconds"
    if not math.isfinite(value) or not MIN_INTERVAL <= value <= MAX_INTERVAL:
        return f"{interval!r} is out of range: give seconds between {MIN_INTERVAL:g} and {MAX_INTERVAL:g}"
    return None


def check_interval(interval: float) -> float:
    """``interval`` as seconds, or a :class:`RayaccelError` naming why it is not usable."""
    why = interval_error(interval)
    if why is not None:
        raise RayaccelError(f"monitor interval {why}")
    return float(interval)
