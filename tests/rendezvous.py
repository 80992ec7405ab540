"""A Ray actor that tasks and the test meet at, so a test orders things by events, never by sleeping.

``arrive(name, n, timeout)`` blocks until ``n`` callers have arrived under ``name`` (tasks that must run at
the same time); ``set(name)`` / ``wait(name, timeout)`` signal one thing happened ("the task runs", "let it
finish"). Every wait is bounded and returns whether it was met.
"""

from __future__ import annotations

import threading
from collections import defaultdict

import ray


@ray.remote(num_cpus=0)
class Rendezvous:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._arrived: dict[str, int] = defaultdict(int)
        self._events: dict[str, threading.Event] = defaultdict(threading.Event)

    def _event(self, name: str) -> threading.Event:
        with self._lock:
            return self._events[name]

    def arrive(self, name: str, n: int, timeout: float = 60) -> bool:
        with self._lock:
            self._arrived[name] += 1
            if self._arrived[name] >= n:
                self._events[name].set()
        return self._event(name).wait(timeout)

    def set(self, name: str) -> None:
        self._event(name).set()

    def wait(self, name: str, timeout: float = 60) -> bool:
        return self._event(name).wait(timeout)


def rendezvous(concurrency: int = 16) -> ray.actor.ActorHandle:
    """A new meeting point; ``concurrency`` bounds how many callers may block in it at once."""
    return Rendezvous.options(max_concurrency=concurrency).remote()
