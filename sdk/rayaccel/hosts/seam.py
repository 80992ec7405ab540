"""The host seam: the only way a plugin reads the machine.

A :class:`Host` answers environment lookups, file reads under a root, commands (argv, no shell, always
with a timeout), HTTP GETs (cloud metadata, always with a timeout) and vendor Python libraries behind
small adapters. :class:`RealHost` reads this machine; :class:`rayaccel.hosts.simulated.SimulatedHost`
answers from a fixture recorded in the vendor's own formats.
"""

from __future__ import annotations

import contextlib
import fnmatch
import os
import selectors
import shutil
import socket
import subprocess
import threading
import time
import urllib.parse
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any, Protocol, runtime_checkable

from rayaccel.support.bounded import checked_timeout
from rayaccel.support.signalling import kill_group

#: Default timeout for vendor commands and metadata calls. Short: a hung tool must not hold up a node.
DEFAULT_COMMAND_TIMEOUT = 5.0
DEFAULT_HTTP_TIMEOUT = 1.0
#: Most bytes kept of a command's stdout (and of its stderr), of an HTTP body and of a file read. A vendor
#: tool printing more is stopped: its answer is garbage, and reading on would only cost memory.
MAX_OUTPUT_BYTES = 8 * 1024 * 1024
#: After a command exits, how long its pipes may stay open (held by a child it left behind) before the
#: rest of its process group is killed.
EXIT_GRACE_SECONDS = 0.5


class HostError(Exception):
    """Base of what a host raises. A plugin may let one propagate (or raise its own): the hook is reported
    failed, with a fix that points at the node (a hung tool, a missing driver); or catch it where zero
    devices or a health reason is the true answer."""


class CommandNotFound(HostError):
    pass


class CommandTimeout(HostError):
    pass


class OutputTooLarge(HostError):
    """A command or HTTP answer longer than :data:`MAX_OUTPUT_BYTES`."""


class HttpUnavailable(HostError):
    """No answer: unreachable, timed out, or not on that cloud."""


class LibraryUnavailable(HostError):
    """The vendor library is not installed, or its driver is missing."""


@dataclass(frozen=True)
class CommandResult:
    returncode: int
    stdout: str
    stderr: str = ""


@dataclass(frozen=True)
class HttpResponse:
    status: int
    body: str


@runtime_checkable
class Host(Protocol):
    """What a plugin may ask of a machine. Paths are absolute POSIX paths on that machine."""

    @property
    def name(self) -> str: ...

    @property
    def simulated(self) -> bool: ...

    def environ(self) -> Mapping[str, str]: ...

    def getenv(self, key: str, default: str | None = None) -> str | None: ...

    def read_text(self, path: str) -> str:
        """Raises FileNotFoundError when absent, IsADirectoryError for a directory."""
        ...

    def exists(self, path: str) -> bool: ...

    def is_dir(self, path: str) -> bool: ...

    def list_dir(self, path: str) -> list[str]:
        """Names in a directory, sorted. Raises FileNotFoundError."""
        ...

    def glob(self, pattern: str) -> list[str]:
        """Absolute paths matching a pattern whose wildcards are in the last component only."""
        ...

    def which(self, program: str) -> str | None: ...

    def run(self, argv: Sequence[str], timeout: float = DEFAULT_COMMAND_TIMEOUT) -> CommandResult:
        """Run without a shell. Raises CommandNotFound or CommandTimeout."""
        ...

    def http_get(self, url: str, headers: Mapping[str, str] | None = None,
                 timeout: float = DEFAULT_HTTP_TIMEOUT) -> HttpResponse:
        """Raises HttpUnavailable when nothing answers in time."""
        ...

    def library(self, adapter: LibraryAdapter) -> Any:
        """The vendor library behind ``adapter``, opened once per host. Raises LibraryUnavailable."""
        ...


@dataclass(frozen=True)
class LibraryAdapter:
    """A vendor Python library behind a small adapter, as a plugin hands it to :meth:`Host.library`.

    The plugin that needs the library owns its adapter and passes this object (no name looked up in a
    registry, no import by string): ``host.library(NVML)``. ``name`` is the key of the library's data in a
    fixture (``host.libraries.<name>``) and in a recording. ``open_real()`` opens the library on this
    machine, raising :class:`LibraryUnavailable` when it or its driver is missing (any other exception is
    turned into one). ``open_simulated(data)`` answers from the fixture's data for ``name`` with the same
    calls and the same errors; on empty data (``{}``) it must still give the library's constants and
    exception classes (a recorded call log is replayed on top of it).
    """

    name: str
    open_real: Callable[[], Any]
    open_simulated: Callable[[Any], Any]

    def __post_init__(self) -> None:
        if not (isinstance(self.name, str) and self.name):
            raise ValueError(f"a library adapter needs a non-empty name, not {self.name!r}")
        if not (callable(self.open_real) and callable(self.open_simulated)):
            raise TypeError(f"library adapter {self.name!r}: open_real and open_simulated must be callables")


