"""Held-out grading, round 9 (issue 46, lane S2): the untaken path its survivor l1 needed.

An idle device's 0 dropped (a python-library bake reading its library's fields as `value or None`: 0 % busy and
0 MiB in use taken for readings the library does not give): no fixture reads 0 there, so RAC223 sets the readings its
scaling attributed to utilization and memory used to 0 and holds each metric present and 0 (``an-idle-reading-is-
zero``). Two shapes: a driver file's memory in use (c-idle-memory-unread), a tool's JSON utilization
(c-idle-core-busy-unread); the healthy control passes.
"""

from __future__ import annotations

from typing import Any

import pytest
from mutant_grading import evidence, failure, mutant

from rayaccel_testplugins import corpus
from rayaccel_testplugins.corpus_zero import IdleCoreBusyUnread, IdleMemoryUnread

CARD_2 = "ACME-0002-5e1f-4c2a-9d3b-000000000002"


@pytest.mark.parametrize(("cls", "machine", "reading", "metric"), [
    (IdleMemoryUnread, "acme-4", "file /sys/class/acme/acme2/mem_used_mib", "memory_used"),
    (IdleCoreBusyUnread, "acme-4-busy", "`acme-smi --json --query-busy` output cards.2.utilization.core",
     "utilization")], ids=["driver-file-memory", "tool-json-utilization"])
def test_an_idle_reading_dropped_fails_rac223_naming_the_invariant(cls: type[Any], machine: str, reading: str,
                                                                   metric: str) -> None:
    plugin = mutant(cls)
    text = failure(plugin, "RAC223", machine)
    assert (f"invariant an-idle-reading-is-zero, {plugin.name}/{machine} with {reading} of {CARD_2} at 0") in text, text
    assert f"{metric} is gone: no sample, expected 0" in text, text


def test_the_healthy_control_reads_its_idle_readings_as_zero() -> None:
    text = evidence(corpus.PLUGINS["c-healthy"], "RAC223", "acme-4")
    assert "memory_used x2" in text and "utilization x2" in text, text
