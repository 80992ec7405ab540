"""Run a call that may never return, and give up on it after a timeout.

A vendor C library called in-process (NVML, a driver ioctl) cannot be interrupted: a wedged driver blocks
the calling thread forever. So the call runs in a daemon thread that is abandoned, never waited on, once
its time is up. The SDK bounds every hook call this way; a plugin bounds its own in-process vendor calls
with the same :func:`run_bounded` (subprocesses need none: ``host.run(..., timeout=...)`` kills them).

A long-lived process that makes such calls all the time (a plugin worker serving the health monitor's polls:
a dozen bounded calls a second) turns on :func:`reuse_threads`: a thread whose call returned waits for the
next one instead of ending, since starting a thread costs as much as a small hook. A call that times out
still keeps its thread (busy, abandoned) until it returns, so a hang still shows as one more thread.

A *simulated* hang (a fixture's wedged driver: :func:`simulated_hang`) need not be waited out in real time: when
the hung thread is a bounded call's own and would outlast its bound, the call gives up at once and the rest of
its timeout is charged to the simulated host that opened the library (``SimulatedHost.skipped_wait_s``), as a
simulated host's hung commands are. The caller sees what it would see on a real machine (the timeout, and the
thread left blocked), only sooner; a call nobody bounds still blocks for the hang's whole length.
"""

from __future__ import annotations

import contextlib
import contextvars
import math
import queue
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, TypeVar

T = TypeVar("T")

#: Idle threads kept at most when threads are reused (nested bounded calls need one each).
MAX_IDLE_THREADS = 8

_reuse = False
_idle: list[_Runner] = []
_idle_lock = threading.Lock()


@dataclass
class _Bound:
    """A bounded call, as its own thread sees it: a simulated hang there asks it to give up now (:func:`_cut_short`)."""

    timeout: float
    began: float
    #: Set when the caller may stop waiting: the call returned (and its thread was parked), or it hangs for good.
    wake: threading.Event
    ident: int | None = None


#: The bounded call the current thread runs (set in the copy of the caller's context that the thread runs in).
_current_bound: contextvars.ContextVar[_Bound | None] = contextvars.ContextVar("rayaccel_bounded_call", default=None)
#: While a simulated host opens a library: where that library's hangs charge the time they did not wait.
_opening_charge: contextvars.ContextVar[Callable[[float], None] | None] = contextvars.ContextVar(
    "rayaccel_simulated_charge", default=None)


@contextlib.contextmanager
def charging_hangs(charge: Callable[[float], None]) -> Iterator[None]:
    """While a simulated host opens a library: the library's :func:`simulated_hang` charges ``charge``."""
    token = _opening_charge.set(charge)
    try:
        yield
    finally:
        _opening_charge.reset(token)


def simulated_hang() -> Callable[[float], None]:
    """How a simulated library adapter's calls block when its fixture data says the library hangs (a wedged
    driver). Called when the adapter opens (``LibraryAdapter.open_simulated``); returns ``hang(seconds)``, which
    blocks the calling thread for ``seconds``. Where that thread is a :func:`run_bounded` call's and the hang
    would outlast the bound, the caller gets its :class:`BoundedTimeout` at once and the simulated host that
    opened the library is charged the rest of the timeout (``SimulatedHost.skipped_wait_s``); the thread still
    blocks, abandoned, as on a real machine. Opened anywhere else, ``hang`` only blocks."""
    charge = _opening_charge.get()

    def hang(seconds: float) -> None:
        if charge is not None:
            _cut_short(seconds, charge)
        time.sleep(seconds)

    return hang


def _cut_short(seconds: float, charge: Callable[[float], None]) -> None:
    """Release the bounded call this thread runs, charging what its caller would have waited, if a hang of
    ``seconds`` would outlast its bound (a shorter one is slept: the call returns after it, as it would)."""
    bound = _current_bound.get()
    if bound is None or bound.ident != threading.get_ident():
        return  # not a bounded call's own thread (a thread it started): nothing would give up on it
    left = bound.timeout - (time.monotonic() - bound.began)
    if seconds >= left:
        charge(max(0.0, left))
        bound.wake.set()


