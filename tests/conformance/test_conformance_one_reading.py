"""RAC223's ``one-reading-one-metric`` (issue 46, held-out round 6: memory used read as total): a device's reading
scaled for one metric moves no other metric of the device by the same factor, on the pure helper and on the two
corpus mutants whose memory in use is the card's size, on a machine that states no memory in use (graded by the
corpus too)."""

from __future__ import annotations

import pytest
from mutant_grading import evidence, failure, mutant as mutant_of

from rayaccel.records import MetricSample
from rayaccel_conformance.checks.contract import same_reading_metrics
from rayaccel_testplugins import corpus, corpus_used_as_total

TOTAL = MetricSample(device="d1", name="memory_total", unit="bytes", value=8e10)


def test_another_metric_of_the_device_moving_by_the_same_factor_is_named() -> None:
    before = {("d1", "memory_total"): 8e10, ("d1", "memory_used"): 8e10, ("d1", "power"): 300.0,
              ("d0", "memory_used"): 8e10}
    after = {("d1", "memory_total"): 1.6e11, ("d1", "memory_used"): 1.6e11, ("d1", "power"): 300.0,
             ("d0", "memory_used"): 1.6e11}  # another device's is RAC223's other invariant
    (line,) = same_reading_metrics(TOTAL, 2.0, before, after)
    assert line == ("memory_used of d1 moved with it too (8e+10 -> 1.6e+11): one reading feeds two metrics, "
                    "memory_total and memory_used: memory_used read from memory_total's reading?")
    # Used as total less free moves by another factor: derived from several readings, not named.
    derived = {**after, ("d1", "memory_used"): 1.6e11 - 2e10}
    assert same_reading_metrics(TOTAL, 2.0, {**before, ("d1", "memory_used"): 6e10}, derived) == []


@pytest.mark.parametrize("mutant", [corpus_used_as_total.UsedFromSizeFile, corpus_used_as_total.UsedFromDeviceSize],
                         ids=lambda cls: cls.__name__)
def test_memory_in_use_that_is_the_size_fails_rac223_naming_the_invariant(mutant: type[corpus.Healthy]) -> None:
    plugin = mutant_of(mutant)
    name, said = plugin.name, failure(plugin, "RAC223", "acme-4-unstated")
    scaled = f"{name}/acme-4-unstated with file /sys/class/acme/acme2/memory_mib"
    assert f"invariant one-reading-one-metric, {scaled}" in said, said
    assert "memory_used read from memory_total's reading?" in said, said
    # The healthy control reads its own file for each: passes.
    assert "moved exactly with their readings" in evidence(corpus.PLUGINS["c-healthy"], "RAC223", "acme-4")
