"""Held-out grading, round 8 (issue 46, lane H4): the untaken path its survivor l1 needed.

A device whose health counters cannot be read reported healthy (a python-library bake: the library's NOT_SUPPORTED
read as a card with nothing to report, after reporting that it could not read it): RAC211 makes the signals the
fixture's faults change unreadable on the first and the last device, and ``an-unreadable-device-is-not-healthy``
holds that device off healthy where its plugin says it could not read them (c-unreadable-card-left-out: a library's
NOT_SUPPORTED; c-unreadable-row-counted-zero: a CSV row's ``N/A`` counted as no errors). The contained control
(unknown, with a reason) passes: test_conformance_heldout7.
"""

from __future__ import annotations

from typing import Any

import pytest
from mutant_grading import failure, mutant

from rayaccel_testplugins.corpus_contained_health import UnreadableCardLeftOut, UnreadableRowCountedZero


@pytest.mark.parametrize(("cls", "machine", "said"), [
    (UnreadableCardLeftOut, "acme-4-errlib", "counter-unreadable: card 0: the fatal-error counter is not supported"),
    (UnreadableRowCountedZero, "acme-4-errsmi", "malformed-output: card 0: fatal errors 'N/A'; counted as none")],
    ids=["library-not-supported", "csv-not-available"])
def test_a_card_its_plugin_cannot_read_reported_healthy_fails_rac211_naming_the_invariant(
        cls: type[Any], machine: str, said: str) -> None:
    plugin = mutant(cls)
    text = failure(plugin, "RAC211", machine)
    assert (f"invariant an-unreadable-device-is-not-healthy, {plugin.name}/{machine} with "
            "ACME-0000-5e1f-4c2a-9d3b-000000000000's health signals unreadable") in text, text
    assert "ACME-0000-5e1f-4c2a-9d3b-000000000000 reported healthy, though" in text and said in text, text
    assert "ACME-0003-5e1f-4c2a-9d3b-000000000003 reported healthy" in text, text
