"""Hooks have no side effects: what the suite watches while a plugin's hook runs.

A hook may read the machine only through the :class:`~rayaccel.hosts.seam.Host` it is given and must return a
result and nothing else. While a hook runs under conformance, this module watches for:

- I/O around the Host seam: processes (``subprocess``, ``os.system``, ``exec``, ``fork``), network
  (``socket``, ``urllib``), files opened or listed outside the Python installation and the plugin's own
  package, native libraries loaded directly, and any file written, removed or renamed. These come from a
  ``sys.addaudithook`` hook (:mod:`rayaccel_conformance.harness.audit`), installed once per process (audit hooks
  cannot be removed), and path probes that raise no audit event (``os.stat``/``lstat``/``access``, under
  ``os.path.exists`` and ``pathlib``), wrapped while the hook runs; both gated on the hook being watched:
  events of the hook's thread, or of threads it started, count; calls made by the Host the hook was given
  (its methods run with a thread-local "inside the seam" mark) do not.
- Changes to the process: the environment (``os.environ`` before/after, and ``os.putenv``), ``sys.path``,
  output on ``sys.stdout``/``sys.stderr`` (captured while the hook runs), threads and child processes still running
  after it returned (``threading`` and ``psutil`` snapshots; the threads the SDK keeps waiting for the next
  bounded call, as a conformance run has it do, are its own, as are the process holding the run's Ray cluster and
  everything under it: :func:`exclude_process_tree`).
- Changes to its inputs: the hook gets deep copies of its arguments (the Host excepted), which are compared
  with the originals afterwards, so a hook sorting its input in place is reported as exactly that, and the
  SDK downstream never sees the change (no misleading symptom in another check).
- Time: a simulated host does not sleep a hung tool's whole timeout; it charges the rest to
  ``SimulatedHost.skipped_wait_s``. A hook whose real time plus that simulated time exceeds the hook budget
  would be abandoned on a real machine, and is reported.

Each finding names the plugin, the hook and the defect. The environment is restored, captured output is
dropped and child processes left behind are terminated, so one plugin's defect cannot change another check.
"""

from __future__ import annotations

import copy
import dataclasses
import os
import pickle
import sys
import threading
import time
import weakref
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import psutil

from rayaccel.hosts.seam import LibraryAdapter
from rayaccel.plugins.containment import environ_snapshot, restore_environ
from rayaccel.plugins.manager import CallOutcome, HookCall, PluginManager
from rayaccel.support.bounded import idle_thread_idents
from rayaccel.support.signalling import signal_held
from rayaccel_conformance.harness.audit import (
    Watch,
    active,
    install_audit_hook,
    probes_watched,
    python_roots,
    sdk_dirs,
    seam_mark,
    set_active,
    short,
)

#: How long threads a hook started may take to finish after it returned before they count as left behind.
THREAD_GRACE_S = 0.5

class SeamHost:
    """The Host a watched hook gets: the same host, whose calls are marked as going through the seam.

    One wrapper per host for as long as the host lives (:func:`seam_host`): a plugin that keeps state per host
    object (the previous counter sample a rate is computed from, an event subscription) finds it again on the
    next call, as it does with the host a node's monitor keeps across polls. The wrapper holds its host weakly,
    so keeping the wrapper (a plugin's per-host cache does) keeps no host alive."""

    def __init__(self, host: Any) -> None:
        try:
            ref: Callable[[], Any] = weakref.ref(host)
        except TypeError:  # a host that takes no weak reference: held, and wrapped afresh per call
            ref = lambda: host  # noqa: E731
        object.__setattr__(self, "_seam_ref", ref)

    def _seam_target(self) -> Any:
        host = object.__getattribute__(self, "_seam_ref")()
        if host is None:
            raise ReferenceError("this host has been released: a hook may use only the host it is given")
        return host

    def __getattr__(self, name: str) -> Any:
        attr = getattr(object.__getattribute__(self, "_seam_target")(), name)
        if not callable(attr):
            return attr

        def through_seam(*args: Any, **kwargs: Any) -> Any:
            seam_mark.seam = getattr(seam_mark, "seam", 0) + 1
            try:
                return attr(*args, **kwargs)
            finally:
                seam_mark.seam -= 1

        return through_seam

    def __repr__(self) -> str:
        return repr(object.__getattribute__(self, "_seam_target")())


