"""Held-out grading, round 10 (issue 46, lane Ya): a reason fires where its declared row says
(``invariant a-declared-threshold-is-where-it-fires``, RAC264).

The sysfs bake ``s1`` degraded a device only past 1000 corrected errors (``>``) while its reason table said "at least
1000"; only the template fixture's expectation at exactly 1000 caught it, and an expectation is edited with the code.
The row is the plugin's own word: the reading the fault moves, set at the row's threshold and one step short, fires the
reason at the threshold and not short of it. Two corpus shapes: a JSON record compared one step late, a CSV row one
step early; the right reader passes.
"""

from __future__ import annotations

import pytest
from mutant_grading import evidence, failure, mutant

from rayaccel_conformance.checks.declared_triggers import Threshold, threshold
from rayaccel_testplugins.corpus_declared_thresholds import (
    AtLeastAsDeclared,
    ThresholdAtMoreThan,
    ThresholdPastAtLeast,
)

CARD2 = "ACME-0002-5e1f-4c2a-9d3b-000000000002"


@pytest.mark.parametrize(("shape", "fires", "said"), [
    (ThresholdPastAtLeast, 11, "compares with `>` where the row says 'at least 10' (`>=`)"),
    (ThresholdAtMoreThan, 10, "compares with `>=` where the row says 'more than 10' (`>`)")],
    ids=["json-one-late", "csv-one-early"])
def test_a_reason_fired_one_step_off_its_declared_threshold_is_named(shape: type[ThresholdPastAtLeast], fires: int,
                                                                      said: str) -> None:
    text = failure(mutant(shape), "RAC264", "acme-4")
    assert "invariant a-declared-threshold-is-where-it-fires" in text, text
    assert "under fault corrected-2: reason 'acme-corrected' is declared " in text, text
    assert f"fires on {CARD2} with " in text and "moved from 0 to 12" in text, text
    assert f"it fires first at {fires}" in text and said in text and "off by one at the threshold" in text, text


def test_a_reason_fired_at_its_declared_threshold_passes() -> None:
    assert "acme-corrected" in evidence(AtLeastAsDeclared("c-at-least-as-declared"), "RAC264", "acme-4")


@pytest.mark.parametrize(("meaning", "expected"), [
    ("at least 1000 corrected errors", Threshold(">=", 1000, "at least 1000")),
    ("1,000 or more corrected errors", Threshold(">=", 1000, "1,000 or more")),
    ("more than 10 corrected memory errors", Threshold(">", 10, "more than 10")),
    ("no more than 3 spare rows left", Threshold("<=", 3, "no more than 3")),
    ("fewer than 8 spare rows left", Threshold("<", 8, "fewer than 8")),
    ("XID 94: contained ECC error", None),
    ("more than 10 corrected errors in at least 2 banks", None)])
def test_a_rows_threshold_is_read_from_its_words(meaning: str, expected: Threshold | None) -> None:
    """One stated threshold, whichever words state it; a number that bounds nothing, or two bounds, state none."""
    assert threshold(meaning) == expected
