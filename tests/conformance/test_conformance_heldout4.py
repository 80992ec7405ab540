"""Held-out grading, round 4 (issue 46, lane D): what a failure says about its survivors' causes, on pure helpers.

The checks the round added are graded by the corpus (c-label-from-gethostname, c-domain-from-platform-node,
c-memory-used-in-megabytes, c-memory-total-in-megabytes, c-hip-no-dev-files-kept, c-cuda-empty-as-one-blank-id,
c-idle-utilization-dropped, c-unused-memory-dropped) and RAC245's NUMA reading finder by
test_conformance_numa_readings.py; here, RAC224's naming of a listing that loses every two-digit entry.
"""

from __future__ import annotations

from rayaccel_conformance.checks.renumbering import renumbering_differences

FACTS = {"A": {"record": {}}, "B": {"record": {}}}


def test_every_entry_lost_past_ten_is_named_a_one_digit_listing() -> None:
    (line,) = renumbering_differences(FACTS, {})
    assert line.startswith("the devices change: 2 gone (A, B), 0 new ()")
    assert "a glob `[0-9]`" in line and "until the first missing one" in line


def test_some_entries_lost_or_renamed_are_not_blamed_on_the_digits() -> None:
    assert renumbering_differences(FACTS, {"A": {"record": {}}}) == ["the devices change: 1 gone (B), 0 new ()"]
    assert "[0-9]" not in renumbering_differences(FACTS, {"C": {"record": {}}})[0]