_SEAM_HOSTS: weakref.WeakKeyDictionary[Any, SeamHost] = weakref.WeakKeyDictionary()
_SEAM_HOSTS_LOCK = threading.Lock()


def seam_host(host: Any) -> SeamHost:
    """The one :class:`SeamHost` of ``host`` while it lives (a fresh one for a host that takes no weak
    reference)."""
    with _SEAM_HOSTS_LOCK:
        try:
            wrapper = _SEAM_HOSTS.get(host)
        except TypeError:  # not weakly referable (or unhashable): nothing to keep it by
            return SeamHost(host)
        if wrapper is None or object.__getattribute__(wrapper, "_seam_ref")() is not host:  # equal is not same
            wrapper = _SEAM_HOSTS[host] = SeamHost(host)
        return wrapper


class _Tee:
    """sys.stdout/sys.stderr while a hook runs: the watched hook's writes are kept, everyone else's pass."""

    def __init__(self, real: Any, watch: Watch, name: str) -> None:
        self._real, self._watch, self._name = real, watch, name

    def write(self, text: str) -> int:
        if self._watch.owns_current_thread() and not getattr(seam_mark, "seam", 0):
            self._watch.output[self._name].append(str(text))
            return len(text)
        return int(self._real.write(text))

    def flush(self) -> None:
        self._real.flush()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)


def _in_vendor_call(thread: threading.Thread) -> bool:
    frame = sys._current_frames().get(thread.ident or -1)
    seam = tuple(os.path.join(d, name) for d in sdk_dirs() for name in ("host.py", "simulated.py"))
    while frame is not None:
        if os.path.realpath(frame.f_code.co_filename).startswith(seam) or _in_adapter_module(frame.f_globals):
            return True
        frame = frame.f_back
    return False


def _in_adapter_module(module_globals: Mapping[str, Any]) -> bool:
    """Code of a module that defines a library adapter (a plugin's own, e.g. its NVML module): part of the seam,
    as the host that opens it is."""
    name = module_globals.get("__name__")
    return any(isinstance(value, LibraryAdapter) and name in (getattr(value.open_real, "__module__", None),
                                                                getattr(value.open_simulated, "__module__", None))
               for value in list(module_globals.values()))


def _same(a: Any, b: Any) -> bool:
    try:
        return bool(a == b)
    except Exception:  # an input that cannot even be compared any more has been changed
        return False


#: A child process of the suite's own whose whole tree is never a hook's (the process holding the run's Ray
#: cluster, whose nodes start while hooks run): :func:`exclude_process_tree`.
_excluded_root: int | None = None


def exclude_process_tree(pid: int | None) -> None:
    """Never count this child process, or any process under it, as left behind by a hook (None: no longer)."""
    global _excluded_root
    _excluded_root = pid


def _excluded() -> set[int]:
    if _excluded_root is None:
        return set()
    try:
        root = psutil.Process(_excluded_root)
        return {_excluded_root, *(p.pid for p in root.children(recursive=True))}
    except psutil.Error:
        return {_excluded_root}


def _children(since: float) -> dict[psutil.Process, str]:
    """Child processes of this process started at or after ``since`` (epoch seconds) and still running, held by
    identity (a kill later reaches each only while it is still that process, never whoever took its number)."""
    found = {}
    try:
        children = psutil.Process().children(recursive=True)
        excluded = _excluded()  # after the listing: every process listed is in its tree by now
        for child in children:
            try:
                if child.pid in excluded:
                    continue
                if child.create_time() >= since - 1 and child.status() != psutil.STATUS_ZOMBIE:
                    found[child] = " ".join(child.cmdline()[:3]) or child.name()
            except psutil.Error:
                continue
    except psutil.Error:
        return {}
    return found


def _plugin_roots(manager: PluginManager, plugin: str) -> tuple[str, ...]:
    roots = list(python_roots())
    try:
        obj = manager.plugin(plugin).module
    except Exception:  # not loaded (yet): the Python roots only
        return tuple(roots)
    module = sys.modules.get(getattr(obj, "__module__", "") or "") if not hasattr(obj, "__file__") else obj
    for candidate in (getattr(module, "__file__", None), getattr(obj, "__file__", None)):
        if candidate:
            roots.append(os.path.realpath(str(Path(candidate).parent)))
    return tuple(roots)


