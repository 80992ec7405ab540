"""Recording a machine into a fixture: ``rayaccel record`` and ``rayaccel fixture expect``.

:class:`RecordingHost` wraps any :class:`rayaccel.host.Host` (the real machine, or a simulated one for
round-trip tests), delegates every call and keeps every answer a plugin read, in the fixture format of
:mod:`rayaccel.fixtures`: env keys asked for, files read or listed, commands, HTTP GETs and vendor
library calls. Library calls are kept as a call log (``{"rayaccel_calls": {"call(args)": [answers]}}``),
which :class:`ReplayLibrary` answers on a :class:`rayaccel.simulated.SimulatedHost`: exactly what was
asked, in the library's own call names, with its own exception classes.

Recording is strict: an answer the format cannot express (binary output, an unserialisable library
result, a program found by ``which`` but never run) raises :class:`RecordingError` naming the call.
"""

from __future__ import annotations

import builtins
import ctypes
import hashlib
import hmac
import json
import math
import os
import re
import secrets
import shlex
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath
from types import SimpleNamespace
from typing import Any

from rayaccel.errors import RayaccelError
from rayaccel.fixtures import Expected, FaultExpectation, HostState, parse_fixture
from rayaccel.host import (
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
from rayaccel.records import NodeInventory
from rayaccel.simulated import LIBRARY_FAULT_KEY

#: Reserved key of a library's fixture data holding a recorded call log (see :class:`ReplayLibrary`).
CALLS_KEY = "rayaccel_calls"
#: How long a replayed call that hung while recording blocks (the caller's own bound ends the wait).
REPLAY_HANG_SECONDS = 600.0


class RecordingError(RayaccelError):
    """An answer the fixture format cannot express; names the call."""


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


def _norm(path: str) -> str:
    return str(PurePosixPath("/" + path.lstrip("/")))


def _argv0_matches(line: str, program: str) -> bool:
    argv0 = shlex.split(line)[0]
    return argv0 == program or PurePosixPath(argv0).name == program


# Vendor libraries ----------------------------------------------------------------------------------


def _is_handle(value: Any) -> bool:
    """An opaque handle a library hands out and takes back (a device, an event set)."""
    return bool(getattr(type(value), "rayaccel_handle", False)) or isinstance(value, ctypes._Pointer | ctypes.c_void_p)


class RecordingLibrary:
    """A vendor library adapter whose every call is delegated and recorded as ``call(args) -> answers``."""

    def __init__(self, adapter: Any, name: str, host: RecordingHost) -> None:
        self._adapter = adapter
        self._name = name
        self._host = host
        self._calls: dict[str, list[Any]] = {}
        self._pending: dict[str, int] = {}
        self._handles: list[tuple[Any, str]] = []
        self.errors: list[str] = []

    def __getattr__(self, attr: str) -> Any:
        value = getattr(self._adapter, attr)
        if not callable(value) or isinstance(value, type):
            return value  # constants and exception classes pass through

        def recorded(*args: Any, **kwargs: Any) -> Any:
            try:
                key = self._key(attr, args, kwargs)
            except RecordingError as e:
                self.errors.append(str(e))
                return value(*args, **kwargs)
            with self._host._lock:
                self._pending[key] = self._pending.get(key, 0) + 1
            try:
                result = value(*args, **kwargs)
            except Exception as e:
                self._answer(key, {"$raise": self._exception(key, e)})
                raise
            try:
                answer = self._encode(key, result, key)
                outs = {str(i): self._encode(key, _out_struct(a), f"{key}#{i}") for i, a in enumerate(args)
                        if _out_struct(a) is not None}
            except RecordingError:  # kept in self.errors: the recording fails, the plugin's run does not
                with self._host._lock:
                    self._pending[key] -= 1
                return result
            self._answer(key, {"$return": answer, "$out": outs} if outs else answer)
            return result

        return recorded

    def _answer(self, key: str, answer: Any) -> None:
        with self._host._lock:
            self._pending[key] -= 1
            answers = self._calls.setdefault(key, [])
            if not answers or answers[-1] != answer:  # a repeated answer is kept once; a change is a new one
                answers.append(answer)

    def _handle_token(self, value: Any) -> str | None:
        for known, token in self._handles:
            try:
                if known is value or known == value:
                    return token
            except Exception:
                continue
        return None

    def _key(self, attr: str, args: Sequence[Any], kwargs: Mapping[str, Any]) -> str:
        parts = [json.dumps(self._encode_arg(attr, a), sort_keys=True) for a in args]
        parts += [f"{k}={json.dumps(self._encode_arg(attr, v), sort_keys=True)}" for k, v in sorted(kwargs.items())]
        return f"{attr}({', '.join(parts)})"

    def _encode_arg(self, attr: str, value: Any) -> Any:
        out = _out_struct(value)
        if out is not None:  # an output parameter (byref(struct)): the library fills it in
            return {"$out": type(out).__name__}
        if _is_handle(value):
            token = self._handle_token(value)
            if token is None:
                raise RecordingError(f"cannot record {self._name}.{attr}: it was passed a handle the library "
                                     "never returned while recording")
            return {"$handle": token}
        try:
            return _plain(value, f"{self._name}.{attr} argument")
        except RecordingError:
            raise

    def _encode(self, key: str, value: Any, where: str) -> Any:
        if _is_handle(value):
            token = self._handle_token(value)
            if token is None:
                token = where
                self._handles.append((value, token))
            return {"$handle": token}
        if value is None or isinstance(value, bool | int | str):
            return int(value) if isinstance(value, int) and not isinstance(value, bool) else value
        if isinstance(value, float):
            if not math.isfinite(value):
                raise self._fail(key, f"a non-finite number ({value})")
            return value
        if isinstance(value, bytes):
            try:
                return {"$bytes": value.decode("ascii")}
            except UnicodeDecodeError:
                raise self._fail(key, "binary bytes") from None
        if isinstance(value, list | tuple | ctypes.Array):
            return [self._encode(key, v, f"{where}[{i}]") for i, v in enumerate(value)]
        if isinstance(value, Mapping):
            if not all(isinstance(k, str) for k in value):
                raise self._fail(key, "a mapping with keys that are not strings")
            return {k: self._encode(key, v, f"{where}.{k}") for k, v in value.items()}
        if isinstance(value, SimpleNamespace):
            return {"$struct": {k: self._encode(key, v, f"{where}.{k}") for k, v in vars(value).items()}}
        if isinstance(value, ctypes.Structure | ctypes.Union):
            names = [f[0] for f in value._fields_]
            return {"$struct": {n: self._encode(key, getattr(value, n), f"{where}.{n}") for n in names}}
        raise self._fail(key, f"a {type(value).__name__} (not text, a number, a list, a mapping, a structure or a "
                              "handle)")

    def _fail(self, key: str, what: str) -> RecordingError:
        error = RecordingError(f"cannot record {self._name}.{key}: its result is {what}, which a fixture cannot "
                               "store")
        self.errors.append(str(error))
        return error

    def _exception(self, key: str, e: Exception) -> dict[str, Any]:
        if hasattr(e, "value"):
            args: list[Any] = [e.value]
        elif hasattr(e, "err_code"):
            args = [e.err_code]
        else:
            args = [str(a) for a in e.args] if e.args else [str(e)]
        try:
            args = [_plain(a, f"{self._name}.{key} exception") for a in args]
        except RecordingError as error:
            self.errors.append(str(error))
        return {"type": type(e).__name__, "bases": [c.__name__ for c in type(e).__mro__[1:]
                                                     if issubclass(c, Exception) and c is not Exception],
                "args": args}

    def data(self) -> dict[str, Any]:
        with self._host._lock:
            calls = {k: list(v) for k, v in self._calls.items()}
            for key, pending in self._pending.items():
                if pending > 0:  # started, never answered: the call hung and its caller gave up
                    calls.setdefault(key, []).append({"$hang": True})
        return {CALLS_KEY: dict(sorted(calls.items()))}


def _plain(value: Any, what: str) -> Any:
    """A JSON value (for call arguments), or RecordingError."""
    if value is None or isinstance(value, bool | str):
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float) and math.isfinite(value):
        return value
    if isinstance(value, list | tuple):
        return [_plain(v, what) for v in value]
    if isinstance(value, Mapping) and all(isinstance(k, str) for k in value):
        return {k: _plain(v, what) for k, v in value.items()}
    raise RecordingError(f"cannot record {what}: a {type(value).__name__}, which a fixture cannot store")


