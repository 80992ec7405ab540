"""Held-out grading, round 9 (issue 46, lane S1): a fatal-error count weighed instead of taken as the fault.

The sysfs bake ``s2`` only degraded a device with fewer than 8 fatal errors and raised its own fixture's fault to 8
errors, so every fixture passed: the suite builds only the counts the fixtures state. RAC203's
``one-fatal-error-is-enough`` raises each fatal-error count a fault raises by two or more by one instead, and the
device must keep its state (c-fatal-count-thresholded: the driver's file compared with 8; c-fatal-channels-averaged:
a library's per-channel counts averaged). Plugins that take any error as the fault pass on the same machines.
"""

from __future__ import annotations

import pytest
from mutant_grading import evidence, failure, mutant

from rayaccel_conformance.checks.fatal_counts import names_a_fatal_count
from rayaccel_conformance.checks.readings import Reading
from rayaccel_testplugins.corpus import Healthy
from rayaccel_testplugins.corpus_fatal_counts import (
    FATAL_THRESHOLD,
    FatalChannelsAveraged,
    FatalCountThresholded,
    raise_fatal_fault,
)

STEPPED = "1 fatal-error counts raised by one event instead give the same health"


class FatalCountAnyError(Healthy):
    """The healthy plugin on the thresholded mutant's machine (its fault counts 8 fatal errors): any is the fault."""

    def __init__(self, name: str) -> None:
        super().__init__(name)
        raise_fatal_fault(name, FATAL_THRESHOLD)


class FatalChannelsAnyError(FatalChannelsAveraged):
    """The RAS library read right: an uncorrectable error on any channel is the fault."""

    def counts_as_fatal(self, channels: list[int]) -> bool:
        return any(channels)


@pytest.mark.parametrize(("field", "fatal"), [
    ("fatal_errors", True), ("total_uncorrectable_count", True), ("ecc.errors.uncorrected.volatile.total", True),
    ("mem_ecc_uncorrected", True), ("corrected_errors", False), ("ecc.errors.uncorrected.aggregate.total", False),
    ("mem_ecc_repairable_uncorrected", False), ("deferred_count", False), ("remapped_rows", False)])
def test_a_count_is_fatal_by_its_name_unless_it_names_errors_a_plugin_may_weigh(field: str, fatal: bool) -> None:
    assert names_a_fatal_count(Reading("library", "lib", ("devices", "2", field), 2.0)) is fatal


@pytest.mark.parametrize(("cls", "machine", "fragment"), [
    (FatalCountThresholded, "acme-4", "(fatal_errors) went from 0 to 8 and ACME-0002-5e1f-4c2a-9d3b-000000000002 "
     "is unhealthy (fatal) [acme-fatal]; at 1, one event more, it is degraded [acme-fatal-few]"),
    (FatalChannelsAveraged, "acme-4-ras", "library acmeras cards.2.uncorrectable.0 of ACME-0002-5e1f-4c2a-9d3b-"
     "000000000002 (uncorrectable) went from 0 to 4 and ACME-0002-5e1f-4c2a-9d3b-000000000002 is unhealthy (fatal) "
     "[acme-fatal]; at 1, one event more, it is healthy")],
    ids=["sysfs-threshold", "library-channels-averaged"])
def test_a_weighed_fatal_count_fails_rac203_naming_the_invariant(cls: type[Healthy], machine: str,
                                                                 fragment: str) -> None:
    plugin = mutant(cls)
    said = failure(plugin, "RAC203", machine)
    assert f"invariant one-fatal-error-is-enough, {plugin.name}/{machine} under fault fatal-2: " in said, said
    assert fragment in said, said


@pytest.mark.parametrize(("cls", "machine"), [(FatalCountAnyError, "acme-4"),
                                              (FatalChannelsAnyError, "acme-4-ras")], ids=["sysfs", "library"])
def test_a_plugin_taking_any_fatal_error_as_the_fault_passes_on_the_same_machine(cls: type[Healthy],
                                                                                 machine: str) -> None:
    name = "c-" + cls.__name__.lower()
    said = evidence(cls(name), "RAC203", machine)
    assert STEPPED in said, said
