"""A pytest-xdist run ends, failing and naming the worker and its test, when a worker dies and xdist does not see it.

xdist's controller learns that a worker died when the worker's pipe closes. A test that forks (the SDK's plugin
workers, Ray's processes) leaves children holding that pipe, so a worker killed while they live leaves the
controller waiting for ever: ``make test`` hung until CI's 90 minutes ran out (issue 39). So each worker writes
its pid and the test it runs into a folder of the run's, and a thread of the controller checks those pids: a
worker that is gone (or a zombie) and that xdist has not reported down within :data:`GRACE_ENV` seconds ends the
run with one line naming it and its test (exit 3). ``RAYACCEL_SUITE_BUDGET_S``, when set, bounds the whole run
the same way, naming what each worker is running. A hanging test is pytest-timeout's (pyproject: ``timeout``).

Loaded by the repository's conftest.py (``pytest_plugins``); ``-p suite_watchdog`` loads it elsewhere.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import psutil
import pytest

#: Seconds a dead worker may go unreported by xdist before the run is ended (xdist itself takes a few).
GRACE_ENV = "RAYACCEL_WORKER_GRACE_S"
DEFAULT_GRACE_S = 30.0
#: Seconds the whole run may take (unset or 0: no bound but the per-test timeout).
BUDGET_ENV = "RAYACCEL_SUITE_BUDGET_S"
#: The exit code of a run the watchdog ended.
EXIT_CODE = 3
_DIR_KEY = "rayaccel_watchdog_dir"
_POLL_S = 1.0


def pytest_configure(config: pytest.Config) -> None:
    workerinput: dict[str, Any] | None = getattr(config, "workerinput", None)
    if workerinput is not None:
        if workerinput.get(_DIR_KEY):
            config.pluginmanager.register(_Worker(Path(workerinput[_DIR_KEY]), str(workerinput["workerid"])))
    elif getattr(config.option, "numprocesses", None) and config.pluginmanager.hasplugin("xdist"):
        config.pluginmanager.register(_Controller(), "rayaccel-suite-watchdog")


class _Worker:
    """Says, in its file of the run's folder, which process this worker is and which test it runs."""

    def __init__(self, folder: Path, worker_id: str) -> None:
        self.path = folder / worker_id
        self._write("(between tests)")

    def _write(self, nodeid: str) -> None:
        temporary = self.path.with_name(f".{self.path.name}.tmp")
        temporary.write_text(f"{os.getpid()}\n{nodeid}\n", encoding="utf-8")
        os.replace(temporary, self.path)  # the controller never reads half a line

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_logstart(self, nodeid: str, location: object) -> None:
        self._write(nodeid)


class _Controller:
    """Watches the workers' pids from a thread of the controller (its main thread waits on xdist's queue)."""

    def __init__(self) -> None:
        self.folder = Path(tempfile.mkdtemp(prefix="rayaccel-xdist-watch-"))
        self.down: set[str] = set()
        self.grace = float(os.environ.get(GRACE_ENV) or DEFAULT_GRACE_S)
        self.budget = float(os.environ.get(BUDGET_ENV) or 0) or None
        self.started = time.monotonic()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="rayaccel-suite-watchdog", daemon=True)
        self._thread.start()

    @pytest.hookimpl
    def pytest_configure_node(self, node: Any) -> None:
        node.workerinput[_DIR_KEY] = str(self.folder)

    @pytest.hookimpl
    def pytest_testnodedown(self, node: Any, error: object) -> None:
        self.down.add(str(node.gateway.id))  # xdist saw it go: its own report (and restart) follow

    @pytest.hookimpl(trylast=True)
    def pytest_unconfigure(self, config: pytest.Config) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        shutil.rmtree(self.folder, ignore_errors=True)

    def _running(self) -> dict[str, tuple[int, str]]:
        running: dict[str, tuple[int, str]] = {}
        for path in self.folder.iterdir():
            if path.name.startswith("."):
                continue
            with contextlib.suppress(OSError, ValueError):
                pid, nodeid = path.read_text(encoding="utf-8").split("\n")[:2]
                running[path.name] = (int(pid), nodeid)
        return running

    def _watch(self) -> None:
        dead_since: dict[str, float] = {}
        while not self._stop.wait(_POLL_S):
            now = time.monotonic()
            running = {w: r for w, r in self._running().items() if w not in self.down}
            for worker, (pid, nodeid) in running.items():
                if _alive(pid):
                    dead_since.pop(worker, None)
                elif now - dead_since.setdefault(worker, now) >= self.grace:
                    self._end(f"worker {worker} (pid {pid}) died while running {nodeid}, and pytest-xdist is still "
                              f"waiting on it after {self.grace:g} s (a process the test started holds its pipe)")
            if self.budget is not None and now - self.started > self.budget:
                doing = "; ".join(f"{w}: {nodeid}" for w, (_, nodeid) in sorted(running.items())) or "nothing"
                self._end(f"the run took more than its budget of {self.budget:g} s ({BUDGET_ENV}); running: {doing}")

    @staticmethod
    def _end(message: str) -> None:
        sys.stderr.write(f"\nrayaccel suite watchdog: {message}; ending the run (exit {EXIT_CODE})\n")
        sys.stderr.flush()
        os._exit(EXIT_CODE)  # the main thread is blocked in xdist's wait: nothing else can end it


def _alive(pid: int) -> bool:
    try:
        return bool(psutil.Process(pid).status() != psutil.STATUS_ZOMBIE)
    except psutil.NoSuchProcess:
        return False