def _out_struct(value: Any) -> Any:
    """The structure behind an output parameter (``byref(struct)`` or the struct itself), else None."""
    obj = getattr(value, "_obj", value)
    return obj if isinstance(obj, ctypes.Structure | ctypes.Union) else None


def _fill(target: Any, data: Any) -> None:
    """Write a recorded structure into the caller's output parameter."""
    fields = data.get("$struct", {}) if isinstance(data, dict) else {}
    for name, value in fields.items():
        current = getattr(target, name)
        if isinstance(current, ctypes.Structure | ctypes.Union):
            _fill(current, value)
        elif isinstance(current, ctypes.Array):
            for i, item in enumerate(value):
                current[i] = item
        else:
            setattr(target, name, value)


class ReplayHandle:
    """A handle a replayed library hands out: equal to every other replay of the same recorded handle."""

    rayaccel_handle = True
    __slots__ = ("token",)

    def __init__(self, token: str) -> None:
        self.token = token

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ReplayHandle) and other.token == self.token

    def __hash__(self) -> int:
        return hash(self.token)

    def __repr__(self) -> str:
        return f"<recorded handle {self.token}>"


class ReplayLibrary:
    """A library answering from a recorded call log; ``base`` (the simulated adapter on empty data) gives the
    library's constants and exception classes."""

    def __init__(self, name: str, base: Any, calls: Mapping[str, Any]) -> None:
        self._name = name
        self._base = base
        self._calls = {k: list(v) if isinstance(v, list) else [v] for k, v in calls.items()}
        self._seen: dict[str, int] = {}
        self._lock = threading.Lock()

    def __getattr__(self, attr: str) -> Any:
        value = getattr(self._base, attr, None)
        if value is not None and (not callable(value) or isinstance(value, type)):
            return value

        def replayed(*args: Any, **kwargs: Any) -> Any:
            parts = [json.dumps(_replay_arg(a), sort_keys=True) for a in args]
            outs = {str(i): _out_struct(a) for i, a in enumerate(args) if _out_struct(a) is not None}
            parts += [f"{k}={json.dumps(_replay_arg(v), sort_keys=True)}" for k, v in sorted(kwargs.items())]
            key = f"{attr}({', '.join(parts)})"
            answers = self._calls.get(key)
            if not answers:
                raise RuntimeError(f"{self._name}.{key}: the recording has no answer for this call (simulated)")
            with self._lock:
                n = self._seen.get(key, 0)
                self._seen[key] = n + 1
            answer = answers[min(n, len(answers) - 1)]
            if isinstance(answer, dict) and answer.get("$hang"):
                time.sleep(REPLAY_HANG_SECONDS)
                raise RuntimeError(f"{self._name}.{attr} did not return (simulated)")
            if isinstance(answer, dict) and "$raise" in answer:
                raise self._exception(answer["$raise"])
            if isinstance(answer, dict) and set(answer) == {"$return", "$out"}:
                for i, data in dict(answer["$out"]).items():
                    if i in outs:
                        _fill(outs[i], data)
                answer = answer["$return"]
            return _decode(answer)

        return replayed

    def _exception(self, spec: Mapping[str, Any]) -> Exception:
        for name in [spec.get("type"), *(spec.get("bases") or [])]:
            cls = getattr(self._base, str(name), None) if name else None
            if not isinstance(cls, type):
                cls = getattr(builtins, str(name), None)
            if isinstance(cls, type) and issubclass(cls, Exception):
                try:
                    return cls(*spec.get("args", []))
                except Exception:
                    continue
        return RuntimeError(f"{self._name}: {spec.get('type')}: {spec.get('args')}")