def check_adapter(adapter: object) -> LibraryAdapter:
    """``adapter`` if it is a :class:`LibraryAdapter`; a TypeError naming what to pass otherwise."""
    if not isinstance(adapter, LibraryAdapter):
        raise TypeError("host.library() takes a rayaccel.LibraryAdapter (the plugin's own adapter), "
                        f"not {type(adapter).__name__} {adapter!r}")
    return adapter


class RealHost:
    """This machine, optionally seen under another root (a chroot or a container's rootfs)."""

    def __init__(self, root: str = "/", env: Mapping[str, str] | None = None) -> None:
        self._root = root
        self._env = env
        self._libraries: dict[str, Any] = {}

    @property
    def root(self) -> str:
        """Where this machine's filesystem is seen from."""
        return self._root

    @property
    def given_env(self) -> Mapping[str, str] | None:
        """The environment this host was made with; None: the process's own, read at each call."""
        return self._env

    @property
    def name(self) -> str:
        return socket.gethostname()

    @property
    def simulated(self) -> bool:
        return False

    def _path(self, path: str) -> str:
        return os.path.join(self._root, str(PurePosixPath(path)).lstrip("/"))

    def environ(self) -> Mapping[str, str]:
        return dict(self._env if self._env is not None else os.environ)

    def getenv(self, key: str, default: str | None = None) -> str | None:
        return self.environ().get(key, default)

    def read_text(self, path: str) -> str:
        with open(self._path(path), encoding="utf-8", errors="replace") as f:
            return f.read(MAX_OUTPUT_BYTES)

    def exists(self, path: str) -> bool:
        return os.path.exists(self._path(path))

    def is_dir(self, path: str) -> bool:
        return os.path.isdir(self._path(path))

    def list_dir(self, path: str) -> list[str]:
        return sorted(os.listdir(self._path(path)))

    def glob(self, pattern: str) -> list[str]:
        parent, _, leaf = pattern.rpartition("/")
        parent = parent or "/"
        try:
            names = self.list_dir(parent)
        except (FileNotFoundError, NotADirectoryError, PermissionError):
            return []
        return [f"{parent.rstrip('/')}/{n}" for n in names if fnmatch.fnmatchcase(n, leaf)]

    def which(self, program: str) -> str | None:
        return shutil.which(program, path=self.getenv("PATH"))

    def run(self, argv: Sequence[str], timeout: float = DEFAULT_COMMAND_TIMEOUT) -> CommandResult:
        return run_bounded(argv, dict(self.environ()), timeout)

    def http_get(self, url: str, headers: Mapping[str, str] | None = None,
                 timeout: float = DEFAULT_HTTP_TIMEOUT) -> HttpResponse:
        return http_get_bounded(url, headers or {}, timeout)

    def library(self, adapter: LibraryAdapter) -> Any:
        name = check_adapter(adapter).name
        if name not in self._libraries:
            try:
                self._libraries[name] = adapter.open_real()
            except LibraryUnavailable:
                raise
            except Exception as e:  # an absent driver shows up as anything from ImportError to OSError
                raise LibraryUnavailable(f"{name}: {type(e).__name__}: {e}") from e
        return self._libraries[name]


def _kill_group(process: subprocess.Popen[bytes]) -> None:
    # The command runs in a session of its own, so its process group id is its pid: this reaches the
    # children it started too (a shell script's tools), which a plain kill would leave running. Once the
    # command is reaped its number may be a stranger's: kill_group then spares any process that holds it.
    kill_group(process.pid, process.returncode is None)
    with contextlib.suppress(ProcessLookupError):
        process.kill()


