"""What a watched hook did around the Host seam, as Python's audit events show it (``sys.addaudithook``):
processes, network, files written, read or listed outside the allowed roots, native libraries, env writes.
:mod:`rayaccel_conformance.harness.guard` decides which hook call is watched (:func:`set_active`)."""

from __future__ import annotations

import contextlib
import genericpath
import os
import pathlib
import platform
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from types import FrameType
from typing import Any

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
#: The machine's own name: the host a hook inventories may be another (a simulated or recorded one).
_IDENTITY_EVENTS = ("socket.gethostname",)
_WATCHED = frozenset(_PROCESS_EVENTS + _NETWORK_EVENTS + _WRITE_EVENTS + _LIST_EVENTS + _ENV_EVENTS + _IDENTITY_EVENTS
                     + ("open", "ctypes.dlopen"))
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC

#: Per thread: ``seam`` counts calls inside the Host seam (not the hook's own I/O), ``busy`` guards re-entry.
seam_mark = threading.local()
_lock = threading.Lock()
_active: Watch | None = None
_installed = False


def set_active(watch: Watch | None) -> None:
    """The hook call the audit hook attributes events to (None: no hook is being watched)."""
    global _active
    _active = watch


def active() -> Watch | None:
    return _active


def sdk_dirs() -> tuple[str, ...]:
    import rayaccel

    return (os.path.realpath(os.path.dirname(rayaccel.__file__)),)


def python_roots() -> tuple[str, ...]:
    """Where a hook may read files: Python's installation and import path, and the SDK's own data."""
    roots = {os.path.realpath(p) for p in (sys.prefix, sys.base_prefix, sys.exec_prefix) if p}
    roots.update(sdk_dirs())
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
    if getattr(seam_mark, "seam", 0) or getattr(seam_mark, "busy", False) or not watch.owns_current_thread():
        return
    seam_mark.busy = True
    try:
        if event in _FILE_EVENTS and (_in_sdk_cache() or _writing_bytecode(args)):
            return
        _classify(watch, event, args)
    except Exception:
        pass
    finally:
        seam_mark.busy = False


_FILE_EVENTS = frozenset(("open", *_WRITE_EVENTS, *_LIST_EVENTS))


def _in_sdk_cache() -> bool:
    """The event comes from the SDK's cache of checked documents (:mod:`rayaccel.files.checked`, which a
    catalog or fixture read goes through): the SDK's own files, whichever hook called it."""
    module = sys.modules.get("rayaccel.files.checked")
    source = getattr(module, "__file__", None)
    frame: FrameType | None = sys._getframe(2)
    while source and frame is not None:
        if frame.f_code.co_filename == source:
            return True
        frame = frame.f_back
    return False


#: Who caches a module's bytecode: Python's import system, and pytest's assertion rewriter (which rewrites every
#: module of a distribution that has a ``pytest11`` entry point, as rayaccel has for ``rayaccel.testing``).
_BYTECODE_WRITERS = ("<frozen importlib._bootstrap_external>",
                     os.path.join("_pytest", "assertion", "rewrite.py"))


def _writing_bytecode(args: tuple[Any, ...]) -> bool:
    """The event is a module's bytecode being cached (``__pycache__``, where a fresh checkout has none yet): the
    interpreter's (or pytest's) file, not the hook's side effect, whichever module the hook imported first."""
    path = _path(args[0]) if args else None
    if path is None or "__pycache__" not in path.split(os.sep):
        return False
    frame: FrameType | None = sys._getframe(2)
    while frame is not None:
        if frame.f_code.co_filename.endswith(_BYTECODE_WRITERS):
            return True
        frame = frame.f_back
    return False


def _path(value: Any) -> str | None:
    if isinstance(value, bytes):
        return os.fsdecode(value)
    if isinstance(value, (str, os.PathLike)):
        return os.path.abspath(os.fspath(value))
    return None


def _classify(watch: Watch, event: str, args: tuple[Any, ...]) -> None:
    if event in _PROCESS_EVENTS or event.startswith(("os.exec", "os.spawn")):
        what = args[1] if event == "subprocess.Popen" and len(args) > 1 else (args[0] if args else "")
        watch.note(f"ran a process outside the Host seam ({event} {short(what)}): use host.run(argv, timeout=...)")
    elif event in _NETWORK_EVENTS:
        watch.note(f"used the network outside the Host seam ({event} {short(args[1:2] or args[:1])}): "
                   "use host.http_get(url, timeout=...)")
    elif event in _IDENTITY_EVENTS:
        if not _called_by_sdk():
            watch.note(_hostname_read(event))
    elif event in _ENV_EVENTS:
        watch.note(f"wrote the process environment ({event} {short(args[0] if args else '')}): a hook must not "
                   "change os.environ; return the env in rayaccel_visible_env instead")
    elif event in _WRITE_EVENTS:
        path = _path(args[0]) if args else None
        watch.note(f"changed the filesystem ({event} {path or short(args)}): a hook must not write files")
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