def _replay_arg(value: Any) -> Any:
    out = _out_struct(value)
    if out is not None:
        return {"$out": type(out).__name__}
    if isinstance(value, ReplayHandle):
        return {"$handle": value.token}
    if isinstance(value, list | tuple):
        return [_replay_arg(v) for v in value]
    if isinstance(value, Mapping):
        return {k: _replay_arg(v) for k, v in value.items()}
    return value


def _decode(value: Any) -> Any:
    if isinstance(value, list):
        return [_decode(v) for v in value]
    if isinstance(value, dict):
        if set(value) == {"$handle"}:
            return ReplayHandle(str(value["$handle"]))
        if set(value) == {"$struct"}:
            return SimpleNamespace(**{k: _decode(v) for k, v in value["$struct"].items()})
        if set(value) == {"$bytes"}:
            return str(value["$bytes"]).encode("ascii")
        return {k: _decode(v) for k, v in value.items()}
    return value


# Expectations --------------------------------------------------------------------------------------


def expected_from_inventory(inventory: NodeInventory, plugin: str) -> dict[str, Any]:
    """A fixture's ``expected`` block: what this inventory is, for ``plugin``'s family."""
    family = next((f for f in inventory.families if f.plugin == plugin), None)
    devices = family.devices if family else []
    expected: dict[str, Any] = {"devices": len(devices), "device_ids": [d.id for d in devices]}
    if family and family.accelerator_type:
        expected["accelerator_type"] = family.accelerator_type
    expected["resources"] = dict(inventory.resources)
    expected["labels"] = dict(inventory.labels)
    health = {h.device: h.state for h in (family.health if family else []) if h.state != "healthy"}
    expected["health"] = {d.id: health[d.id] for d in devices if d.id in health}
    expected["skus"] = {d.id: d.sku for d in devices if d.sku}
    if family:
        expected["links"] = len(family.topology.links)
    Expected.model_validate(expected)
    return expected


