"""The worker process of :mod:`rayaccel.isolation.pool` (``python -m rayaccel.isolation.worker``): imports only its
plugins and answers each request with their families, as JSON lines on its own copy of stdout."""

from __future__ import annotations

import contextlib
import importlib
import os
import sys
import threading
import time
import types
from collections.abc import Sequence

from rayaccel import hookspec
from rayaccel.host import Host
from rayaccel.inventory.builder import InventoryBuilder
from rayaccel.isolation.protocol import (
    HostSpec,
    PluginTarget,
    Reply,
    Request,
    Setup,
    make_host,
    worker_memory_mib,
)
from rayaccel.plugins.manager import PluginManager
from rayaccel.records import Problem


def _watch_parent(parent: int) -> None:
    # A worker never outlives its parent, even when a hook holds it in C code and EOF goes unread.
    while True:
        time.sleep(1)
        if os.getppid() != parent:
            os._exit(3)


def _descendants() -> int:
    """How many processes this one has started that still run (or wait to be reaped), at any depth."""
    try:  # Linux: each thread's direct children, without scanning every process on the machine as psutil does
        count, pending = 0, [os.getpid()]
        while pending:
            pid = pending.pop()
            for tid in os.listdir(f"/proc/{pid}/task"):
                with open(f"/proc/{pid}/task/{tid}/children", encoding="ascii") as f:
                    children = [int(child) for child in f.read().split()]
                count += len(children)
                pending.extend(children)
        return count
    except (OSError, ValueError):  # no such files (another OS, or a kernel without them), or a process just gone
        import psutil

        return len(psutil.Process().children(recursive=True))


def _footprint() -> tuple[int, int]:
    return threading.active_count(), _descendants()


def _leaks(before: tuple[int, int], after: tuple[int, int]) -> str | None:
    threads, children = after[0] - before[0], after[1] - before[1]
    parts = []
    if threads > 0:
        parts.append(f"{threads} thread{'s' if threads > 1 else ''}")
    if children > 0:
        parts.append(f"{children} child process{'es' if children > 1 else ''}")
    return " and ".join(parts) or None


#: What a monkeypatch replaces: functions, classes and the methods and properties of the SDK's classes.
_CODE = (types.FunctionType, type, staticmethod, classmethod, property)


def _sdk_code() -> dict[str, tuple[object, str, object]]:
    """Every function, class and method of the SDK's imported modules, by dotted name: (owner, attribute, value)."""
    code: dict[str, tuple[object, str, object]] = {}
    for name, module in list(sys.modules.items()):
        if not (name == "rayaccel" or name.startswith("rayaccel.")) or module is None:
            continue
        for attr, value in list(vars(module).items()):
            if attr.startswith("__") or not isinstance(value, _CODE):
                continue
            code[f"{name}.{attr}"] = (module, attr, value)
            if isinstance(value, type) and value.__module__ == name:
                for member, inner in list(vars(value).items()):
                    if not member.startswith("__") and isinstance(inner, _CODE):
                        code[f"{name}.{attr}.{member}"] = (value, member, inner)
    return code


def _undo_patches(before: dict[str, tuple[object, str, object]]) -> list[str]:
    """Put back the SDK code replaced or removed since ``before`` (a plugin monkeypatching the SDK); its names."""
    now = _sdk_code()
    patched = sorted(name for name, (_, _, value) in before.items() if name not in now or now[name][2] is not value)
    for name in patched:
        owner, attr, value = before[name]
        with contextlib.suppress(Exception):
            setattr(owner, attr, value)
    return patched


def _patch_problem(target: PluginTarget, names: list[str]) -> Problem:
    shown = ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
    return Problem(plugin=target.name, distribution=target.distribution, hook=None, code="sdk-patched",
                   message=f"replaced the SDK's own code ({shown}) in its worker process; the change was undone "
                           "before any other plugin ran, its answer is not used and the worker is replaced",
                   fix="never assign to rayaccel's modules or classes; wrap what you need in the plugin's own code")


