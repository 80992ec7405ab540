"""The worker process of :mod:`rayaccel.isolation.pool` (``python -m rayaccel.isolation.worker``): imports only its
plugins and answers each request with their families, as JSON lines on its own copy of stdout."""

from __future__ import annotations

import contextlib
import importlib
import os
import sys
import threading
import time

from rayaccel.inventory.builder import InventoryBuilder
from rayaccel.isolation.protocol import PluginTarget, Reply, Request, Setup, make_host, worker_memory_mib
from rayaccel.plugins.manager import PluginManager
from rayaccel.records import Problem


def _watch_parent(parent: int) -> None:
    # A worker never outlives its parent, even when a hook holds it in C code and EOF goes unread.
    while True:
        time.sleep(1)
        if os.getppid() != parent:
            os._exit(3)


def _footprint() -> tuple[int, int]:
    import psutil

    return threading.active_count(), len(psutil.Process().children(recursive=True))


def _leaks(before: tuple[int, int], after: tuple[int, int]) -> str | None:
    threads, children = after[0] - before[0], after[1] - before[1]
    parts = []
    if threads > 0:
        parts.append(f"{threads} thread{'s' if threads > 1 else ''}")
    if children > 0:
        parts.append(f"{children} child process{'es' if children > 1 else ''}")
    return " and ".join(parts) or None


def worker_main() -> int:
    """Entry point of a worker process (``python -m rayaccel.isolation.worker``): see :mod:`rayaccel.isolation.pool`."""
    requests = os.fdopen(os.dup(0), "rb")
    answers = os.fdopen(os.dup(1), "wb")
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 0)
    os.dup2(2, 1)  # whatever a plugin prints lands in the worker's log, never on the protocol
    limit = worker_memory_mib()
    if limit:
        import resource

        resource.setrlimit(resource.RLIMIT_AS, (limit * 2**20, limit * 2**20))
    threading.Thread(target=_watch_parent, args=(os.getppid(),), name="rayaccel-parent-watch", daemon=True).start()
    for module in sys.argv[1:]:  # prestarted: import the likely plugins while the parent gets ready
        with contextlib.suppress(BaseException):  # a failure is reported when the plugin is loaded for real
            importlib.import_module(module)
    first = requests.readline()
    if not first.strip():
        return 0  # a spare worker whose parent never needed it
    setup = Setup.model_validate_json(first)
    manager = PluginManager(autoload=False, timeout=setup.timeout)
    host = make_host(setup.host)
    builder = InventoryBuilder(manager, [])
    loaded: dict[str, list[Problem] | None] = {}  # plugin -> its load problems; None: not loaded yet
    baseline = _footprint()
    for line in requests:
        request = Request.model_validate_json(line)
        for target in setup.plugins:
            environ = dict(os.environ)  # restored after each turn: plugins sharing a worker never see
            if loaded.get(target.name) is None:  # imported at its first turn: a hang is blamed on it
                loaded[target.name] = _load(manager, target)
            problems = list(loaded[target.name] or [])
            family = None
            if target.name in manager.plugin_names():
                try:
                    family = builder.family(target.name, host, problems, request.with_metrics)
                except Exception as e:  # an SDK-side failure on this plugin's data: say so, keep the worker
                    problems.append(Problem(plugin=target.name, distribution=target.distribution, hook=None,
                                            code="inventory-failed", message=f"{type(e).__name__}: {e}",
                                            fix="report this to the plugin's maintainers with the inventory input"))
            if dict(os.environ) != environ:  # one another's environment changes
                os.environ.clear()
                os.environ.update(environ)
            now = _footprint()
            leaked = _leaks(baseline, now)
            baseline = now if leaked else baseline  # blame each leak on one plugin only
            reply = Reply(plugin=target.name, family=family, problems=problems, leaked=leaked)
            answers.write(reply.model_dump_json().encode() + b"\n")
            answers.flush()
    return 0


def _load(manager: PluginManager, target: PluginTarget) -> list[Problem]:
    before = len(manager.problems)
    try:
        module: object = importlib.import_module(target.module)
    except BaseException as e:  # reported with every answer, like a plugin that failed to load
        return [Problem(plugin=target.name, distribution=target.distribution, hook=None, code="hook-raised",
                        message=f"failed to import {type(e).__name__}: {e}", fix="make the plugin importable")]
    manager.register(module, target.name, distribution=target.distribution, version=target.version)
    return manager.problems[before:]


if __name__ == "__main__":
    sys.exit(worker_main())