def fault_expectation(inventory: NodeInventory, plugin: str) -> dict[str, Any]:
    family = next((f for f in inventory.families if f.plugin == plugin), None)
    health = {h.device: h.state for h in (family.health if family else []) if h.state != "healthy"}
    fatal = any(r.fatal for h in (family.health if family else []) for r in h.reasons)
    expected = {"health": health, "resources": dict(inventory.resources),
                "devices": len(family.devices) if family else 0, "fatal": fatal,
                "problem_codes": sorted({p.code for p in inventory.problems if p.plugin == plugin})}
    FaultExpectation.model_validate(expected)
    return expected


def merge_diff(base: Any, new: Any) -> Any:
    """The JSON merge patch (RFC 7386) that turns ``base`` into ``new``."""
    if not isinstance(base, dict) or not isinstance(new, dict):
        return new
    patch: dict[str, Any] = {}
    for key in base:
        if key not in new:
            patch[key] = None
    for key, value in new.items():
        if key not in base:
            patch[key] = value
        elif base[key] != value:
            patch[key] = merge_diff(base[key], value) if isinstance(value, dict) and isinstance(base[key], dict) \
                else value
    return patch


# Anonymising ---------------------------------------------------------------------------------------

_UUID = re.compile(r"\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b")
_MAC = re.compile(r"\b[0-9a-fA-F]{2}(?::[0-9a-fA-F]{2}){5}\b")
_IPV4 = re.compile(r"(?<![\w.])(?:\d{1,3}\.){3}\d{1,3}(?![\w.])")
_KEEP_IPS = {"127.0.0.1", "0.0.0.0", "169.254.169.254", "255.255.255.255"}