class SideEffectGuard:
    """The manager's :class:`~rayaccel.plugins.manager.HookCallWatcher` that watches each hook call for side
    effects; what it found, per plugin, in the order seen."""

    def __init__(self, manager: PluginManager) -> None:
        self._manager = manager
        self.found: dict[str, list[str]] = {}
        self._roots: dict[str, tuple[str, ...]] = {}

    def around(self, call: HookCall, proceed: Callable[[HookCall], CallOutcome]) -> CallOutcome:
        if call.hook == "import" or active() is not None:
            return proceed(call)
        plugin, hook = call.plugin, call.hook
        if plugin not in self._roots:
            self._roots[plugin] = _plugin_roots(self._manager, plugin)
        mine = self.found.setdefault(plugin, [])
        # Once a hook was seen leaving threads behind, later calls need not wait for them again.
        grace = 0.0 if any(f.startswith(f"{plugin}: {hook} left ") for f in mine) else THREAD_GRACE_S
        found, result = run_watched(call, proceed, budget_s=float(self._manager.timeout or 10.0),
                                    roots=self._roots[plugin], grace_s=grace)
        mine.extend(f for f in found if f not in mine)
        return result


def _guard(manager: PluginManager) -> SideEffectGuard | None:
    return next((w for w in manager.watchers() if isinstance(w, SideEffectGuard)), None)


def findings(manager: PluginManager, plugin: str) -> list[str]:
    """Side effects seen so far for the plugin's hooks on this manager (each once, in the order seen)."""
    guard = _guard(manager)
    return list(guard.found.get(plugin, [])) if guard is not None else []


def watch_manager(manager: PluginManager) -> None:
    """Watch every hook call the manager makes from now on (idempotent)."""
    if _guard(manager) is None:
        install_audit_hook()
        manager.watch_calls(SideEffectGuard(manager))


def _copied(given: dict[str, Any]) -> dict[str, Any]:
    """A deep copy of a hook's inputs: a pickle round trip, which copies the records (pydantic models, lists of
    them) 1.6x faster than ``copy.deepcopy`` and keeps their shared parts shared as it does; deepcopy where an
    input does not pickle. Every hook call of a conformance run copies its inputs, so this is on the suite's path."""
    try:
        copied: dict[str, Any] = pickle.loads(pickle.dumps(given, protocol=pickle.HIGHEST_PROTOCOL))
    except Exception:
        return copy.deepcopy(given)
    return copied


