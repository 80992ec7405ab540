"""Run a call that may never return, and give up on it after a timeout.

A vendor C library called in-process (NVML, a driver ioctl) cannot be interrupted: a wedged driver blocks
the calling thread forever. So the call runs in a daemon thread that is abandoned, never waited on, once
its time is up. The SDK bounds every hook call this way; a plugin bounds its own in-process vendor calls
with the same :func:`run_bounded` (subprocesses need none: ``host.run(..., timeout=...)`` kills them).
"""

from __future__ import annotations

import contextvars
import threading
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")


class BoundedTimeout(TimeoutError):
    """The call did not return in time; its thread was abandoned (it may still be running)."""

    def __init__(self, timeout: float, thread: threading.Thread) -> None:
        super().__init__(f"did not return within {timeout:g}s")
        self.timeout = timeout
        #: The abandoned thread, still running the call.
        self.thread = thread


def run_bounded(fn: Callable[[], T], timeout: float, *, name: str = "rayaccel-bounded") -> T:
    """``fn()`` in a daemon thread named ``name``: its result, or its exception re-raised here, or
    :class:`BoundedTimeout` when it has not returned within ``timeout`` seconds.

    The thread runs in a copy of the caller's context, so what ``fn`` reports with
    :func:`rayaccel.report_problem` reaches the hook call it serves. An interrupt of the caller (SIGINT)
    while it waits propagates at once; the thread is abandoned then too.
    """
    outcome: dict[str, Any] = {}
    context = contextvars.copy_context()

    def target() -> None:
        try:
            outcome["value"] = context.run(fn)
        except BaseException as e:  # a SystemExit in the call must not end the thread's caller unseen
            outcome["error"] = e

    thread = threading.Thread(target=target, name=name, daemon=True)
    thread.start()
    thread.join(timeout)
    if thread.is_alive():
        raise BoundedTimeout(timeout, thread)
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]  # type: ignore[no-any-return]
