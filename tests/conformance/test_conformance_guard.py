"""The side-effect guard's view of the Host seam: a thread a plugin abandoned inside a vendor library call (its
own LibraryAdapter's module, as the SDK's host) is bounding a hung C call, not a thread left behind; the SDK's
own cache of checked documents is not a hook's I/O; the process holding the run's cluster is not a hook's child."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import psutil
import pytest

import rayaccel_nvidia
from rayaccel import LibraryAdapter, LibraryUnavailable
from rayaccel.support.polling import wait_for
from rayaccel_conformance.harness.audit import Watch, install_audit_hook, python_roots, set_active
from rayaccel_conformance.harness.guard import _children, _in_vendor_call, exclude_process_tree

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


def test_the_sdks_cache_of_checked_documents_is_the_sdks_own_io(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    # A hook asking the SDK for its SKU catalog makes the SDK read (and, the first time, write) its cache of
    # checked documents: not the hook's I/O. The hook reading a file of its own there still is.
    from rayaccel.files.checked import load_checked

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    catalog = Path(rayaccel_nvidia.__file__).parent / "skus.yaml"
    own = tmp_path / "own.txt"
    own.write_text("x", encoding="utf-8")
    install_audit_hook()
    watch = Watch("p", "rayaccel_sku_catalog", 10.0, python_roots(), frozenset())
    watch.ident = threading.get_ident()
    set_active(watch)
    try:
        first = load_checked(catalog, "SKU catalog", "sku-catalog")  # checked, then remembered in the cache
        again = load_checked(catalog, "SKU catalog", "sku-catalog")  # read back from the cache
        own.read_text(encoding="utf-8")
    finally:
        set_active(None)
    assert first == again and list((tmp_path / "cache").rglob("*.json"))  # the cache was written and read
    assert len(watch.events) == 1 and watch.events[0].startswith(f"read {own} outside the Host seam"), watch.events


def test_the_process_tree_holding_the_runs_cluster_is_never_a_hooks(tmp_path: Path) -> None:
    # The cluster's process starts Ray's processes while hooks run: neither it nor anything under it is a
    # child a hook left behind. Any other child started in the window is.
    since = time.time()
    spawn_child = ("import subprocess, sys, time; "
                   "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(30)']); time.sleep(30)")
    holder = subprocess.Popen([sys.executable, "-c", spawn_child])
    stray = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        wait_for(lambda: psutil.Process(holder.pid).children(), bool, timeout=WAIT_S, interval=0.05,
                 what="the holder's own child")
        grandchild = psutil.Process(holder.pid).children()[0].pid
        assert {holder.pid, grandchild, stray.pid} <= set(_children(since))
        exclude_process_tree(holder.pid)
        try:
            assert set(_children(since)) & {holder.pid, grandchild, stray.pid} == {stray.pid}
        finally:
            exclude_process_tree(None)
    finally:
        for proc in psutil.Process(holder.pid).children(recursive=True):
            proc.kill()
        for proc in (holder, stray):
            proc.kill()
            proc.wait(WAIT_S)
