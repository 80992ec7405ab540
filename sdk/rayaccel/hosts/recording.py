"""Recording a machine into a fixture: ``rayaccel record`` and ``rayaccel fixture expect``.

:class:`RecordingHost` wraps any :class:`rayaccel.hosts.seam.Host` (the real machine, or a simulated one for
round-trip tests), delegates every call and keeps every answer a plugin read, in the fixture format of
:mod:`rayaccel.hosts.fixtures`: env keys asked for, files read or listed, commands, HTTP GETs and vendor
library calls. Library calls are kept as a call log (``{"rayaccel_calls": {"call(args)": [answers]}}``),
which :class:`ReplayLibrary` answers on a :class:`rayaccel.hosts.simulated.SimulatedHost`: exactly what was
asked, in the library's own call names, with its own exception classes.

Recording is strict: an answer the format cannot express (binary output, an unserialisable library
result, a program found by ``which`` but never run) raises :class:`RecordingError` naming the call.
"""

from __future__ import annotations

import shlex
import threading
from collections.abc import Iterator, Mapping, Sequence
from pathlib import PurePosixPath
from typing import Any

from rayaccel.hosts.call_log import CALLS_KEY, REPLAY_HANG_SECONDS, RecordingError, RecordingLibrary
from rayaccel.hosts.fixtures import HostState
from rayaccel.hosts.seam import (
    DEFAULT_COMMAND_TIMEOUT,
    DEFAULT_HTTP_TIMEOUT,
    CommandResult,
    CommandTimeout,
    Host,
    HttpResponse,
    HttpUnavailable,
    LibraryAdapter,
    OutputTooLarge,
    check_adapter,
)
from rayaccel.hosts.simulated import LIBRARY_FAULT_KEY


def _text(what: str, value: str, errors: list[str]) -> str:
    """The value; a binary one is noted in ``errors`` (the recording fails at the end, the plugin's run goes on)."""
    if "\ufffd" in value:
        errors.append(f"cannot record {what}: the answer is not UTF-8 text (binary bytes); "
                      "fixtures store text only, so make the plugin read it another way")
    return value


class _RecordedEnv(Mapping[str, str]):
    """The environment as a mapping that records each key a plugin looks at (iterating records all)."""

    def __init__(self, env: Mapping[str, str], recorder: RecordingHost) -> None:
        self._env = env
        self._recorder = recorder

    def __getitem__(self, key: str) -> str:
        value = self._env[key]
        self._recorder._env_seen(key, value)
        return value

    def __contains__(self, key: object) -> bool:
        if isinstance(key, str) and key in self._env:
            self._recorder._env_seen(key, self._env[key])
            return True
        return False

    def __iter__(self) -> Iterator[str]:
        for key, value in self._env.items():
            self._recorder._env_seen(key, value)
        return iter(list(self._env))

    def __len__(self) -> int:
        return len(self._env)


