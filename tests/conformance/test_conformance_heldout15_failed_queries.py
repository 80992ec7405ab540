"""Held-out grading, round 15 (issue 46, lane J2): a reading the vendor interface did not give on this poll is not
published (``invariant a-failed-query-gives-no-reading``, RAC246).

The command-json bake ``j2`` kept the last stats it read and published them again, as current, whenever its stats
query failed ("no gap in dashboards"); every fixture's stats answer, so it survived ``supported``. RAC246 now polls
the metrics hook on one host after two histories (the fixture's machine, and that machine with the query's gauge
readings scaled), then with the query failing (its command exiting 1, its library raising), and names a gauge that
follows the earlier poll: both corpus shapes (a card's last JSON figure, a tool's last CSV rows) and j2's edit on
the NVIDIA (NVML) and AMD (amd-smi's JSON) plugins are named; the plugins as shipped pass.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from mutant_grading import failure, mutant, wrapped

import rayaccel_amd.plugin
import rayaccel_nvidia.plugin
from rayaccel.records import Device, MetricSample
from rayaccel_conformance.checks.failed_queries import Query, failed_host, read_otherwise_host
from rayaccel_conformance.checks.readings import Reading
from rayaccel_conformance.registry import CHECKS, CheckFailed
from rayaccel_testplugins.corpus_failed_queries import BusyKeptOnFailure, PowerRowsKeptOnFailure

INVARIANT = "invariant a-failed-query-gives-no-reading"


@pytest.mark.parametrize(("shape", "machine", "query", "said"), [
    (BusyKeptOnFailure, "acme-4-busy", "`acme-smi --json --query-busy` exiting 1", "utilization of ACME-0000-"),
    (PowerRowsKeptOnFailure, "acme-4-power", "`acme-smi --query-power --format=csv,noheader` exiting 1",
     "power of ACME-0000-")])
def test_a_reading_kept_from_an_earlier_poll_is_named(shape: type[BusyKeptOnFailure], machine: str, query: str,
                                                      said: str) -> None:
    message = failure(mutant(shape), "RAC246", machine)
    assert INVARIANT in message and f"{query} on the poll after one that read it: {said}" in message, message
    assert "published a value kept from an earlier poll" in message and "expected" not in message, message


def kept_on_failure(module: Any) -> Any:
    """``module``'s rayaccel_metrics with j2's edit: a gauge this poll does not give is the last poll's again."""
    last: dict[tuple[str, str], MetricSample] = {}

    def metrics(host: Any, devices: list[Device]) -> list[MetricSample]:
        try:
            answer = list(module.rayaccel_metrics(host, devices) or [])
        except RuntimeError:  # the library's call raised: "no gap in dashboards"
            answer = []
        given = {(s.device, s.name) for s in answer}
        ids = {d.id for d in devices}
        answer += [s for key, s in last.items() if key not in given and key[0] in ids]
        last.update({(s.device, s.name): s for s in answer})
        return answer
    return metrics


@pytest.mark.parametrize(("module", "family", "fixture", "query"), [
    (rayaccel_nvidia.plugin, "nvidia", "dgx-h100", "library nvml raising on every call"),
    (rayaccel_amd.plugin, "amd", "mi300x-8", "exiting 1")])
def test_j2s_edit_on_a_reference_plugin_is_named(module: Any, family: str, fixture: str, query: str) -> None:
    subject = wrapped(module, family, str(Path(module.__file__).parent), rayaccel_metrics=kept_on_failure(module))
    with pytest.raises(CheckFailed) as failed:
        CHECKS["RAC246"].function(subject, f"{family}/{fixture}")
    said = str(failed.value)
    assert INVARIANT in said and query in said, said


@pytest.mark.parametrize(("module", "family", "fixture"), [
    (rayaccel_nvidia.plugin, "nvidia", "dgx-h100"), (rayaccel_amd.plugin, "amd", "mi300x-8")])
def test_the_reference_plugins_as_shipped_keep_nothing(module: Any, family: str, fixture: str) -> None:
    subject = wrapped(module, family, str(Path(module.__file__).parent))
    said = str(CHECKS["RAC246"].function(subject, f"{family}/{fixture}"))
    assert "none kept from an earlier poll" in said, said


def test_a_failing_query_as_the_interface_fails_it() -> None:
    host: dict[str, Any] = {"files": {}, "libraries": {"nvml": {"devices": {}}},
            "commands": {"acme-smi --json --query-busy": {"stdout": '{"cards": [{"index": 0, "busy": 40}]}'}}}
    reading = Reading("command", "acme-smi --json --query-busy", ("cards", 0, "busy"), 40.0)
    command = Query("command", "acme-smi --json --query-busy", ((reading, 2.0),))
    failing = failed_host(host, command)["commands"]["acme-smi --json --query-busy"]
    assert failing == {"returncode": 1, "stdout": "", "stderr": "acme-smi: failed to query the driver: resource "
                       "temporarily unavailable\n"}
    assert '"busy": 80' in read_otherwise_host(host, command)["commands"]["acme-smi --json --query-busy"]["stdout"]
    library = failed_host(host, Query("library", "nvml", ()))["libraries"]["nvml"]
    assert library["rayaccel_fault"] == {"raise": "Driver Not Loaded"} and library["devices"] == {}
    assert host["commands"]["acme-smi --json --query-busy"].get("returncode") is None  # the state given unchanged