class Anonymizer:
    """Replaces serials, UUIDs, MACs, hostnames and IPs consistently: the same input gives the same token
    everywhere (keys and values, inside command output and file contents) and in every recording made
    with the same key, so a fault recorded later patches the same tokens. Tokens keep each string's shape
    (hex stays hex, digits stay digits), so a plugin parses them as it parses the originals."""

    def __init__(self, key: bytes, names: Sequence[str] = ()) -> None:
        self._key = key
        # A name holding a UUID or a MAC is covered by that pattern (and keeps its prefix, e.g. GPU-<uuid>).
        self._names = sorted({n for n in names if len(n) >= 4 and not _UUID.search(n) and not _MAC.search(n)},
                             key=len, reverse=True)
        self.replaced: dict[str, str] = {}

    def token(self, original: str) -> str:
        if original not in self.replaced:
            digest = hmac.new(self._key, original.encode(), hashlib.sha256).digest() * 8
            out = []
            for i, ch in enumerate(original):
                b = digest[i % len(digest)]
                if ch in "0123456789abcdef" and _looks_hex(original):
                    out.append("0123456789abcdef"[b % 16])
                elif ch in "0123456789ABCDEF" and _looks_hex(original):
                    out.append("0123456789ABCDEF"[b % 16])
                elif ch.isdigit():
                    out.append("0123456789"[b % 10])
                elif ch.isupper():
                    out.append("ABCDEFGHIJKLMNOPQRSTUVWXYZ"[b % 26])
                elif ch.islower():
                    out.append("abcdefghijklmnopqrstuvwxyz"[b % 26])
                else:
                    out.append(ch)
            self.replaced[original] = "".join(out)
        return self.replaced[original]

    def _ip(self, original: str) -> str:
        if original in _KEEP_IPS or original.startswith("127.") or any(int(p) > 255 for p in original.split(".")):
            return original
        if original not in self.replaced:
            digest = hmac.new(self._key, original.encode(), hashlib.sha256).digest()
            self.replaced[original] = f"10.{digest[0]}.{digest[1]}.{1 + digest[2] % 254}"
        return self.replaced[original]

    def text(self, value: str) -> str:
        for name in self._names:
            if name in value:
                value = re.sub(rf"(?<![A-Za-z0-9]){re.escape(name)}(?![A-Za-z0-9])",
                               lambda m: self.token(m.group(0)), value)
        value = _UUID.sub(lambda m: self.token(m.group(0)), value)
        value = _MAC.sub(lambda m: self.token(m.group(0)), value)
        return "\n".join(line if "version" in line.lower() else _IPV4.sub(lambda m: self._ip(m.group(0)), line)
                         for line in value.split("\n"))

    def data(self, value: Any) -> Any:
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, list):
            return [self.data(v) for v in value]
        if isinstance(value, dict):
            return {self.text(k): self.data(v) for k, v in value.items()}
        return value


def _looks_hex(value: str) -> bool:
    return bool(re.fullmatch(r"[0-9a-fA-F:.-]+", value))


def sensitive_names(inventory: NodeInventory, host_state: Mapping[str, Any]) -> list[str]:
    """Strings to anonymise besides the patterns: the hostname, device serials and ids (UUIDs or serials)."""
    names = [str(host_state.get("hostname") or "")]
    for family in inventory.families:
        for device in family.devices:
            names.append(device.id)
            for key, value in device.attributes.items():
                if "serial" in key.lower() or "uuid" in key.lower():
                    names.append(str(value))
    names += _serials_in(host_state)
    return [n for n in names if n]


