"""``rayaccel.support.polling.wait_for``: the one way the SDK, the conformance plugin and the tests wait."""

from __future__ import annotations

import itertools
import time

import pytest

from rayaccel.errors import RayaccelError
from rayaccel.support.polling import WaitTimeout, wait_for


def test_returns_the_first_value_that_meets_the_condition() -> None:
    answers = iter(["No cluster status", "Active: 1 node_ab", "Active: 1 node_ab 0.0/8.0 GPU"])
    assert wait_for(lambda: next(answers), lambda out: "GPU" in out, timeout=5, interval=0.01,
                    what="the GPUs") == "Active: 1 node_ab 0.0/8.0 GPU"


def test_without_a_condition_a_truthy_value_ends_the_wait() -> None:
    counter = itertools.count()
    assert wait_for(lambda: next(counter) >= 3 and "found", timeout=5, interval=0.01, what="three") == "found"


def test_timeout_names_what_was_awaited_and_the_last_value_seen() -> None:
    answers = itertools.chain(["first"], itertools.repeat("No cluster status. It may take a few seconds"))
    started = time.monotonic()
    with pytest.raises(WaitTimeout) as raised:
        wait_for(lambda: next(answers), lambda out: "GPU" in out, timeout=0.3, interval=0.05,
                 what="`ray status` to show 0.0/8.0 GPU")
    assert time.monotonic() - started < 2
    assert str(raised.value) == ("gave up after 0.3 s waiting for `ray status` to show 0.0/8.0 GPU; last seen: "
                                 "No cluster status. It may take a few seconds")
    assert isinstance(raised.value, RayaccelError) and isinstance(raised.value, TimeoutError)


def test_a_long_last_value_is_shown_by_its_end_on_one_line() -> None:
    with pytest.raises(WaitTimeout) as raised:
        wait_for(lambda: "x" * 5000 + "\nthe end", lambda _: False, timeout=0.05, what="nothing")
    message = str(raised.value)
    assert "\n" not in message and message.endswith("x the end") and len(message) < 800


def test_listed_exceptions_mean_not_yet_and_others_propagate() -> None:
    calls = itertools.count()

    def flaky() -> str:
        if next(calls) < 2:
            raise ConnectionError("refused")
        return "up"

    assert wait_for(flaky, timeout=5, interval=0.01, retry_on=(ConnectionError,), what="up") == "up"
    with pytest.raises(WaitTimeout, match="last seen: ConnectionError: refused"):
        wait_for(lambda: (_ for _ in ()).throw(ConnectionError("refused")), timeout=0.05,
                 retry_on=(ConnectionError,), what="a connection")
    with pytest.raises(KeyError):
        wait_for(lambda: {}["missing"], timeout=5, retry_on=(ConnectionError,), what="a key")


@pytest.mark.parametrize("timeout", [0, -1, float("nan")])
def test_a_wait_needs_a_positive_bound(timeout: float) -> None:
    with pytest.raises(ValueError, match="positive"):
        wait_for(lambda: True, timeout=timeout, what="anything")
