"""What an in-process hook call may not change: the caller's output streams and its environment.

The manager runs each hook in a thread of its own (:class:`rayaccel.plugins.manager.PluginManager`).
While hooks run, ``sys.stdout`` and ``sys.stderr`` are proxies: a write from a hook's thread is kept
(bounded) and reported as a problem, any other thread's write goes through unchanged. So ``print`` in a
plugin cannot corrupt ``rayaccel inspect --json`` or a caller's own output. The environment is compared
before and after each call; a change is undone and reported, so it cannot reach ``ray start`` or decide
which plugin the next manager loads.

What in-process containment cannot stop (``os._exit``, exhausting memory, writes to file descriptors 1
and 2 below Python, such as a child process that inherits them) is what the out-of-process mode of
:mod:`rayaccel.isolation.pool` is for.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any, TextIO

from rayaccel.support.raycompat import RAY_IMPORT_ENVIRON

#: Characters of a hook's stray output kept for its problem record; the rest is counted only.
KEPT_OUTPUT_CHARS = 2000

_local = threading.local()
_lock = threading.Lock()
_active = 0
_saved: tuple[TextIO, TextIO] | None = None


class HookOutput:
    """What one hook call wrote to stdout and stderr."""

    def __init__(self) -> None:
        self.text = ""
        self.chars = 0

    def write(self, text: str) -> None:
        self.chars += len(text)
        room = KEPT_OUTPUT_CHARS - len(self.text)
        if room > 0:
            self.text += text[:room]

    def first_line(self) -> str:
        return next((line.strip() for line in self.text.splitlines() if line.strip()), "")[:200]


class _RoutedStream:
    """A stream that sends writes from a hook's thread to that hook's :class:`HookOutput`."""

    def __init__(self, target: TextIO) -> None:
        self._target = target

    def write(self, text: str) -> int:
        sink: HookOutput | None = getattr(_local, "sink", None)
        if sink is None:
            return self._target.write(text)
        sink.write(text)
        return len(text)

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        if getattr(_local, "sink", None) is None:
            self._target.flush()

    def __getattr__(self, name: str) -> Any:  # fileno, isatty, encoding, buffer, ...
        return getattr(self._target, name)


@contextmanager
def routed_streams() -> Iterator[None]:
    """Install the routing proxies while at least one hook call is in flight (any thread)."""
    global _active, _saved
    with _lock:
        if _active == 0:
            _saved = (sys.stdout, sys.stderr)
            sys.stdout = _RoutedStream(sys.stdout)
            sys.stderr = _RoutedStream(sys.stderr)
        _active += 1
    try:
        yield
    finally:
        with _lock:
            _active -= 1
            if _active == 0 and _saved is not None:
                # Put back only what is still ours: whoever replaced the streams since owns them now.
                if isinstance(sys.stdout, _RoutedStream):
                    sys.stdout = _saved[0]
                if isinstance(sys.stderr, _RoutedStream):
                    sys.stderr = _saved[1]
                _saved = None


@contextmanager
def captured_output(sink: HookOutput) -> Iterator[None]:
    """Inside a hook's thread: send this thread's writes to sink."""
    _local.sink = sink
    try:
        yield
    finally:
        _local.sink = None


def _environ_data() -> Mapping[Any, Any]:
    # CPython keeps the encoded environment in os.environ._data: copying and comparing that dict is an
    # order of magnitude cheaper than os.environ's decoding view, and this runs around every hook call.
    data = getattr(os.environ, "_data", None)
    return data if isinstance(data, dict) else os.environ


def environ_snapshot() -> dict[Any, Any]:
    """The environment now, to compare with after a hook call."""
    return dict(_environ_data())


def _rays_own(key: Any, value: Any) -> bool:
    """A change ``import ray`` makes itself (:data:`rayaccel.support.raycompat.RAY_IMPORT_ENVIRON`)."""
    return RAY_IMPORT_ENVIRON.get(os.fsdecode(key)) == os.fsdecode(value)


def environ_changes(before: Mapping[Any, Any], now: Mapping[Any, Any]) -> list[Any]:
    """The variables set, changed or removed between two snapshots, except what importing Ray sets."""
    return [k for k in set(before) | set(now) if before.get(k) != now.get(k)
            and not (k in now and _rays_own(k, now[k]))]


def restore_environ(before: Mapping[Any, Any]) -> list[str]:
    """Undo every change to os.environ since ``before`` (an :func:`environ_snapshot`), except what importing
    Ray sets; the names that had changed, sorted."""
    now = dict(_environ_data())
    if now == before:
        return []
    changed = environ_changes(before, now)
    for key in changed:
        if key in before:
            os.environ[os.fsdecode(key)] = os.fsdecode(before[key])
        else:
            os.environ.pop(os.fsdecode(key), None)
    return sorted(os.fsdecode(k) for k in changed)
