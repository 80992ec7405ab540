"""A host that answers from a fixture instead of the machine.

Faults can be active from the start (``faults=[...]``) or switched on while the host is in use by
writing fault names, one per line, into ``fault_file``: that is how tests inject a fault into a running
Ray node whose health monitor polls this host.
"""

from __future__ import annotations

import fnmatch
import functools
import os
import shlex
import stat
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from pathlib import PurePosixPath
from typing import Any

from rayaccel.errors import FixtureError
from rayaccel.files import reading
from rayaccel.hosts.fixtures import Fixture, HostState, apply_faults
from rayaccel.hosts.seam import (
    DEFAULT_COMMAND_TIMEOUT,
    DEFAULT_HTTP_TIMEOUT,
    MAX_OUTPUT_BYTES,
    CommandNotFound,
    CommandResult,
    CommandTimeout,
    HttpResponse,
    HttpUnavailable,
    LibraryAdapter,
    LibraryUnavailable,
    OutputTooLarge,
    check_adapter,
)
from rayaccel.records import Problem
from rayaccel.support.bounded import charging_hangs, simulated_hang

#: How long a simulated hung command blocks (in real time) before timing out: long enough to be a real wait,
#: short enough that suites exercising hangs stay fast. The caller's timeout still bounds it, and the rest of
#: that timeout is not forgotten: the host charges it to :attr:`SimulatedHost.skipped_wait_s`, so a plugin
#: that asks for 120 s three times is seen to wait 360 s, as it would on a real machine.
SIMULATED_HANG_SECONDS = 0.2
#: What a hung command or metadata request blocks for real in this process (:func:`sleep_hangs_for`).
_hang_sleep_s = SIMULATED_HANG_SECONDS
#: The simulated machine's host name, when not its fixture's: two nodes simulated from one fixture are two
#: machines, and host-local scale-up domain ids (``<host>-nvswitch``) must tell them apart as real ones do.
SIMULATE_HOSTNAME_ENV = "RAYACCEL_SIMULATE_HOSTNAME"
#: The largest fault file read: fault names, one a line (a fixture declares tens).
MAX_FAULT_FILE_BYTES = 64 * 1024
#: A fault file last changed this long before a read is trusted unchanged while its identity, size and times stay
#: the same; one changed more recently is read on every call (as git treats an index entry as racy): a change within
#: the same tick of the clock the kernel stamps change times with (1-10 ms) could leave all of them as they were.
FAULT_FILE_SETTLED_NS = 50_000_000
#: The same where change times are whole milliseconds (a file system stamping coarser: ext3's seconds, FAT's 2 s).
COARSE_FAULT_FILE_SETTLED_NS = 2_000_000_000


def sleep_hangs_for(seconds: float) -> None:
    """From now on, in this process, a simulated hung command or metadata request blocks for real at most
    ``seconds`` (default :data:`SIMULATED_HANG_SECONDS`); the rest of the caller's timeout is charged to
    :attr:`SimulatedHost.skipped_wait_s` as ever, so real plus charged time is the timeout whatever the split. A
    conformance run, whose checks grade a hang by that sum and make a few hundred hung calls, takes less."""
    global _hang_sleep_s
    if not 0 <= seconds <= SIMULATED_HANG_SECONDS:
        raise ValueError(f"a simulated hang sleeps 0 to {SIMULATED_HANG_SECONDS:g} s for real, not {seconds!r}")
    _hang_sleep_s = float(seconds)


@functools.lru_cache(maxsize=1 << 16)
def _norm(path: str) -> str:
    # Plugins ask for the same few hundred paths on every build: pathlib's parse is most of a lookup's cost.
    return str(PurePosixPath("/" + path.lstrip("/")))


def _identity(path: str) -> tuple[int, ...] | None:
    """A regular file's device, inode, size, modification and change times (the change time last), as ``lstat``
    gives them; None for anything else (a symlink, a directory, no file): that is read, and refused, every time."""
    try:
        info = os.lstat(path)
    except (OSError, ValueError):
        return None
    if not stat.S_ISREG(info.st_mode):
        return None
    return info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns


