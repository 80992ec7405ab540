"""The worker process of :mod:`rayaccel.isolation.pool` (``python -m rayaccel.isolation.plugin_worker``): imports
only its plugins and answers each request with their families, as JSON lines on its own copy of stdout."""

from __future__ import annotations

import contextlib
import importlib
import os
import sys
import threading
import time
import types
import typing
from typing import Any

from pydantic import BaseModel, TypeAdapter
from pydantic_core import to_jsonable_python

from rayaccel import hookspec
from rayaccel.hosts.seam import Host
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
from rayaccel.plugins.manager import MISSING, PluginManager
from rayaccel.records import Problem
from rayaccel.support import bounded


def _watch_parent(parent: int) -> None:
    # A worker never outlives its parent, even when a hook holds it in C code and EOF goes unread.
    while True:
        time.sleep(1)
        if os.getppid() != parent:
            os._exit(3)


def descendant_pids(root: int) -> list[int]:
    """The processes ``root`` has started that still run (or wait to be reaped), at any depth."""
    try:  # Linux: each thread's direct children, without scanning every process on the machine as psutil does
        found, pending = [], [root]
        while pending:
            pid = pending.pop()
            for tid in os.listdir(f"/proc/{pid}/task"):
                with open(f"/proc/{pid}/task/{tid}/children", "rb") as f:  # bytes: no codec to import in a fork
                    children = [int(child) for child in f.read().split()]
                found.extend(children)
                pending.extend(children)
        return found
    except (OSError, ValueError):  # no such files (another OS, or a kernel without them), or a process just gone
        import psutil

        try:
            return [child.pid for child in psutil.Process(root).children(recursive=True)]
        except psutil.Error:
            return []


def _descendants() -> int:
    """How many processes this one has started that still run (or wait to be reaped), at any depth."""
    return len(descendant_pids(os.getpid()))


def _footprint() -> tuple[int, int]:
    # The threads waiting for the next hook call (kept between calls) are the worker's own, not a plugin's.
    return threading.active_count() - bounded.idle_threads(), _descendants()


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
    """Put back the SDK code replaced or removed since ``before`` (a plugin monkeypatching the SDK); its names.
    Each entry is looked up where it was (a dict lookup each, ~0.2 ms in all, not a walk of every module: this
    runs after every answer, and a hook call is a few milliseconds)."""
    gone = object()
    patched = sorted(name for name, (owner, attr, value) in before.items() if vars(owner).get(attr, gone) is not value)
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


def build_validators() -> None:
    """Build the validators of every record a worker makes or reads (pydantic builds each at first use, ~12 ms
    for a worker of a plugin without devices, ~25 ms with them): called in the process that forks the workers,
    so they share one set instead of each building its own; nothing once built."""
    from rayaccel import records
    from rayaccel.hosts.fixtures import Fixture, HostState  # a simulated host's spec is read as these

    models: list[type[BaseModel]] = [v for v in vars(records).values()
                                     if isinstance(v, type) and issubclass(v, records.Record)]
    models += [Fixture, HostState]
    for model in models:
        model.model_rebuild()


