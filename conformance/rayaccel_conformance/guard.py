"""Hooks have no side effects: what the suite watches while a plugin's hook runs.

A hook may read the machine only through the :class:`~rayaccel.host.Host` it is given and must return a
result and nothing else. While a hook runs under conformance, this module watches for:

- I/O around the Host seam: processes (``subprocess``, ``os.system``, ``exec``, ``fork``), network
  (``socket``, ``urllib``), files opened or listed outside the Python installation and the plugin's own
  package, native libraries loaded directly, and any file written, removed or renamed. These come from a
  ``sys.addaudithook`` hook, installed once per process (audit hooks cannot be removed) and gated on the
  hook being watched: events of the hook's thread, or of threads it started, count; calls made by the Host
  the hook was given (its methods run with a thread-local "inside the seam" mark) do not.
- Changes to the process: the environment (``os.environ`` before/after, and ``os.putenv``), output on
  ``sys.stdout``/``sys.stderr`` (captured while the hook runs), threads and child processes still running
  after it returned (``threading`` and ``psutil`` snapshots).
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

import contextlib
import copy
import os
import sys
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil

from rayaccel.host import LibraryAdapter

#: How long threads a hook started may take to finish after it returned before they count as left behind.
THREAD_GRACE_S = 0.5

_PROCESS_EVENTS = ("subprocess.Popen", "os.system", "os.exec", "os.posix_spawn", "os.spawn", "os.fork",
                   "os.forkpty", "pty.spawn", "os.startfile")
_NETWORK_EVENTS = ("socket.connect", "socket.bind", "socket.getaddrinfo", "socket.gethostbyname",
                   "socket.gethostbyaddr", "socket.sendto", "socket.sendmsg", "urllib.Request",
                   "http.client.connect", "ftplib.connect", "smtplib.connect")
_WRITE_EVENTS = ("os.remove", "os.rename", "os.mkdir", "os.rmdir", "os.truncate", "os.chmod", "os.chown",
                 "os.link", "os.symlink", "os.utime", "shutil.rmtree", "shutil.copyfile", "shutil.move",
                 "shutil.copytree", "os.chdir")
_LIST_EVENTS = ("os.listdir", "os.scandir", "glob.glob", "os.walk")
_ENV_EVENTS = ("os.putenv", "os.unsetenv")
_WATCHED = frozenset(_PROCESS_EVENTS + _NETWORK_EVENTS + _WRITE_EVENTS + _LIST_EVENTS + _ENV_EVENTS
                     + ("open", "ctypes.dlopen"))
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC

_local = threading.local()
_lock = threading.Lock()
_active: Watch | None = None
_installed = False


def _sdk_dirs() -> tuple[str, ...]:
    import rayaccel

    return (os.path.realpath(os.path.dirname(rayaccel.__file__)),)


def _python_roots() -> tuple[str, ...]:
    """Where a hook may read files: Python's installation and import path, and the SDK's own data."""
    roots = {os.path.realpath(p) for p in (sys.prefix, sys.base_prefix, sys.exec_prefix) if p}
    roots.update(_sdk_dirs())
    for entry in sys.path:
        if entry and os.path.isdir(entry):
            roots.add(os.path.realpath(entry))
    # An import path of "/" (a run from the root directory) must not make the whole machine readable.
    machine = ("/sys", "/proc", "/dev", "/etc", "/run", "/var")
    return tuple(sorted(r for r in roots if not any(m == r or m.startswith(r.rstrip("/") + "/") for m in machine)))


@dataclass
class Watch:
    """One hook call being watched."""

    plugin: str
    hook: str
    budget_s: float
    roots: tuple[str, ...]
    threads_before: frozenset[int]
    ident: int | None = None
    done: bool = False
    spawned: bool = False
    events: list[str] = field(default_factory=list)
    output: dict[str, list[str]] = field(default_factory=lambda: {"stdout": [], "stderr": []})

    def owns_current_thread(self) -> bool:
        ident = threading.get_ident()
        return ident == self.ident or (self.ident is not None and ident not in self.threads_before)

    def note(self, text: str) -> None:
        if text not in self.events and len(self.events) < 20:
            self.events.append(text)

    def readable(self, path: str) -> bool:
        real = os.path.realpath(path)
        return real in ("/dev/null", "/dev/urandom") or any(
            real == root or real.startswith(root.rstrip("/") + "/") for root in self.roots)


def _audit(event: str, args: tuple[Any, ...]) -> None:
    watch = _active
    if watch is None or event not in _WATCHED:
        return
    if event in _PROCESS_EVENTS or event.startswith(("os.exec", "os.spawn")):
        watch.spawned = True  # through the seam or not: look for children left behind afterwards
    if getattr(_local, "seam", 0) or getattr(_local, "busy", False) or not watch.owns_current_thread():
        return
    _local.busy = True
    try:
        _classify(watch, event, args)
    except Exception:
        pass
    finally:
        _local.busy = False


def _path(value: Any) -> str | None:
    if isinstance(value, bytes):
        return os.fsdecode(value)
    if isinstance(value, (str, os.PathLike)):
        return os.path.abspath(os.fspath(value))
    return None


def _classify(watch: Watch, event: str, args: tuple[Any, ...]) -> None:
    if event in _PROCESS_EVENTS or event.startswith(("os.exec", "os.spawn")):
        what = args[1] if event == "subprocess.Popen" and len(args) > 1 else (args[0] if args else "")
        watch.note(f"ran a process outside the Host seam ({event} {_short(what)}): use host.run(argv, timeout=...)")
    elif event in _NETWORK_EVENTS:
        watch.note(f"used the network outside the Host seam ({event} {_short(args[1:2] or args[:1])}): "
                   "use host.http_get(url, timeout=...)")
    elif event in _ENV_EVENTS:
        watch.note(f"wrote the process environment ({event} {_short(args[0] if args else '')}): a hook must not "
                   "change os.environ; return the env in rayaccel_visible_env instead")
    elif event in _WRITE_EVENTS:
        path = _path(args[0]) if args else None
        watch.note(f"changed the filesystem ({event} {path or _short(args)}): a hook must not write files")
    elif event == "open":
        path = _path(args[0]) if args else None
        if path is None:
            return
        mode = args[1] if len(args) > 1 else None
        flags = args[2] if len(args) > 2 and isinstance(args[2], int) else 0
        writes = (isinstance(mode, str) and any(c in mode for c in "wax+")) or bool(flags & _WRITE_FLAGS)
        if writes:
            watch.note(f"wrote a file ({path}): a hook must not write files")
        elif not watch.readable(path):
            watch.note(f"read {path} outside the Host seam: use host.read_text / host.exists")
    elif event in _LIST_EVENTS:
        path = _path(args[0]) if args else None
        if path is not None and not watch.readable(path):
            watch.note(f"listed {path} outside the Host seam: use host.list_dir / host.glob")
    elif event == "ctypes.dlopen":
        name = args[0] if args else None
        if name and not (isinstance(name, str) and os.path.isabs(name) and watch.readable(name)):
            watch.note(f"loaded native library {name} outside the Host seam: hand a rayaccel.LibraryAdapter to "
                       "host.library(adapter)")


def _short(value: Any) -> str:
    text = " ".join(map(str, value)) if isinstance(value, (list, tuple)) else str(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _install_audit_hook() -> None:
    global _installed
    with _lock:
        if not _installed:
            sys.addaudithook(_audit)
            _installed = True


class SeamHost:
    """The Host a watched hook gets: the same host, whose calls are marked as going through the seam."""

    def __init__(self, host: Any) -> None:
        object.__setattr__(self, "_seam_host", host)

    def __getattr__(self, name: str) -> Any:
        attr = getattr(object.__getattribute__(self, "_seam_host"), name)
        if not callable(attr):
            return attr

        def through_seam(*args: Any, **kwargs: Any) -> Any:
            _local.seam = getattr(_local, "seam", 0) + 1
            try:
                return attr(*args, **kwargs)
            finally:
                _local.seam -= 1

        return through_seam

    def __repr__(self) -> str:
        return repr(object.__getattribute__(self, "_seam_host"))


class _Tee:
    """sys.stdout/sys.stderr while a hook runs: the watched hook's writes are kept, everyone else's pass."""

    def __init__(self, real: Any, watch: Watch, name: str) -> None:
        self._real, self._watch, self._name = real, watch, name

    def write(self, text: str) -> int:
        if self._watch.owns_current_thread() and not getattr(_local, "seam", 0):
            self._watch.output[self._name].append(str(text))
            return len(text)
        return int(self._real.write(text))

    def flush(self) -> None:
        self._real.flush()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)


def _in_vendor_call(thread: threading.Thread) -> bool:
    frame = sys._current_frames().get(thread.ident or -1)
    seam = tuple(os.path.join(d, name) for d in _sdk_dirs() for name in ("host.py", "simulated.py"))
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


def _children(since: float) -> dict[int, str]:
    """Child processes of this process started at or after ``since`` (epoch seconds) and still running."""
    found = {}
    try:
        for child in psutil.Process().children(recursive=True):
            try:
                if child.create_time() >= since - 1 and child.status() != psutil.STATUS_ZOMBIE:
                    found[child.pid] = " ".join(child.cmdline()[:3]) or child.name()
            except psutil.Error:
                continue
    except psutil.Error:
        return {}
    return found


def _plugin_roots(manager: Any, plugin: str) -> tuple[str, ...]:
    roots = list(_python_roots())
    try:
        obj = manager.plugin(plugin).module
    except Exception:  # not loaded (yet): the Python roots only
        return tuple(roots)
    module = sys.modules.get(getattr(obj, "__module__", "") or "") if not hasattr(obj, "__file__") else obj
    for candidate in (getattr(module, "__file__", None), getattr(obj, "__file__", None)):
        if candidate:
            roots.append(os.path.realpath(str(Path(candidate).parent)))
    return tuple(roots)


def findings(manager: Any, plugin: str) -> list[str]:
    """Side effects seen so far for the plugin's hooks on this manager (each once, in the order seen)."""
    return list(getattr(manager, "_rayaccel_side_effects", {}).get(plugin, []))


