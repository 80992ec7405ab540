"""Waiting for a condition: poll it under a deadline, and when time runs out say what was awaited and
what was seen last.

Ray answers "not yet" for a while after a node starts (``ray status`` prints "No cluster status",
``ray.nodes()`` lacks the node, metrics are not scraped yet), for a time that depends on the machine's
speed and load. Every wait in the SDK, the conformance plugin and the tests goes through
:func:`wait_for`, never a fixed sleep and never the first answer.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

from rayaccel.errors import RayaccelError

T = TypeVar("T")

#: Characters of the last observed value a timeout message quotes.
SHOWN_CHARS = 600


class WaitTimeout(RayaccelError, TimeoutError):
    """The condition did not hold before the deadline; the message names it and the last value seen."""


def _shown(value: object) -> str:
    text = value if isinstance(value, str) else repr(value)
    text = " ".join(text.split())
    return text if len(text) <= SHOWN_CHARS else "..." + text[-SHOWN_CHARS:]


def wait_for(observe: Callable[[], T], until: Callable[[T], bool] | None = None, *, timeout: float, what: str,
             interval: float = 0.25, retry_on: tuple[type[BaseException], ...] = ()) -> T:
    """Call ``observe()`` until ``until(value)`` holds (default: the value is truthy); return that value.

    ``timeout``: seconds in all, ``observe`` included; ``what``: the condition in words, for the message;
    ``retry_on``: exceptions of ``observe`` that mean "not yet" (e.g. a connection refused while a
    service starts): they count as the last value seen. Raises :class:`WaitTimeout`, e.g.
    ``gave up after 30 s waiting for the node in `ray status`; last seen: No cluster status...``.

    >>> wait_for(lambda: 3, lambda n: n > 2, timeout=1, what="three")
    3
    """
    if not timeout > 0:
        raise ValueError(f"timeout must be a positive number of seconds, not {timeout!r}")
    check = until if until is not None else bool
    deadline = time.monotonic() + timeout
    seen: object = "nothing (no answer yet)"
    while True:
        try:
            value = observe()
        except retry_on as e:
            seen = f"{type(e).__name__}: {e}"
        else:
            if check(value):
                return value
            seen = value
        left = deadline - time.monotonic()
        if left <= 0:
            raise WaitTimeout(f"gave up after {timeout:g} s waiting for {what}; last seen: {_shown(seen)}")
        time.sleep(min(interval, left))
