"""The host seam: the only way a plugin reads the machine.

A :class:`Host` answers environment lookups, file reads under a root, commands (argv, no shell, always
with a timeout), HTTP GETs (cloud metadata, always with a timeout) and vendor Python libraries behind
small adapters. :class:`RealHost` reads this machine; :class:`rayaccel.simulated.SimulatedHost`
answers from a fixture recorded in the vendor's own formats.
"""

from __future__ import annotations

import fnmatch
import importlib
import os
import shutil
import socket
import subprocess
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any, Protocol, runtime_checkable

#: Default timeout for vendor commands and metadata calls. Short: a hung tool must not hold up a node.
DEFAULT_COMMAND_TIMEOUT = 5.0
DEFAULT_HTTP_TIMEOUT = 1.0


class HostError(Exception):
    """Base of what a host raises; plugins catch these and report zero devices or a health reason."""


class CommandNotFound(HostError):
    pass


class CommandTimeout(HostError):
    pass


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

    def library(self, name: str) -> Any:
        """A vendor library adapter (see :data:`LIBRARY_ADAPTERS`). Raises LibraryUnavailable."""
        ...


#: Vendor library adapters: name -> ("module:real_factory", "module:simulated_factory").
#: The real factory takes no argument and returns the adapter (raising LibraryUnavailable when the
#: library or driver is missing); the simulated one takes the fixture's data for that library.
LIBRARY_ADAPTERS: dict[str, tuple[str, str]] = {
    "nvml": ("rayaccel.vendorlib.nvml:open_real", "rayaccel.vendorlib.nvml:open_simulated"),
    "amdsmi": ("rayaccel.vendorlib.amdsmi:open_real", "rayaccel.vendorlib.amdsmi:open_simulated"),
}


def register_library_adapter(name: str, real_factory: str, simulated_factory: str) -> None:
    """Register a vendor library adapter by import path (imported only when a plugin asks for it)."""
    LIBRARY_ADAPTERS[name] = (real_factory, simulated_factory)


def resolve_factory(path: str) -> Callable[..., Any]:
    module, _, attr = path.partition(":")
    obj: Any = importlib.import_module(module)
    for part in attr.split("."):
        obj = getattr(obj, part)
    return obj  # type: ignore[no-any-return]


def adapter_names(name: str) -> tuple[str, str]:
    try:
        return LIBRARY_ADAPTERS[name]
    except KeyError:
        raise LibraryUnavailable(
            f"no adapter registered for vendor library {name!r}; known: {sorted(LIBRARY_ADAPTERS)}"
        ) from None


class RealHost:
    """This machine, optionally seen under another root (a chroot or a container's rootfs)."""

    def __init__(self, root: str = "/", env: Mapping[str, str] | None = None) -> None:
        self._root = root
        self._env = env
        self._libraries: dict[str, Any] = {}

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
            return f.read()

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
        try:
            done = subprocess.run(list(argv), capture_output=True, text=True, timeout=timeout,
                                  check=False, env=dict(self.environ()), stdin=subprocess.DEVNULL)
        except FileNotFoundError as e:
            raise CommandNotFound(f"{argv[0]}: not found") from e
        except PermissionError as e:
            raise CommandNotFound(f"{argv[0]}: not executable") from e
        except subprocess.TimeoutExpired as e:
            raise CommandTimeout(f"{' '.join(argv)} did not finish within {timeout:g}s") from e
        return CommandResult(done.returncode, done.stdout, done.stderr)

    def http_get(self, url: str, headers: Mapping[str, str] | None = None,
                 timeout: float = DEFAULT_HTTP_TIMEOUT) -> HttpResponse:
        request = urllib.request.Request(url, headers=dict(headers or {}))
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response:
                return HttpResponse(response.status, response.read().decode("utf-8", "replace"))
        except urllib.error.HTTPError as e:
            return HttpResponse(e.code, e.read().decode("utf-8", "replace"))
        except (urllib.error.URLError, TimeoutError, OSError) as e:
            raise HttpUnavailable(f"GET {url}: {e}") from e

    def library(self, name: str) -> Any:
        if name not in self._libraries:
            real, _ = adapter_names(name)
            try:
                self._libraries[name] = resolve_factory(real)()
            except LibraryUnavailable:
                raise
            except Exception as e:  # an absent driver shows up as anything from ImportError to OSError
                raise LibraryUnavailable(f"{name}: {type(e).__name__}: {e}") from e
        return self._libraries[name]
