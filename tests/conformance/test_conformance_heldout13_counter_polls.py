"""Held-out grading, round 13 (issue 46, lane J1): an error counter is published as the device's running total, never
going down between polls while the device's own counter does not (``invariant a-counter-never-goes-down``, RAC246).

The sysfs bake ``s3`` published its ECC counters as the increase since its previous poll (a driver counter 0, 5, 5
published 0, 5, 0): the SDK exports them as Prometheus counters, whose fall Prometheus takes for a reset. Every
fixture's counters are static, so no single build told a total from an increment, and it passed ``supported``. The
suite now polls one host three times, the fixture's machine, a fault of the fixture raising a counter, and that fault
again: two corpus shapes (the increase since the previous poll, errors per second between the polls) and ``s3``'s
edit on the Gaudi and AMD plugins are named; the reference plugins pass.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from mutant_grading import failure, mutant, wrapped

import rayaccel_amd.plugin
import rayaccel_gaudi.plugin
from rayaccel.records import MetricSample
from rayaccel_conformance.checks.counter_polls import COUNTER_METRICS, rose_only
from rayaccel_conformance.registry import CHECKS, CheckFailed
from rayaccel_testplugins.corpus_counter_polls import EccPublishedAsRate, EccPublishedPerPoll

INVARIANT = "invariant a-counter-never-goes-down"


@pytest.mark.parametrize(("shape", "said_here"), [
    (EccPublishedPerPoll, "went down from 12 to 0 on the next poll of the same machine"),
    (EccPublishedAsRate, " to 0 on the next poll of the same machine")])
def test_a_counter_not_published_as_the_running_total_is_named(shape: type[EccPublishedPerPoll],
                                                               said_here: str) -> None:
    plugin = mutant(shape)
    said = failure(plugin, "RAC246", "acme-4")
    assert f"{INVARIANT}, {plugin.name}/acme-4, fault corrected-2 (" in said, said
    assert f"ecc_errors_corrected of {plugin.family.name.upper()}" not in said  # (ids are the cards' uuids)
    assert said_here in said and "expected" not in said, said


def per_poll(module: Any) -> Any:
    """``module``'s rayaccel_metrics with s3's edit: each counter published as its increase since the previous poll."""
    previous: dict[tuple[str, str], float] = {}

    def metrics(host: Any, devices: list[Any]) -> list[MetricSample]:
        out = []
        for sample in module.rayaccel_metrics(host, devices):
            if sample.name in COUNTER_METRICS:
                key = (sample.device, sample.name)
                was = previous.get(key, sample.value)
                previous[key] = sample.value
                sample = sample.model_copy(update={"value": max(0.0, sample.value - was)})
            out.append(sample)
        return out
    return metrics


@pytest.mark.parametrize(("module", "name", "fixture", "fault"), [
    (rayaccel_gaudi.plugin, "gaudi", "hls-gaudi2", "module-ecc"),
    (rayaccel_amd.plugin, "amd", "mi300x-8", "gpu3-ecc-uncorrectable")])
def test_a_reference_plugin_with_s3s_edit_is_named(module: Any, name: str, fixture: str, fault: str) -> None:
    home = str(Path(module.__file__).parent)
    assert "none going down" in str(CHECKS["RAC246"].function(wrapped(module, name, home), f"{name}/{fixture}"))
    subject = wrapped(module, name, home, rayaccel_metrics=per_poll(module))
    with pytest.raises(CheckFailed) as failed:
        CHECKS["RAC246"].function(subject, f"{name}/{fixture}")
    said = str(failed.value)
    assert f"{INVARIANT}, {name}/{fixture}, fault {fault} (" in said and "went down from" in said, said


def test_only_a_machine_whose_numbers_rose_and_none_fell_is_polled() -> None:
    base = {"files": {"/sys/x/card0/errors": "0\n", "/sys/x/card0/temp": "40\n"}, "libraries": {}, "commands": {}}
    raised = {**base, "files": {**base["files"], "/sys/x/card0/errors": "3\n"}}
    cooled = {**raised, "files": {**raised["files"], "/sys/x/card0/temp": "30\n"}}
    gone = {**base, "files": {"/sys/x/card0/errors": "3\n"}}
    assert rose_only(base, raised) == ["file /sys/x/card0/errors 0 -> 3"]
    assert rose_only(base, cooled) == [] and rose_only(base, gone) == [] and rose_only(base, base) == []