def _settled(changed_ns: int, read_from_ns: int) -> bool:
    """Whether any change to a file after ``read_from_ns`` (when its identity was taken) gives it a change time
    other than ``changed_ns``: so when the file last changed longer ago than a tick of the clock stamping it."""
    margin = COARSE_FAULT_FILE_SETTLED_NS if changed_ns % 1_000_000 == 0 else FAULT_FILE_SETTLED_NS
    return changed_ns < read_from_ns - margin


def _parent(path: str) -> str:
    """The parent of a normalised absolute path ("/" for "/" and its children), as PurePosixPath's."""
    return path[:path.rfind("/")] or "/"


class SimulatedHost:
    """A :class:`rayaccel.hosts.seam.Host` built from a fixture."""

    def __init__(self, fixture: Fixture, faults: Iterable[str] = (), fault_file: str | None = None) -> None:
        self.fixture = fixture
        self._faults = tuple(faults)
        self._own_faults = tuple(dict.fromkeys(self._faults))
        self._fault_file = fault_file
        #: What the fault file named when it was last read whole (kept while it cannot be read).
        self._file_faults: tuple[str, ...] = ()
        #: Why the fault file could not be read the last time (None: it was read).
        self._fault_file_problem: Problem | None = None
        #: The fault file's identity, size and times when it was last read whole and had settled, and what it named
        #: then: read again only once one of them differs (every call of every hook asks for the faults).
        self._fault_file_seen: tuple[tuple[int, ...], tuple[str, ...]] | None = None
        for name in self._faults:
            fixture.fault(name)  # fail now, with the list of valid names, not at first use
        self._cache_key: tuple[str, ...] | None = None
        self._rebuilding = threading.Lock()
        self._state = fixture.host
        self._dirs: set[str] = set()
        self._file_map: dict[str, str] = {}
        #: Directory -> the names in it (files and directories), for the state the host answers now.
        self._children: dict[str, set[str]] = {}
        self._libraries: dict[str, Any] = {}
        #: The data each open library session answers from (library name -> what its adapter was opened with).
        self._library_data: dict[str, Any] = {}
        #: Seconds of the callers' timeouts that hangs did not really sleep (simulated time a real host spends).
        self.skipped_wait_s = 0.0

    def _charge_skipped(self, seconds: float) -> None:
        """A simulated library's hang cut short under a caller's bound: the rest of that bound is host time."""
        self.skipped_wait_s += seconds

    def _hang(self, timeout: float) -> None:
        """Block as a hung tool does: the caller's whole timeout, of which at most SIMULATED_HANG_SECONDS (or what
        :func:`sleep_hangs_for` chose) is slept for real and the rest is charged to ``skipped_wait_s``."""
        wait = max(0.0, float(timeout))
        slept = min(wait, _hang_sleep_s)
        time.sleep(slept)
        self.skipped_wait_s += wait - slept

    # Fault switching ---------------------------------------------------------------------------

    @property
    def faults(self) -> tuple[str, ...]:
        """The faults this host was made with (those the fault file names are in :meth:`active_faults`)."""
        return self._faults

    @property
    def fault_file(self) -> str | None:
        """The file naming faults to switch on while the host lives, if any."""
        return self._fault_file

    def active_faults(self) -> tuple[str, ...]:
        if not self._fault_file:  # asked at every read of the host: the faults it was made with, each once
            return self._own_faults
        self._file_faults = self._read_fault_file(self._fault_file)
        return tuple(dict.fromkeys([*self._faults, *self._file_faults]))

    def _read_fault_file(self, path: str) -> tuple[str, ...]:
        """The faults ``path`` names; while it cannot be read (not a regular file, a symlink, too large, not
        text, a name the fixture does not declare) the last ones read, and :meth:`fault_file_problems` says
        why without quoting the file (it may be any file at all)."""
        self._fault_file_problem = None
        if path == os.devnull:  # "no fault file", as callers that need a path say it
            return ()
        started = time.time_ns()
        identity = _identity(path)
        seen = self._fault_file_seen
        if identity is not None and seen is not None and seen[0] == identity:
            return seen[1]
        self._fault_file_seen = None
        try:
            text = reading.read_text(path, "fault file", FixtureError, max_bytes=MAX_FAULT_FILE_BYTES,
                                     follow_symlinks=False)
        except FixtureError as e:
            if not os.path.lexists(path):
                return ()  # no file yet: no faults switched on
            return self._keep_faults(str(e))
        names = [line.strip() for line in text.splitlines() if line.strip() and not line.startswith("#")]
        declared = {fault.name for fault in self.fixture.faults}
        unknown = next((number for number, name in enumerate(names, 1) if name not in declared), None)
        if unknown is not None:
            return self._keep_faults(f"fault file {reading.shown(path)}: line {unknown} of the fault names is not "
                                     f"a fault fixture {self.fixture.ref} declares")
        if identity is not None and _settled(identity[-1], started):
            self._fault_file_seen = (identity, tuple(names))
        return tuple(names)

    def _keep_faults(self, why: str) -> tuple[str, ...]:
        faults = ", ".join(self._file_faults) or "none"
        self._fault_file_problem = Problem(
            plugin="rayaccel", code="bad-fault-file",
            message=f"{why}; the faults it named before ({faults}) stay on",
            fix=f"write fault names of fixture {self.fixture.ref}, one a line, into a regular file: "
                f"{', '.join(f.name for f in self.fixture.faults) or 'it declares none'}")
        return self._file_faults

    def fault_file_problems(self) -> list[Problem]:
        """Why the fault file cannot be read now, once for the node however many processes and hooks read it
        (the inventory adds it: :meth:`rayaccel.inventory.builder.InventoryBuilder.node`)."""
        self.active_faults()
        return [self._fault_file_problem] if self._fault_file_problem is not None else []

    def change_machine(self, fixture: Fixture) -> None:
        """The machine changes under the running process: from now on the host answers ``fixture``'s state (with
        the same faults), and each library session opened before stays open and answers it too, as a real library
        does when a counter resets under it (a GPU reset, a driver reload, a wrap) in a process that keeps its
        session. The sessions' data are updated in place, so an adapter that kept a part of its data at open (a
        section, a list of samples) sees the new values in it; one that copied values at open keeps those."""
        self.fixture = fixture
        self._fault_file_seen = None  # its names are checked against the faults the new fixture declares
        opened, held = self._libraries, self._library_data
        self._cache_key = None
        libraries = self.state().libraries
        for name, data in held.items():
            update_in_place(data, _without_fault(libraries.get(name) or {}))
        self._libraries, self._library_data = opened, held

    def state(self) -> HostState:
        key = self.active_faults()
        if key != self._cache_key:
            with self._rebuilding:  # hooks' threads read one host: the state changes once, for all of them
                if key != self._cache_key:
                    self._rebuild(key)
        return self._state

    def _rebuild(self, key: tuple[str, ...]) -> None:
        state = apply_faults(self.fixture, key)
        dirs = self._directories(state.files)
        file_map = {_norm(k): v for k, v in state.files.items() if not k.endswith("/")}
        children: dict[str, set[str]] = {}
        for entry in (*file_map, *dirs):
            if entry != "/":
                children.setdefault(_parent(entry), set()).add(entry[entry.rfind("/") + 1:])
        # Built whole, then put in place: a hook's thread reading the host meanwhile sees a complete index.
        self._state, self._dirs, self._file_map, self._children = state, dirs, file_map, children
        self._libraries = {}
        self._library_data = {}
        self._cache_key = key

    @staticmethod
    def _directories(files: Mapping[str, str]) -> set[str]:
        dirs = {"/"}
        for raw in files:
            path = _norm(raw)
            if raw.endswith("/"):
                dirs.add(path)
            while path != "/":
                path = _parent(path)
                if path in dirs:
                    break  # its parents are in already
                dirs.add(path)
        return dirs

    # Host protocol -------------------------------------------------------------------------------

    @property
    def name(self) -> str:
        return (os.environ.get(SIMULATE_HOSTNAME_ENV) or self.fixture.host.hostname
                or f"sim-{self.fixture.plugin}-{self.fixture.name}")

    @property
    def simulated(self) -> bool:
        return True

    def environ(self) -> Mapping[str, str]:
        return dict(self.state().env)

    def getenv(self, key: str, default: str | None = None) -> str | None:
        return self.state().env.get(key, default)

    def _files(self) -> dict[str, str]:
        self.state()
        return self._file_map

    def read_text(self, path: str) -> str:
        files = self._files()
        path = _norm(path)
        if path in files:
            return files[path]
        self.state()
        if path in self._dirs:
            raise IsADirectoryError(path)
        raise FileNotFoundError(path)

    def exists(self, path: str) -> bool:
        path = _norm(path)
        return path in self._files() or self.is_dir(path)

    def is_dir(self, path: str) -> bool:
        self.state()
        return _norm(path) in self._dirs

    def list_dir(self, path: str) -> list[str]:
        path = _norm(path)
        if not self.is_dir(path):
            if path in self._files():
                raise NotADirectoryError(path)
            raise FileNotFoundError(path)
        return sorted(self._children.get(path, ()))

    def glob(self, pattern: str) -> list[str]:
        parent, _, leaf = pattern.rpartition("/")
        parent = _norm(parent or "/")
        try:
            names = self.list_dir(parent)
        except (FileNotFoundError, NotADirectoryError):
            return []
        return [f"{parent.rstrip('/')}/{n}" for n in names if fnmatch.fnmatchcase(n, leaf)]

    def which(self, program: str) -> str | None:
        commands = self.state().commands
        for line in commands:
            argv0 = shlex.split(line)[0]
            if argv0 == program or PurePosixPath(argv0).name == program:
                return argv0 if argv0.startswith("/") else f"/usr/bin/{argv0}"
        return None

    def run(self, argv: Sequence[str], timeout: float = DEFAULT_COMMAND_TIMEOUT) -> CommandResult:
        commands = self.state().commands
        line = shlex.join(argv)
        answer = commands.get(line)
        if answer is None:
            if self.which(argv[0]) is None:
                raise CommandNotFound(f"{argv[0]}: not found")
            return CommandResult(2, "", f"{argv[0]}: the simulated host has no answer for: {line}\n")
        if answer.hang:
            self._hang(timeout)
            raise CommandTimeout(f"{line} did not finish within {timeout:g}s")
        for stream in (answer.stdout, answer.stderr):
            # The real host stops a command at MAX_OUTPUT_BYTES; so does the simulated one.
            if len(stream) > MAX_OUTPUT_BYTES // 4 and len(stream.encode("utf-8", "replace")) > MAX_OUTPUT_BYTES:
                raise OutputTooLarge(f"{line} printed more than {MAX_OUTPUT_BYTES} bytes; it was stopped")
        return CommandResult(answer.returncode, answer.stdout, answer.stderr)

    def http_get(self, url: str, headers: Mapping[str, str] | None = None,
                 timeout: float = DEFAULT_HTTP_TIMEOUT) -> HttpResponse:
        answer = self.state().http.get(url)
        if answer is None or answer.unreachable:
            # Off-cloud, the metadata host does not resolve: the caller sees no answer at all.
            raise HttpUnavailable(f"GET {url}: no route to host (simulated)")
        if answer.hang:
            self._hang(timeout)
            raise HttpUnavailable(f"GET {url}: no answer within {timeout:g}s (simulated)")
        sent = {k.lower(): v for k, v in (headers or {}).items()}
        for key, value in answer.require_headers.items():
            if sent.get(key.lower()) != value:
                return HttpResponse(403, f"missing header {key}: {value}")
        return HttpResponse(answer.status, answer.body)

    def library(self, adapter: LibraryAdapter) -> Any:
        name = check_adapter(adapter).name
        libraries = self.state().libraries
        if name not in self._libraries:
            data = libraries.get(name)
            if data is None:
                raise LibraryUnavailable(f"{name}: not installed on this (simulated) host")
            fault = data.get(LIBRARY_FAULT_KEY) if isinstance(data, dict) else None
            if isinstance(fault, dict):
                data = _without_fault(data)
            self._library_data[name] = data
            # Opened charging this host: a hang of the library under a caller's bound is not waited out in real
            # time, the rest of the bound goes to skipped_wait_s (rayaccel.support.bounded.simulated_hang).
            with charging_hangs(self._charge_skipped):
                if isinstance(data, dict) and RECORDED_CALLS_KEY in data:  # recorded by `rayaccel record`
                    from rayaccel.hosts.call_log import ReplayLibrary

                    calls = data[RECORDED_CALLS_KEY]
                    opened = ReplayLibrary(name, adapter.open_simulated({}), calls if isinstance(calls, dict) else {})
                else:
                    opened = adapter.open_simulated(data)
                self._libraries[name] = FaultyLibrary(opened, name, fault) if isinstance(fault, dict) else opened
        return self._libraries[name]


