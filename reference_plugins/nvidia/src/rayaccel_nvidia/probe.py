"""One probe of the host: NVML, reached through the host, with every call bounded.

NVML is a C library called in-process: a wedged driver makes ``nvmlInit`` or any query block forever
(nvidia-smi hanging in D state is the familiar symptom). So each probe runs in a daemon thread that is
abandoned after :func:`nvml_timeout` seconds, and the caller gets :class:`NvmlTimeout` instead of a hang.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from typing import Any, TypeVar

from rayaccel import BoundedTimeout, Host, HostError, LibraryUnavailable, report_problem, run_bounded
from rayaccel_nvidia.nvml import NVML

T = TypeVar("T")

TIMEOUT_ENV = "RAYACCEL_NVIDIA_NVML_TIMEOUT"
DEFAULT_TIMEOUT = 5.0


class NvmlTimeout(HostError):
    """NVML did not answer in time: the driver is hung or the GPU is wedged."""


def nvml_timeout() -> float:
    """The bound of each NVML call in seconds: the operator's :data:`TIMEOUT_ENV`, else the default; a value
    that is not a positive finite number is reported (a warning) and the default bounds the call instead."""
    raw = os.environ.get(TIMEOUT_ENV, "").strip()
    if not raw:
        return DEFAULT_TIMEOUT
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if math.isfinite(value) and value > 0:
        return value
    shown = raw if len(raw) <= 32 and raw.isprintable() else raw[:32].encode("unicode_escape").decode() + "..."
    report_problem("malformed-setting", f"{TIMEOUT_ENV}={shown!r} is not a positive number of seconds; NVML "
                   f"calls are bounded by the default {DEFAULT_TIMEOUT:g}s instead",
                   fix=f"set {TIMEOUT_ENV} to a positive number of seconds (e.g. 10) or unset it")
    return DEFAULT_TIMEOUT


def open_nvml(host: Host) -> Any | None:
    """The host's NVML adapter, or None when NVML is not there (no driver, no library): not a problem."""
    return open_nvml_or_why(host)[0]


def open_nvml_or_why(host: Host) -> tuple[Any | None, str | None]:
    """The host's NVML adapter and None, or None and why it cannot be opened (discovery says so when it matters:
    :func:`rayaccel_nvidia.discovery.unseen_gpus_problem`)."""
    try:
        return host.library(NVML), None
    except LibraryUnavailable as e:
        return None, str(e)


def bounded(fn: Callable[[], T], what: str, timeout: float | None = None) -> T:
    """fn() bounded by :func:`rayaccel.run_bounded` (a daemon thread, abandoned at the timeout; what fn reports
    reaches the hook call); NvmlTimeout if it has not returned within the timeout."""
    limit = nvml_timeout() if timeout is None else timeout
    try:
        return run_bounded(fn, limit, name=f"rayaccel-nvidia-{what}")
    except BoundedTimeout:
        raise NvmlTimeout(f"NVML did not answer within {limit:g}s while {what} (is the NVIDIA driver hung? "
                          f"check 'dmesg' for NVRM errors; raise {TIMEOUT_ENV} only for a known-slow driver)") from None