class RecordingHost:
    """A Host that delegates every call to ``inner`` and records every answer a plugin read."""

    def __init__(self, inner: Host) -> None:
        self.inner = inner
        self._lock = threading.RLock()
        self.env: dict[str, str] = {}
        self.files: dict[str, str] = {}
        self._placeholders: set[str] = set()  # listed or tested, never read
        self.commands: dict[str, dict[str, Any]] = {}
        self.http: dict[str, dict[str, Any]] = {}
        self._libraries: dict[str, RecordingLibrary] = {}
        self._which: dict[str, str] = {}
        self._opening: dict[str, int] = {}
        self.errors: list[str] = []

    @property
    def lock(self) -> threading.RLock:
        """Guards the answers kept here and every recorded library's calls (a library records under it)."""
        return self._lock

    # Host protocol -----------------------------------------------------------------------------

    @property
    def name(self) -> str:
        return self.inner.name

    @property
    def simulated(self) -> bool:
        return self.inner.simulated

    def _env_seen(self, key: str, value: str) -> None:
        with self._lock:
            self.env[key] = _text(f"env {key}", value, self.errors)

    def environ(self) -> Mapping[str, str]:
        return _RecordedEnv(self.inner.environ(), self)

    def getenv(self, key: str, default: str | None = None) -> str | None:
        value = self.inner.getenv(key)
        if value is not None:
            self._env_seen(key, value)
            return value
        return default

    def _file(self, path: str, content: str) -> None:
        with self._lock:
            self.files[_norm(path)] = _text(f"file {path}", content, self.errors)
            self._placeholders.discard(_norm(path))

    def _entry(self, path: str) -> None:
        """Record that a path exists (a directory, or a file not read)."""
        path = _norm(path)
        with self._lock:
            if path in self.files or f"{path.rstrip('/')}/" in self.files:
                return
        if self.inner.is_dir(path):
            with self._lock:
                self.files[f"{path.rstrip('/')}/"] = ""
        elif self.inner.exists(path):
            with self._lock:
                self.files.setdefault(path, "")
                self._placeholders.add(path)

    def read_text(self, path: str) -> str:
        try:
            content = self.inner.read_text(path)
        except IsADirectoryError:
            self._entry(path)
            raise
        self._file(path, content)
        return content

    def exists(self, path: str) -> bool:
        found = self.inner.exists(path)
        if found:
            self._entry(path)
        return found

    def is_dir(self, path: str) -> bool:
        found = self.inner.is_dir(path)
        if found or self.inner.exists(path):
            self._entry(path)
        return found

    def list_dir(self, path: str) -> list[str]:
        try:
            names = self.inner.list_dir(path)
        except NotADirectoryError:
            self._entry(path)
            raise
        base = _norm(path).rstrip("/")
        self._entry(path)
        for name in names:
            self._entry(f"{base}/{name}")
        return names

    def glob(self, pattern: str) -> list[str]:
        matches = self.inner.glob(pattern)
        parent = pattern.rpartition("/")[0] or "/"
        if self.inner.is_dir(parent):
            self._entry(parent)
        for match in matches:
            self._entry(match)
        return matches

    def which(self, program: str) -> str | None:
        found = self.inner.which(program)
        if found is not None:
            with self._lock:
                self._which[program] = found
        return found

    def run(self, argv: Sequence[str], timeout: float = DEFAULT_COMMAND_TIMEOUT) -> CommandResult:
        line = shlex.join(argv)
        try:
            result = self.inner.run(argv, timeout)
        except CommandTimeout:
            with self._lock:
                self.commands.setdefault(line, {"hang": True})
            raise
        except OutputTooLarge:
            with self._lock:
                self.errors.append(f"cannot record command {line!r}: its output is over the host's limit "
                                   "(MAX_OUTPUT_BYTES); a fixture would have to store all of it")
            raise
        answer = {"stdout": _text(f"stdout of {line!r}", result.stdout, self.errors),
                  "stderr": _text(f"stderr of {line!r}", result.stderr, self.errors),
                  "returncode": result.returncode}
        with self._lock:
            self.commands.setdefault(line, answer)  # the first answer is the state recorded
        return result

    def http_get(self, url: str, headers: Mapping[str, str] | None = None,
                 timeout: float = DEFAULT_HTTP_TIMEOUT) -> HttpResponse:
        try:
            response = self.inner.http_get(url, headers, timeout)
        except HttpUnavailable as e:
            with self._lock:
                self.http.setdefault(url, {"hang": True} if "within" in str(e) else {"unreachable": True})
            raise
        with self._lock:
            self.http.setdefault(url, {"status": response.status,
                                       "body": _text(f"GET {url}", response.body, self.errors)})
        return response

    def library(self, adapter: LibraryAdapter) -> Any:
        name = check_adapter(adapter).name
        with self._lock:
            if name in self._libraries:
                return self._libraries[name]
        with self._lock:
            self._opening[name] = self._opening.get(name, 0) + 1
        try:
            opened = self.inner.library(adapter)  # LibraryUnavailable: recorded as absence
        finally:
            with self._lock:
                self._opening[name] -= 1
        with self._lock:
            return self._libraries.setdefault(name, RecordingLibrary(opened, name, self))

    # The recording -----------------------------------------------------------------------------

    def host_state(self) -> dict[str, Any]:
        """What was recorded, as fixture ``host`` data. Raises RecordingError for what it cannot express."""
        with self._lock:
            errors = list(self.errors)
            for program, path in sorted(self._which.items()):
                if not any(_argv0_matches(line, program) for line in self.commands):
                    errors.append(f"cannot record which({program!r}) = {path!r}: a plugin looked for the program "
                                  "but never ran it, and a fixture knows a program only by a command line")
            libraries: dict[str, Any] = {name: lib.data() for name, lib in sorted(self._libraries.items())}
            for name, opening in self._opening.items():
                if opening > 0 and name not in libraries:  # opening it never returned: a wedged driver
                    libraries[name] = {LIBRARY_FAULT_KEY: {"hang": True, "hang_seconds": REPLAY_HANG_SECONDS}}
            for lib in self._libraries.values():
                errors.extend(lib.errors)
            if errors:
                raise RecordingError(errors[0] + (f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""))
            state: dict[str, Any] = {"hostname": self.inner.name}
            for key, value in (("env", dict(sorted(self.env.items()))), ("files", dict(sorted(self.files.items()))),
                               ("commands", dict(sorted(self.commands.items()))),
                               ("http", dict(sorted(self.http.items()))), ("libraries", libraries)):
                if value:
                    state[key] = value
        HostState.model_validate(state)
        return state


def merge_host_states(hostname: str, states: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """One fixture ``host`` from the recordings of several plugins of one machine (each recorded in its own
    worker process): every key any of them read. A file one plugin read wins over the same path another only
    listed (recorded empty); a library's call logs are joined; otherwise the first recording's answer is kept,
    as a single recording keeps the first answer."""
    merged: dict[str, Any] = {"hostname": hostname}
    for state in states:
        for key, value in state.items():
            if key == "hostname" or not isinstance(value, Mapping):
                continue
            into = merged.setdefault(key, {})
            for name, answer in value.items():
                if key == "files" and into.get(name) == "" and answer:
                    into[name] = answer
                elif key == "libraries" and name in into and CALLS_KEY in answer and CALLS_KEY in into[name]:
                    into[name] = {**into[name], CALLS_KEY: {**answer[CALLS_KEY], **into[name][CALLS_KEY]}}
                else:
                    into.setdefault(name, answer)
    for key in ("env", "files", "commands", "http", "libraries"):
        if key in merged:
            merged[key] = dict(sorted(merged[key].items()))
    HostState.model_validate(merged)
    return merged


def _norm(path: str) -> str:
    return str(PurePosixPath("/" + path.lstrip("/")))


def _argv0_matches(line: str, program: str) -> bool:
    argv0 = shlex.split(line)[0]
    return argv0 == program or PurePosixPath(argv0).name == program