def worker_main() -> int:
    """A worker's life (``python -m rayaccel.isolation.plugin_worker``, or a process forked by
    :mod:`rayaccel.isolation.process`): requests on fd 0, answers on fd 1. See :mod:`rayaccel.isolation.pool`."""
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
    bounded.reuse_threads()  # a hook call per thread started costs as much as a small hook, a dozen times a poll
    first = requests.readline()
    if not first.strip():
        return 0  # the parent went away before it sent the set-up
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
        wanted = request.plugins if request.plugins is not None else [t.name for t in setup.plugins]
        for target in setup.plugins:
            if target.name not in wanted:
                continue
            environ = dict(os.environ)  # restored after each turn: plugins sharing a worker never see
            if loaded.get(target.name) is None:  # imported at its first turn: a hang is blamed on it
                loaded[target.name] = _load(manager, target)
            problems = list(loaded[target.name] or [])
            registered = target.name in manager.plugin_names()
            if not registered:
                reply = Reply(plugin=target.name, problems=problems)
            elif request.kind == "describe":
                reply = Reply(plugin=target.name, problems=problems, declaration=manager.family(target.name),
                              fixture_dirs=manager.fixture_dirs(target.name),
                              transports=manager.answer(target.name, hookspec.TRANSPORTS, problems),
                              hooks=[hook for hook in hookspec.HOOKS if manager.implements(target.name, hook)])
            elif request.kind == "call":
                reply = _call(manager, target, request, host, problems)
            elif request.kind == "transports":  # the classes are imported here, where the plugin runs
                reply = Reply(plugin=target.name, problems=problems,
                              transports=manager.transports(target.name, problems))
            else:
                reply = _build(builder, target, host, problems, request.with_metrics, request.record,
                               request.refresh)
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
           with_metrics: bool, record: bool = False, refresh: bool = False) -> Reply:
    """One plugin's answer to ``build``: its family, or what its idle workers need when it has no devices;
    with ``record``, what the plugin read of the host too (its own recording: plugins never share one)."""
    if host is None:
        raise ValueError("a build request before any host was given")  # the parent's bug: the worker dies
    recorder = None
    if record:
        from rayaccel.hosts.recording import RecordingHost

        recorder = RecordingHost(host)
    try:
        family, kept = (builder.refresh(target.name, host, problems, with_metrics) if refresh
                        else (builder.family(target.name, recorder or host, problems, with_metrics), False))
    except Exception as e:  # an SDK-side failure on this plugin's data: say so, keep the worker
        problems.append(Problem(plugin=target.name, distribution=target.distribution, hook=None,
                                code="inventory-failed", message=f"{type(e).__name__}: {e}",
                                fix="report this to the plugin's maintainers with the inventory input"))
        family, kept = None, False
    if kept and family is not None:  # the parent has the rest of it: this worker's answer to the last full build
        return Reply(plugin=target.name, problems=problems, kept=True, metrics=family.metrics)
    idle = builder.worker_needs(target.name, []) if family is None else None
    recording, why = None, None
    if recorder is not None:
        from rayaccel.hosts.call_log import RecordingError

        try:
            recording = recorder.host_state()
        except RecordingError as e:
            why = str(e)
    return Reply(plugin=target.name, family=family, problems=problems, idle_worker=idle, recording=recording,
                 recording_error=why)


def _call(manager: PluginManager, target: PluginTarget, request: Request, host: Host | None,
          problems: list[Problem]) -> Reply:
    """One plugin's answer to one hook (``call``): its arguments rebuilt from JSON by the hook's spec, the
    call bounded and contained as in any process, the validated answer sent back as JSON."""
    hook = request.hook or ""
    try:
        spec = getattr(hookspec, hook)
        hints = typing.get_type_hints(spec, localns={**hookspec.annotation_names(), "Host": Any})
        arguments = {name: TypeAdapter(hints[name]).validate_python(value)
                     for name, value in request.arguments.items()}
        if "host" in hints:
            if host is None:
                raise ValueError("the hook takes a host and the request gives none")
            arguments["host"] = host
    except (AttributeError, KeyError, ValueError) as e:  # the parent's request is wrong: say so, keep the worker
        problems.append(Problem(plugin=target.name, distribution=target.distribution, hook=hook or None,
                                code="call-refused", message=f"the worker cannot make this call: {e}",
                                fix="report this to rayaccel's maintainers"))
        return Reply(plugin=target.name, problems=problems)
    answer = manager.call(target.name, hook, problems, **arguments)
    return Reply(plugin=target.name, problems=problems,
                 answer=None if answer is MISSING else to_jsonable_python(answer),
                 answer_source=getattr(answer, "source_path", None))


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
    sys.exit(worker_main())