def run_watched(call: HookCall, proceed: Callable[[HookCall], CallOutcome], *, budget_s: float,
                roots: tuple[str, ...], grace_s: float = THREAD_GRACE_S) -> tuple[list[str], CallOutcome]:
    """Make the call (``proceed``) while watching it; (findings, what the call ended with)."""
    plugin, hook, fn, kwargs, sink = call.plugin, call.hook, call.fn, call.kwargs, call.problems
    host = kwargs.get("host")
    given = {k: v for k, v in kwargs.items() if k != "host"}
    try:
        copies = _copied(given)
    except Exception:  # an input that cannot be copied is passed as is (and not compared)
        copies, given = dict(given), {}
    call_kwargs: dict[str, Any] = dict(copies)
    if host is not None:
        call_kwargs["host"] = seam_host(host)
    skipped_before = float(getattr(host, "skipped_wait_s", 0.0) or 0.0)
    env_before = environ_snapshot()  # the encoded environment: ~50x cheaper to copy and compare than os.environ
    wall_start = time.time()
    # A kept thread waiting for the next bounded call (the SDK's reuse_threads) is no one's: one the hook's own
    # bounded calls take while it runs is the hook's, as a thread it started is.
    kept = idle_thread_idents()
    watch = Watch(plugin, hook, budget_s, roots,
                  frozenset(t.ident for t in threading.enumerate() if t.ident and t.ident not in kept))

    def watched(**kw: Any) -> Any:
        watch.ident = threading.get_ident()
        try:
            return fn(**kw)
        finally:
            watch.done = True

    reported = len(sink)
    out, err = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = _Tee(out, watch, "stdout"), _Tee(err, watch, "stderr")
    import_path = list(sys.path)
    set_active(watch)
    started = time.perf_counter()
    try:
        with probes_watched():
            result = proceed(dataclasses.replace(call, fn=watched, kwargs=call_kwargs))
    finally:
        elapsed = time.perf_counter() - started
        set_active(None)
        if isinstance(sys.stdout, _Tee):
            sys.stdout = out
        if isinstance(sys.stderr, _Tee):
            sys.stderr = err
    timed_out = not watch.done  # abandoned by the SDK: that is a hook-timeout problem already
    found = [f"{plugin}: {hook} {text}" for text in watch.events]
    # The process environment: reported and put back.
    changed = restore_environ(env_before)  # put back; what `import ray` sets is Ray's, not the hook's
    if changed:
        found.append(f"{plugin}: {hook} changed the process environment ({', '.join(changed[:4])}): a hook must "
                     "not write os.environ; return the env in rayaccel_visible_env instead")
    # The import path: a hook that adds a directory makes later imports (anyone's) read outside the seam.
    if sys.path != import_path:
        added = [p for p in sys.path if p not in import_path]
        removed = [p for p in import_path if p not in sys.path]
        sys.path[:] = import_path
        found.append(f"{plugin}: {hook} changed sys.path (added {short(added) or 'nothing'}, removed "
                     f"{short(removed) or 'nothing'}): a hook must not change the import path; ship the vendor's "
                     "module as a dependency, or read its files through the host")
    # What the SDK itself contained (it restores os.environ and keeps prints out of the output): the same defects.
    for problem in sink[reported:]:
        if problem.plugin == plugin and problem.code == "environ-changed":
            found.append(f"{plugin}: {hook} changed the process environment ({problem.message}): a hook must not "
                         "write os.environ; return the env in rayaccel_visible_env instead")
        elif problem.plugin == plugin and problem.code == "printed":
            found.append(f"{plugin}: {hook} wrote to stdout/stderr ({problem.message}): a hook's only output is "
                         "its result; report problems with rayaccel.report_problem or a HealthReason")
    for stream, parts in watch.output.items():
        text = "".join(parts).strip()
        if text:
            found.append(f"{plugin}: {hook} wrote to stdout/stderr ({stream}: {short(text)!r}): a hook's only "
                         "output is its result; report problems with rayaccel.report_problem or a HealthReason")
    if not timed_out:
        deadline = time.monotonic() + grace_s
        kept = idle_thread_idents()  # back waiting for the next bounded call: the SDK's, not left behind
        left = [t for t in threading.enumerate() if t.ident not in watch.threads_before and t.ident != watch.ident
                and t.ident not in kept and t.is_alive() and t is not threading.current_thread()]
        for thread in left:
            thread.join(max(0.0, deadline - time.monotonic()))
        # A thread still blocked in a vendor call (the Host, or a library it gave) is how a plugin bounds an
        # in-process C call that hangs, as the SDK bounds hooks: abandoned, not a side effect. Any other is.
        left = [t for t in left if t.is_alive() and not _in_vendor_call(t)]
        if left:
            found.append(f"{plugin}: {hook} left {len(left)} thread(s) running after it returned "
                         f"({', '.join(t.name for t in left[:3])}): join every thread before returning")
    new_children = _children(wall_start) if watch.spawned else {}  # scanning /proc costs: only when spawned
    if new_children:
        found.append(f"{plugin}: {hook} left child processes running ({', '.join(new_children.values())}): a hook "
                     "must not start processes; use host.run(argv, timeout=...)")
        signal_held(new_children)
    for name, original_value in given.items():
        if not _same(original_value, copies[name]):
            found.append(f"{plugin}: {hook} changed its input {name!r} in place (a hook must not modify what it "
                         "is given: copy it first, e.g. sorted(devices) instead of devices.sort())")
    skipped = float(getattr(host, "skipped_wait_s", 0.0) or 0.0) - skipped_before
    if skipped > 0 and not timed_out and elapsed + skipped > budget_s:
        found.append(f"{plugin}: {hook} would take {elapsed + skipped:.1f}s on a real host, waiting out the "
                     f"timeouts it asked for on hung vendor tools; the hook budget is {budget_s:g}s and the SDK "
                     "would abandon it (hook-timeout): give up on the first timeout, keep the sum of timeouts "
                     "under the budget")
    return found, result
