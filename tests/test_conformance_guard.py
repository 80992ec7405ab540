"""The side-effect guard's view of the Host seam: a thread a plugin abandoned inside a vendor library call (its
own LibraryAdapter's module, as the SDK's host) is bounding a hung C call, not a thread left behind."""

from __future__ import annotations

import threading
from typing import Any

from rayaccel import LibraryAdapter, LibraryUnavailable
from rayaccel_conformance.harness.guard import _in_vendor_call

WAIT_S = 10.0


class _WedgedLibrary:
    """A library whose every call blocks until released, as a wedged driver does."""

    def __init__(self) -> None:
        self.entered = threading.Event()
        self.release = threading.Event()

    def device_count(self) -> int:
        self.entered.set()
        self.release.wait(WAIT_S)
        return 0


def _open_real() -> _WedgedLibrary:
    raise LibraryUnavailable("wedged: not on this machine")


def _open_simulated(data: Any) -> _WedgedLibrary:
    return _WedgedLibrary()


#: This module defines a library adapter, so its code is the seam (as rayaccel_nvidia.nvml is).
WEDGED = LibraryAdapter("wedged", _open_real, _open_simulated)


def test_a_thread_blocked_in_a_plugins_library_adapter_is_in_a_vendor_call() -> None:
    library = WEDGED.open_simulated({})
    blocked = threading.Thread(target=library.device_count, daemon=True)
    other = threading.Event()
    waiting = threading.Thread(target=other.wait, args=(WAIT_S,), daemon=True)  # code outside any adapter
    blocked.start()
    waiting.start()
    try:
        assert library.entered.wait(WAIT_S)
        assert _in_vendor_call(blocked)
        assert not _in_vendor_call(waiting)
    finally:
        library.release.set()
        other.set()
        blocked.join(WAIT_S)
        waiting.join(WAIT_S)
