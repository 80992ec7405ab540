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
        assert {holder.pid, grandchild, stray.pid} <= {child.pid for child in _children(since)}
        exclude_process_tree(holder.pid)
        try:
            assert {child.pid for child in _children(since)} & {holder.pid, grandchild, stray.pid} == {stray.pid}
        finally:
            exclude_process_tree(None)
    finally:
        for proc in psutil.Process(holder.pid).children(recursive=True):
            proc.kill()
        for proc in (holder, stray):
            proc.kill()
            proc.wait(WAIT_S)


def _bounded_proceed(call: Any) -> tuple[bool, Any]:
    """What the manager's proceed does with a watched call: the hook run bounded (rayaccel.run_bounded)."""
    from rayaccel.support.bounded import run_bounded

    return True, run_bounded(lambda: call.fn(**call.kwargs), WAIT_S, name=f"rayaccel-p-{call.hook}")


@pytest.fixture
def kept_threads(monkeypatch: pytest.MonkeyPatch) -> None:
    """Bounded calls in threads kept between calls, as a conformance run has them (reuse_threads)."""
    import rayaccel.support.bounded as bounded

    monkeypatch.setattr(bounded, "_reuse", True)
    monkeypatch.setattr(bounded, "_idle", [])


def _watched(fn: Any, tmp_path: Path) -> list[str]:
    from rayaccel.plugins.manager import HookCall
    from rayaccel_conformance.harness.guard import run_watched

    install_audit_hook()
    found, (returned, _) = run_watched(HookCall("p", None, "rayaccel_health", fn, {}, []), _bounded_proceed,
                                       budget_s=WAIT_S, roots=python_roots())
    assert returned
    return found


def test_a_thread_kept_for_the_next_bounded_call_is_not_left_behind_but_a_leaked_one_is(
        kept_threads: None, tmp_path: Path) -> None:
    from rayaccel.support.bounded import idle_thread_idents, run_bounded

    def bounds_its_own_call() -> int:  # a plugin bounding its vendor call: a second kept thread, idle after
        return run_bounded(lambda: 7, WAIT_S)

    started = time.monotonic()
    assert _watched(bounds_its_own_call, tmp_path) == []
    assert _watched(bounds_its_own_call, tmp_path) == []  # now in threads that were idle before the call
    assert len(idle_thread_idents()) == 2  # the hook's and its own call's, both kept
    assert time.monotonic() - started < 0.4  # a kept thread is not waited for as one that may still end (0.5 s)

    release = threading.Event()
    leaked: list[threading.Thread] = []

    def leaks_a_thread() -> None:
        leaked.append(threading.Thread(target=release.wait, args=(WAIT_S,), name="acme-watchdog", daemon=True))
        leaked[0].start()

    try:
        found = _watched(leaks_a_thread, tmp_path)
    finally:
        release.set()
    assert len(found) == 1 and "rayaccel_health left 1 thread(s) running after it returned (acme-watchdog)" in found[0]
    assert leaked[0].ident not in idle_thread_idents()


def test_io_in_a_kept_thread_the_hooks_own_bounded_call_took_is_the_hooks(kept_threads: None, tmp_path: Path) -> None:
    from rayaccel.support.bounded import idle_thread_idents, run_bounded

    outside = tmp_path / "vendor.conf"
    outside.write_text("x", encoding="utf-8")
    assert run_bounded(lambda: run_bounded(lambda: 1, WAIT_S), WAIT_S) == 1  # two threads kept, idle
    idle_before = idle_thread_idents()
    assert len(idle_before) == 2

    def reads_in_its_bounded_call() -> str:
        return run_bounded(lambda: outside.read_text(encoding="utf-8"), WAIT_S)

    found = _watched(reads_in_its_bounded_call, tmp_path)
    assert idle_thread_idents() == idle_before  # the same kept threads served the hook and its call
    assert len(found) == 1 and f"read {outside} outside the Host seam" in found[0], found