def _serials_in(value: Any, key: str = "") -> list[str]:
    found: list[str] = []
    if isinstance(value, dict):
        for k, v in value.items():
            found += _serials_in(v, k)
            if "serial" in k.lower() and "(" in k:  # a library call such as nvmlDeviceGetSerial(...)
                found += [a for a in _strings(v)]
    elif isinstance(value, list):
        for v in value:
            found += _serials_in(v, key)
    elif isinstance(value, str) and ("serial" in key.lower() or key.lower().endswith("/serial_number")):
        found.append(value.strip())
    return found


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value.strip()]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


def anonymize_key(path: Path | None = None) -> bytes:
    """The secret that makes tokens consistent across recordings. The default one
    (``~/.config/rayaccel/anonymize.key``) is created on first use, mode 0600; one given by path must exist."""
    from rayaccel import inputfiles

    if path is None:
        path = Path.home() / ".config" / "rayaccel" / "anonymize.key"
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            with open(path, "x", encoding="ascii", opener=lambda p, flags: os.open(p, flags, 0o600)) as f:
                f.write(secrets.token_hex(32) + "\n")
    key = inputfiles.read_text(path, "anonymize key", RayaccelError).strip()
    if len(key) < 16:
        raise RayaccelError(f"{path}: an anonymize key is at least 16 characters of secret text; create one with "
                            "'head -c 32 /dev/urandom | base64 > FILE'")
    return key.encode()


# Fixture assembly ----------------------------------------------------------------------------------


def source_line(inventory: NodeInventory, plugin_versions: Mapping[str, str | None], hostname: str,
                simulated: bool) -> str:
    from rayaccel import __version__

    drivers = sorted({f"{d.driver_version}" for f in inventory.families for d in f.devices if d.driver_version})
    when = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    plugins = ", ".join(f"{name} {version or '(unversioned)'}" for name, version in plugin_versions.items())
    return (f"recorded by rayaccel record at {when} on {'simulated host ' if simulated else ''}{hostname}; "
            f"plugins: {plugins or 'none'}; driver: {', '.join(drivers) or 'not visible'}; "
            f"rayaccel SDK {__version__}")


def inventory_view(inventory: NodeInventory) -> dict[str, Any]:
    """What a replay must reproduce: devices, topology, health, resources and labels (not the host's name, not
    metric values, which change from one reading to the next)."""
    families = {f.plugin: {"devices": [d.model_dump(mode="json") for d in f.devices],
                           "topology": f.topology.model_dump(mode="json"),
                           "health": [h.model_dump(mode="json") for h in f.health],
                           "accelerator_type": f.accelerator_type, "resources": f.resources, "labels": f.labels,
                           "metrics": sorted({(m.device, m.name) for m in f.metrics})}
                for f in inventory.families}
    return {"families": families, "resources": inventory.resources, "labels": inventory.labels}


def shape_view(inventory: NodeInventory) -> dict[str, Any]:
    """The structure an anonymised recording keeps: device counts, health states, link and domain counts."""
    return {f.plugin: {"devices": len(f.devices), "health": [h.state for h in f.health],
                       "links": sorted(link.kind for link in f.topology.links),
                       "domains": [(d.kind, d.size) for d in f.topology.domains],
                       "resources": sorted(f.resources.items())} for f in inventory.families}


def first_difference(a: Any, b: Any, where: str = "") -> str | None:
    if isinstance(a, dict) and isinstance(b, dict):
        for key in sorted(set(a) | set(b), key=str):
            found = first_difference(a.get(key), b.get(key), f"{where}.{key}" if where else str(key))
            if found:
                return found
        return None
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            found = first_difference(x, y, f"{where}[{i}]")
            if found:
                return found
        return None
    return None if a == b else f"{where or '(top level)'}: recorded {a!r}, replayed {b!r}"


def validate_fixture_data(data: dict[str, Any], origin: str) -> None:
    """The recording must load with the project's loader; a failure here is the recorder's, named."""
    json.dumps(data, allow_nan=False)
    parse_fixture(json.loads(json.dumps(data)), origin)
