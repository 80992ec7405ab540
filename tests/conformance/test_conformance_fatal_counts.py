"""Held-out grading, round 9 (issue 46, lane S1): a fatal-error count weighed instead of taken as the fault.

The sysfs bake ``s2`` only degraded a device with fewer than 8 fatal errors and raised its own fixture's fault to 8
errors, so every fixture passed: the suite builds only the counts the fixtures state. RAC203's
``one-fatal-error-is-enough`` raises each fatal-error count a fault raises by two or more by one instead, and the
device must keep its state (c-fatal-count-thresholded: the driver's file compared with 8; c-fatal-channels-averaged:
a library's per-channel counts averaged). Plugins that take any error as the fault pass on the same machines. A
count no name says is fatal is known by the ``ecc_errors_uncorrected`` samples it feeds (a CSV naming no columns).
"""

from __future__ import annotations

import pytest
from mutant_grading import evidence, failure, mutant

from rayaccel import Device, HealthReport, Host, MetricSample
from rayaccel_conformance.checks.fatal_counts import names_a_fatal_count
from rayaccel_conformance.checks.readings import Reading
from rayaccel_testplugins.acme import health_from_count
from rayaccel_testplugins.corpus import SYSFS, Healthy, read_machine, tool_output, write_machine
from rayaccel_testplugins.corpus_fatal_counts import (
    FATAL_THRESHOLD,
    FatalChannelsAveraged,
    FatalCountThresholded,
    raise_fatal_fault,
)

STEPPED = "1 fatal-error counts raised by one event instead give the same health"
#: A tool whose CSV names no columns: its cells are known only by what the plugin reports them as.
ROWS = ("acme-smi", "--query-errors", "--format=csv,noheader")
ROWS_MACHINE = "acme-4-rows"


class FatalCountAnyError(Healthy):
    """The healthy plugin on the thresholded mutant's machine (its fault counts 8 fatal errors): any is the fault."""

    def __init__(self, name: str) -> None:
        super().__init__(name)
        raise_fatal_fault(name, FATAL_THRESHOLD)


class FatalChannelsAnyError(FatalChannelsAveraged):
    """The RAS library read right: an uncorrectable error on any channel is the fault."""

    def counts_as_fatal(self, channels: list[int]) -> bool:
        return any(channels)


class UncorrectedRowsOverFour(Healthy):
    """acme-smi's rows (index, uuid, uncorrectable errors) read into ecc_errors_uncorrected, health unhealthy past 4
    errors; its machine's fault counts 5. ``over`` 0 takes any error as the fault; ``metric`` False reports no
    sample of the count (nothing then says the cell counts uncorrectable errors)."""

    over = 4
    metric = True

    def __init__(self, name: str) -> None:
        super().__init__(name)
        data = read_machine(name)
        data["name"] = ROWS_MACHINE
        ids = [data["host"]["files"][f"{SYSFS}/acme{i}/uuid"].strip() for i in range(4)]

        def rows(errors: int) -> str:
            return "".join(f"{i}, {ids[i]}, {errors if i == 2 else 0}\n" for i in range(4))

        data["host"]["commands"][" ".join(ROWS)] = {"stdout": rows(0)}
        fatal = next(f for f in data["faults"] if f["name"] == "fatal-2")
        fatal["patch"] = {"commands": {" ".join(ROWS): {"stdout": rows(5)}}}
        write_machine(name, ROWS_MACHINE, data)

    def counts(self, host: Host) -> dict[int, int] | None:
        stdout = tool_output(host, ROWS)
        if stdout is None:
            return None
        cells = [[c.strip() for c in row.split(",")] for row in stdout.splitlines() if row.strip()]
        return {int(c[0]): int(c[2]) for c in cells if len(c) == 3 and c[0].isdigit() and c[2].isdigit()}

    def rayaccel_health(self, host: Host, devices: list[Device]) -> list[HealthReport]:
        if (counts := self.counts(host)) is None:
            return super().rayaccel_health(host, devices)
        return [health_from_count(d.id, None if d.index not in counts else int(counts[d.index] > self.over))
                for d in devices]

    def rayaccel_metrics(self, host: Host, devices: list[Device]) -> list[MetricSample]:
        counts = (self.counts(host) or {}) if self.metric else {}
        return [*super().rayaccel_metrics(host, devices),
                *(MetricSample(device=d.id, name="ecc_errors_uncorrected", unit="count", value=counts[d.index])
                  for d in devices if d.index in counts)]


class UncorrectedRowsAnyError(UncorrectedRowsOverFour):
    over = 0


class UncorrectedRowsOverFourUnreported(UncorrectedRowsOverFour):
    metric = False


def test_a_count_named_by_nothing_is_known_by_the_uncorrectable_errors_metric_it_feeds() -> None:
    said = failure(UncorrectedRowsOverFour("c-uncorrected-rows-over-four"), "RAC203", ROWS_MACHINE)
    assert ("output line 2 field 2 of ACME-0002-5e1f-4c2a-9d3b-000000000002 (its uncorrectable errors) went from 0 "
            "to 5" in said), said
    assert "at 1, one event more, it is healthy" in said, said
    assert STEPPED in evidence(UncorrectedRowsAnyError("c-uncorrected-rows-any-error"), "RAC203", ROWS_MACHINE)
    # A cell nothing names and no metric reports is no count the suite can know: left alone.
    said = evidence(UncorrectedRowsOverFourUnreported("c-uncorrected-rows-unreported"), "RAC203", ROWS_MACHINE)
    assert "fatal-error counts" not in said, said


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