def worker_main(preload: Sequence[str] = ()) -> int:
    """A worker's life (``python -m rayaccel.isolation.worker [MODULE ...]``, or a process forked by
    :mod:`rayaccel.isolation.process`): requests on fd 0, answers on fd 1. ``preload``: modules to import while
    the parent gets ready (the likely plugins). See :mod:`rayaccel.isolation.pool`."""
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
    for module in preload:  # prestarted: import the likely plugins while the parent gets ready
        with contextlib.suppress(BaseException):  # a failure is reported when the plugin is loaded for real
            importlib.import_module(module)
    first = requests.readline()
    if not first.strip():
        return 0  # a spare worker whose parent never needed it
    setup = Setup.model_validate_json(first)
    manager = PluginManager(autoload=False, timeout=setup.timeout)
    host: Host | None = None
    host_from: HostSpec | None = None
    builder = InventoryBuilder(manager, [])
    loaded: dict[str, list[Problem] | None] = {}  # plugin -> its load problems; None: not loaded yet
    baseline = _footprint()
    sdk = _sdk_code()
    for line in requests:
        request = Request.model_validate_json(line)
        if request.host is not None and request.host != host_from:
            host, host_from = make_host(request.host), request.host
        for target in setup.plugins:
            environ = dict(os.environ)  # restored after each turn: plugins sharing a worker never see
            if loaded.get(target.name) is None:  # imported at its first turn: a hang is blamed on it
                loaded[target.name] = _load(manager, target)
            problems = list(loaded[target.name] or [])
            registered = target.name in manager.plugin_names()
            if request.kind == "describe":
                reply = Reply(plugin=target.name, problems=problems,
                              declaration=manager.family(target.name) if registered else None,
                              fixture_dirs=manager.fixture_dirs(target.name) if registered else [],
                              transports=manager.answer(target.name, hookspec.TRANSPORTS, problems) if registered
                              else [])
            else:
                reply = _build(builder, target, host, problems, request.with_metrics) if registered else \
                    Reply(plugin=target.name, problems=problems)
            if dict(os.environ) != environ:  # one another's environment changes
                os.environ.clear()
                os.environ.update(environ)
            now = _footprint()
            leaked = _leaks(baseline, now)
            baseline = now if leaked else baseline  # blame each leak on one plugin only
            patched = _undo_patches(sdk)
            if patched:  # the answer was built with (or may meet) a changed SDK: none of it is used
                reply = Reply(plugin=target.name, problems=[*reply.problems, _patch_problem(target, patched)])
                leaked = " and ".join(filter(None, [leaked, "a patched SDK"]))
            reply = reply.model_copy(update={"leaked": leaked})
            answers.write(reply.model_dump_json().encode() + b"\n")
            answers.flush()
    return 0


def _build(builder: InventoryBuilder, target: PluginTarget, host: Host | None, problems: list[Problem],
           with_metrics: bool) -> Reply:
    """One plugin's answer to ``build``: its family, or what its idle workers need when it has no devices."""
    if host is None:
        raise ValueError("a build request before any host was given")  # the parent's bug: the worker dies
    try:
        family = builder.family(target.name, host, problems, with_metrics)
    except Exception as e:  # an SDK-side failure on this plugin's data: say so, keep the worker
        problems.append(Problem(plugin=target.name, distribution=target.distribution, hook=None,
                                code="inventory-failed", message=f"{type(e).__name__}: {e}",
                                fix="report this to the plugin's maintainers with the inventory input"))
        family = None
    idle = builder.worker_needs(target.name, []) if family is None else None
    return Reply(plugin=target.name, family=family, problems=problems, idle_worker=idle)


def _load(manager: PluginManager, target: PluginTarget) -> list[Problem]:
    before = len(manager.problems)
    try:
        module: object = importlib.import_module(target.module)
        plugin = getattr(module, target.attr) if target.attr else module
    except BaseException as e:  # reported with every answer, like a plugin that failed to load
        return [Problem(plugin=target.name, distribution=target.distribution, hook=None, code="hook-raised",
                        message=f"failed to import {type(e).__name__}: {e}", fix="make the plugin importable")]
    manager.register(plugin, target.name, distribution=target.distribution, version=target.version)
    return manager.problems[before:]


if __name__ == "__main__":
    sys.exit(worker_main(sys.argv[1:]))