def watch_manager(manager: Any) -> None:
    """Watch every hook call the manager makes from now on (idempotent)."""
    if getattr(manager, "_rayaccel_guarded", False):
        return
    _install_audit_hook()
    original: Callable[..., tuple[bool, Any]] = manager._bounded
    store: dict[str, list[str]] = {}
    roots: dict[str, tuple[str, ...]] = {}

    def bounded(fn: Callable[..., Any], kwargs: Mapping[str, Any], plugin: str, dist: str | None, hook: str,
                problems: list[Any] | None = None) -> tuple[bool, Any]:
        if hook == "import" or _active is not None:
            return original(fn, kwargs, plugin, dist, hook, problems)
        if plugin not in roots:
            roots[plugin] = _plugin_roots(manager, plugin)
        mine = store.setdefault(plugin, [])
        # Once a hook was seen leaving threads behind, later calls need not wait for them again.
        grace = 0.0 if any(f.startswith(f"{plugin}: {hook} left ") for f in mine) else THREAD_GRACE_S
        found, result = run_watched(original, fn, kwargs, plugin, dist, hook, problems,
                                    budget_s=float(manager.timeout or 10.0), roots=roots[plugin], grace_s=grace)
        mine.extend(f for f in found if f not in mine)
        return result

    manager._bounded = bounded
    manager._rayaccel_side_effects = store
    manager._rayaccel_guarded = True