#: ``os`` functions that probe a path without an audit event (``os.path.exists``, ``isdir``, ``isfile``,
#: ``getsize``, ``pathlib.Path.exists`` all end in one): wrapped while a hook is watched.
_PROBES = ("stat", "lstat", "access")


def _probe(name: str, real: Any) -> Any:
    def probe(path: Any, *args: Any, **kwargs: Any) -> Any:
        watch = _active
        if (watch is not None and not isinstance(path, int) and not getattr(seam_mark, "seam", 0)
                and not getattr(seam_mark, "busy", False) and watch.owns_current_thread()):
            seam_mark.busy = True
            try:
                where = _path(path)
                if where is not None and not watch.readable(where) and not _ancestor_of_root(watch, where) \
                        and not _called_by_sdk():
                    watch.note(f"probed {where} outside the Host seam (os.{name}, as os.path.exists, isdir and "
                               "pathlib do): use host.exists / host.is_dir")
            except Exception:
                pass
            finally:
                seam_mark.busy = False
        return real(path, *args, **kwargs)

    probe.__wrapped__ = real  # type: ignore[attr-defined]
    return probe


def _ancestor_of_root(watch: Watch, path: str) -> bool:
    """``os.path.realpath`` of a readable file probes each directory above it (``/work``, ``/work/main``)."""
    prefix = path.rstrip("/") + "/"
    return any(root.startswith(prefix) for root in watch.roots)


_PATH_MODULES = frozenset(os.path.realpath(m.__file__ or "") for m in (os, os.path, genericpath, pathlib))
_STDLIB = os.path.realpath(os.path.dirname(os.__file__))


def _called_by_sdk() -> bool:
    """The probe comes from the SDK (a catalog or fixture loaded for the hook, its cache of checked documents),
    not from the plugin's own code: the first caller outside the standard library and this module is in the
    rayaccel package."""
    frame: FrameType | None = sys._getframe(2)
    sdk = sdk_dirs()
    while frame is not None:
        name = frame.f_code.co_filename
        source = name if name.startswith("<frozen ") else os.path.realpath(name)  # <frozen posixpath>: stdlib
        in_stdlib = source.startswith("<frozen ") or source in _PATH_MODULES or (
            source.startswith(_STDLIB + os.sep) and "site-packages" not in source)
        if not in_stdlib and source != os.path.realpath(__file__):
            return any(source.startswith(d + os.sep) for d in sdk)
        frame = frame.f_back
    return False


def _hostname_read(how: str) -> str:
    return (f"read this machine's hostname outside the Host seam ({how}): the host a hook answers for may be "
            "another machine (a simulated or recorded one, a node the inventory is built for): use host.hostname")


def _node_name(real: Any) -> Any:
    """``platform.node`` (``os.uname``'s nodename, no audit event), seen when a watched hook's own code asks."""
    def node() -> Any:
        watch = _active
        if (watch is not None and not getattr(seam_mark, "seam", 0) and not getattr(seam_mark, "busy", False)
                and watch.owns_current_thread()):
            seam_mark.busy = True
            try:
                if not _called_by_sdk():
                    watch.note(_hostname_read("platform.node"))
            except Exception:
                pass
            finally:
                seam_mark.busy = False
        return real()

    node.__wrapped__ = real  # type: ignore[attr-defined]
    return node


@contextlib.contextmanager
def probes_watched() -> Iterator[None]:
    """While a hook runs: path probes and the machine's name asked without an audit event are seen too (put
    back afterwards)."""
    originals = {name: getattr(os, name) for name in _PROBES}
    for name, real in originals.items():
        setattr(os, name, _probe(name, real))
    real_node = platform.node
    platform.node = _node_name(real_node)
    try:
        yield
    finally:
        for name, real in originals.items():
            setattr(os, name, real)
        platform.node = real_node


def short(value: Any) -> str:
    text = " ".join(map(str, value)) if isinstance(value, (list, tuple)) else str(value)
    return text if len(text) <= 80 else text[:77] + "..."


def install_audit_hook() -> None:
    global _installed
    with _lock:
        if not _installed:
            sys.addaudithook(_audit)
            _installed = True