#: Reserved key in a library's fixture data: a fault of the library itself, whatever its adapter, e.g.
#: ``{"raise": "segfault in libfoo"}`` (every call raises RuntimeError) or ``{"hang": true, "hang_seconds": 30}``
#: (every call blocks, as a wedged driver does; the caller's own bound must end the wait).
LIBRARY_FAULT_KEY = "rayaccel_fault"
#: Reserved key in a library's fixture data: a call log recorded by ``rayaccel record``
#: (:mod:`rayaccel.hosts.recording`).
RECORDED_CALLS_KEY = "rayaccel_calls"


def _without_fault(data: Any) -> Any:
    return {k: v for k, v in data.items() if k != LIBRARY_FAULT_KEY} if isinstance(data, dict) else data


def update_in_place(held: Any, new: Any) -> None:
    """Make ``held`` (a dict or list of a library's data) equal ``new`` without replacing a dict or list that is in
    both: whoever keeps a reference into ``held`` sees the new values."""
    if isinstance(held, dict) and isinstance(new, dict):
        for key in [k for k in held if k not in new]:
            del held[key]
        for key, value in new.items():
            if isinstance(held.get(key), dict | list) and type(held[key]) is type(value):
                update_in_place(held[key], value)
            else:
                held[key] = value
    elif isinstance(held, list) and isinstance(new, list):
        if len(held) != len(new):
            held[:] = new
            return
        for i, value in enumerate(new):
            if isinstance(held[i], dict | list) and type(held[i]) is type(value):
                update_in_place(held[i], value)
            else:
                held[i] = value


class FaultyLibrary:
    """A library adapter whose every call raises or hangs; constants and exception classes pass through."""

    def __init__(self, adapter: Any, name: str, fault: Mapping[str, Any]) -> None:
        self._adapter = adapter
        self._name = name
        self._fault = dict(fault)
        self._hang = simulated_hang()

    def __getattr__(self, attr: str) -> Any:
        value = getattr(self._adapter, attr)
        if not callable(value) or isinstance(value, type):
            return value

        def faulty(*args: Any, **kwargs: Any) -> Any:
            if self._fault.get("hang"):
                self._hang(float(self._fault.get("hang_seconds", 30.0)))
            message = str(self._fault.get("raise") or f"{self._name}.{attr} did not return")
            raise RuntimeError(f"{self._name}.{attr}: {message} (simulated)")

        return faulty