class _Runner:
    """A daemon thread that runs the calls handed to it one at a time, and waits among the idle ones between."""

    def __init__(self, name: str) -> None:
        self._calls: queue.SimpleQueue[Callable[[], None]] = queue.SimpleQueue()
        self.thread = threading.Thread(target=self._serve, name=name, daemon=True)
        self.thread.start()

    def run(self, call: Callable[[], None], name: str) -> None:
        self.thread.name = name
        self._calls.put(call)

    def _serve(self) -> None:
        while True:
            self._calls.get()()

    def park(self) -> bool:
        """Back among the idle threads (called by its own call, before it says it is done); False: too many idle,
        the thread ends."""
        with _idle_lock:
            if len(_idle) >= MAX_IDLE_THREADS:
                return False
            _idle.append(self)
            return True


def reuse_threads() -> None:
    """From now on, run bounded calls in threads kept between calls (this process's earlier ones, if it was
    forked, are gone: none is inherited)."""
    global _reuse
    with _idle_lock:
        _idle.clear()
        _reuse = True


def idle_threads() -> int:
    """How many threads wait for a bounded call (0 unless :func:`reuse_threads`): not leaks of any call."""
    with _idle_lock:
        return len(_idle)


def idle_thread_idents() -> frozenset[int]:
    """The idents of the threads waiting for a bounded call (none unless :func:`reuse_threads`): the SDK's kept
    threads, which no call left behind. A kept thread still running an abandoned call is not among them."""
    with _idle_lock:
        return frozenset(ident for runner in _idle if (ident := runner.thread.ident) is not None)


class BoundedTimeout(TimeoutError):
    """The call did not return in time; its thread was abandoned (it may still be running)."""

    def __init__(self, timeout: float, thread: threading.Thread, returned: threading.Event | None = None) -> None:
        super().__init__(f"did not return within {timeout:g}s")
        self.timeout = timeout
        #: The abandoned thread, still running the call.
        self.thread = thread
        #: Set once the abandoned call returns (a caller need not call it again while it has not).
        self.returned = returned if returned is not None else threading.Event()


def checked_timeout(timeout: float) -> float:
    """``timeout`` as float seconds; ValueError naming it unless it is a finite number > 0 (None, NaN and
    infinity would be no bound at all: every wait has one)."""
    if not (isinstance(timeout, int | float) and not isinstance(timeout, bool) and math.isfinite(timeout)
            and timeout > 0):
        raise ValueError(f"timeout must be a finite number of seconds > 0, not {timeout!r}")
    return float(timeout)


def run_bounded(fn: Callable[[], T], timeout: float, *, name: str = "rayaccel-bounded") -> T:
    """``fn()`` in a daemon thread named ``name``: its result, or its exception re-raised here, or
    :class:`BoundedTimeout` when it has not returned within ``timeout`` seconds.

    The thread runs in a copy of the caller's context, so what ``fn`` reports with
    :func:`rayaccel.report_problem` reaches the hook call it serves. An interrupt of the caller (SIGINT)
    while it waits propagates at once; the thread is abandoned then too.
    """
    timeout = checked_timeout(timeout)
    outcome: dict[str, Any] = {}
    context = contextvars.copy_context()
    returned = threading.Event()
    bound = _Bound(timeout, time.monotonic(), threading.Event())
    context.run(_current_bound.set, bound)

    def target() -> None:
        bound.ident = threading.get_ident()
        try:
            outcome["value"] = context.run(fn)
        except BaseException as e:  # a SystemExit in the call must not end the thread's caller unseen
            outcome["error"] = e
        finally:
            returned.set()

    def run_and_wake() -> None:
        target()
        bound.wake.set()

    if _reuse:
        _run_reused(target, timeout, name, returned, bound.wake)
    else:
        thread = threading.Thread(target=run_and_wake, name=name, daemon=True)
        thread.start()
        if not bound.wake.wait(timeout) or not returned.is_set():
            raise BoundedTimeout(timeout, thread, returned)
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]  # type: ignore[no-any-return]


def _run_reused(target: Callable[[], None], timeout: float, name: str, returned: threading.Event,
                done: threading.Event) -> None:
    """``target()`` in an idle kept thread (or a new one); raises :class:`BoundedTimeout` as :func:`run_bounded`.
    ``done`` is set once the thread is parked again (or by a simulated hang that will never return)."""
    with _idle_lock:
        runner = _idle.pop() if _idle else None
    runner = runner or _Runner(name)

    def call() -> None:
        try:
            target()
        finally:
            parked = runner.park()  # before done: the caller's next call finds this thread idle
            done.set()
            if not parked:
                raise SystemExit  # ends this thread quietly (too many idle ones)

    runner.run(call, name)
    if not done.wait(timeout) or not returned.is_set():
        raise BoundedTimeout(timeout, runner.thread, returned)
