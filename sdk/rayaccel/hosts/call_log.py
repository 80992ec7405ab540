"""Vendor library calls as a call log: :class:`RecordingLibrary` keeps every call a plugin makes through a
library adapter while ``rayaccel record`` runs, :class:`ReplayLibrary` answers them again on a simulated host
(``{"rayaccel_calls": {"call(args)": [answers]}}``): what was asked, in the library's own call names, with its
own exception classes."""

from __future__ import annotations

import builtins
import ctypes
import json
import math
import threading
from collections.abc import Mapping, Sequence
from types import SimpleNamespace
from typing import Any, Protocol

from rayaccel.errors import RayaccelError
from rayaccel.support.bounded import simulated_hang

#: Reserved key of a library's fixture data holding a recorded call log (see :class:`ReplayLibrary`).
CALLS_KEY = "rayaccel_calls"
#: How long a replayed call that hung while recording blocks (the caller's own bound ends the wait).
REPLAY_HANG_SECONDS = 600.0


class KeepsCalls(Protocol):
    """Whoever keeps a recording's answers (the recording host): its lock guards every library's calls too."""

    @property
    def lock(self) -> threading.RLock: ...


class RecordingError(RayaccelError):
    """An answer the fixture format cannot express; names the call."""


def _is_handle(value: Any) -> bool:
    """An opaque handle a library hands out and takes back (a device, an event set)."""
    return bool(getattr(type(value), "rayaccel_handle", False)) or isinstance(value, ctypes._Pointer | ctypes.c_void_p)


class RecordingLibrary:
    """A vendor library adapter whose every call is delegated and recorded as ``call(args) -> answers``."""

    def __init__(self, adapter: Any, name: str, recorder: KeepsCalls) -> None:
        self._adapter = adapter
        self._name = name
        self._lock = recorder.lock  # the recording host's: its answers and every library's calls are kept under it
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
            with self._lock:
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
                with self._lock:
                    self._pending[key] -= 1
                return result
            self._answer(key, {"$return": answer, "$out": outs} if outs else answer)
            return result

        return recorded

    def _answer(self, key: str, answer: Any) -> None:
        with self._lock:
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
        with self._lock:
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
        self._hang = simulated_hang()  # charged to the host replaying it (SimulatedHost.library)

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
                self._hang(REPLAY_HANG_SECONDS)
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