def run_bounded(argv: Sequence[str], env: Mapping[str, str], timeout: float,
                max_bytes: int = MAX_OUTPUT_BYTES) -> CommandResult:
    """Run argv (no shell) in its own process group, bounded in time and in output.

    Raises CommandNotFound, CommandTimeout (the whole group killed), or OutputTooLarge (likewise) when
    stdout or stderr passes ``max_bytes``. Output is decoded as UTF-8, undecodable bytes replaced.
    """
    timeout = checked_timeout(timeout)
    line = " ".join(argv)
    deadline = time.monotonic() + timeout
    try:
        process = subprocess.Popen(list(argv), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, env=dict(env), start_new_session=True)
    except FileNotFoundError as e:
        raise CommandNotFound(f"{argv[0]}: not found") from e
    except PermissionError as e:
        raise CommandNotFound(f"{argv[0]}: not executable") from e
    assert process.stdout is not None and process.stderr is not None
    out, err = bytearray(), bytearray()
    buffers = {process.stdout.fileno(): out, process.stderr.fileno(): err}
    exited_at: float | None = None
    try:
        with selectors.DefaultSelector() as selector:
            selector.register(process.stdout, selectors.EVENT_READ)
            selector.register(process.stderr, selectors.EVENT_READ)
            while selector.get_map():
                now = time.monotonic()
                if now >= deadline:
                    raise CommandTimeout(f"{line} did not finish within {timeout:g}s")
                if exited_at is None and process.poll() is not None:
                    exited_at = now
                if exited_at is not None and now - exited_at > EXIT_GRACE_SECONDS:
                    break  # exited, but something it left behind holds its output open
                for key, _ in selector.select(min(deadline - now, 0.1)):
                    chunk = os.read(key.fd, 65536)
                    if not chunk:
                        selector.unregister(key.fileobj)
                        continue
                    buffer = buffers[key.fd]
                    buffer += chunk
                    if len(buffer) > max_bytes:
                        raise OutputTooLarge(f"{line} printed more than {max_bytes} bytes; it was stopped")
        try:
            returncode = process.wait(max(deadline - time.monotonic(), 0.01))
        except subprocess.TimeoutExpired:
            raise CommandTimeout(f"{line} did not finish within {timeout:g}s") from None
    finally:
        _kill_group(process)  # whatever of the group is left: a timed-out tool, a child it left behind
        process.wait()
        process.stdout.close()
        process.stderr.close()
    return CommandResult(returncode, out.decode("utf-8", "replace"), err.decode("utf-8", "replace"))


def http_get_bounded(url: str, headers: Mapping[str, str], timeout: float,
                     max_bytes: int = MAX_OUTPUT_BYTES) -> HttpResponse:
    """GET url, bounded by ``timeout`` seconds in total (name lookup, connect, headers and body together),
    not per read: a server dripping one byte at a time is cut off at the deadline. Raises HttpUnavailable.

    The request runs in a daemon thread the caller waits for; at the deadline the caller shuts the socket
    down (which ends a blocked read) and returns. A name lookup cannot be interrupted: its thread ends
    when the resolver gives up, the caller does not wait for it.
    """
    import http.client  # here: ~30 ms of imports (ssl, email) a command that reads no URL never pays

    timeout = checked_timeout(timeout)
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise HttpUnavailable(f"GET {url}: only http:// and https:// URLs are supported")
    connection_type = http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
    connection = connection_type(parts.hostname, parts.port, timeout=timeout)
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    outcome: dict[str, Any] = {}

    def fetch() -> None:
        try:
            connection.request("GET", target, headers=dict(headers))
            response = connection.getresponse()
            body = bytearray()
            while chunk := response.read1(65536):
                body += chunk
                if len(body) > max_bytes:
                    raise OutputTooLarge(f"GET {url}: the answer is longer than {max_bytes} bytes")
            outcome["value"] = HttpResponse(response.status, bytes(body).decode("utf-8", "replace"))
        except Exception as e:
            outcome["error"] = e
        finally:
            connection.close()

    worker = threading.Thread(target=fetch, name="rayaccel-http-get", daemon=True)
    worker.start()
    worker.join(timeout)
    if worker.is_alive():
        sock = connection.sock
        if sock is not None:  # wakes the blocked read; the thread then ends
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
        raise HttpUnavailable(f"GET {url}: no complete answer within {timeout:g}s")
    error = outcome.get("error")
    if isinstance(error, HostError):
        raise error
    if isinstance(error, OSError | http.client.HTTPException):
        raise HttpUnavailable(f"GET {url}: {error}") from error
    if error is not None:
        raise error
    value: HttpResponse = outcome["value"]
    return value