def run_watched(original: Callable[..., tuple[bool, Any]], fn: Callable[..., Any], kwargs: Mapping[str, Any],
                plugin: str, dist: str | None, hook: str, problems: list[Any] | None, *, budget_s: float,
                roots: tuple[str, ...], grace_s: float = THREAD_GRACE_S) -> tuple[list[str], tuple[bool, Any]]:
    """Call the hook through the manager's ``_bounded`` while watching it; (findings, what _bounded returned)."""
    global _active
    host = kwargs.get("host")
    given = {k: v for k, v in kwargs.items() if k != "host"}
    try:
        copies = copy.deepcopy(given)
    except Exception:  # an input that cannot be copied is passed as is (and not compared)
        copies, given = dict(given), {}
    call_kwargs: dict[str, Any] = dict(copies)
    if host is not None:
        call_kwargs["host"] = SeamHost(host)
    skipped_before = float(getattr(host, "skipped_wait_s", 0.0) or 0.0)
    env_before = dict(os.environ)
    wall_start = time.time()
    watch = Watch(plugin, hook, budget_s, roots, frozenset(t.ident for t in threading.enumerate() if t.ident))

    def watched(**kw: Any) -> Any:
        watch.ident = threading.get_ident()
        try:
            return fn(**kw)
        finally:
            watch.done = True

    sink: list[Any] = problems if problems is not None else getattr(original, "__self__", None).problems  # type: ignore[union-attr]
    reported = len(sink)
    out, err = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = _Tee(out, watch, "stdout"), _Tee(err, watch, "stderr")
    _active = watch
    started = time.perf_counter()
    try:
        result = original(watched, call_kwargs, plugin, dist, hook, problems)
    finally:
        elapsed = time.perf_counter() - started
        _active = None
        if isinstance(sys.stdout, _Tee):
            sys.stdout = out
        if isinstance(sys.stderr, _Tee):
            sys.stderr = err
    timed_out = not watch.done  # abandoned by the SDK: that is a hook-timeout problem already
    found = [f"{plugin}: {hook} {text}" for text in watch.events]
    # The process environment: reported and put back.
    env_after = dict(os.environ)
    changed = sorted(k for k in set(env_before) | set(env_after) if env_before.get(k) != env_after.get(k))
    if changed:
        for key in changed:
            if key in env_before:
                os.environ[key] = env_before[key]
            else:
                os.environ.pop(key, None)
        found.append(f"{plugin}: {hook} changed the process environment ({', '.join(changed[:4])}): a hook must "
                     "not write os.environ; return the env in rayaccel_visible_env instead")
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
            found.append(f"{plugin}: {hook} wrote to stdout/stderr ({stream}: {_short(text)!r}): a hook's only "
                         "output is its result; report problems with rayaccel.report_problem or a HealthReason")
    if not timed_out:
        deadline = time.monotonic() + grace_s
        left = [t for t in threading.enumerate() if t.ident not in watch.threads_before and t.ident != watch.ident
                and t.is_alive() and t is not threading.current_thread()]
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
        for pid in new_children:
            with contextlib.suppress(psutil.Error):
                psutil.Process(pid).kill()
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
