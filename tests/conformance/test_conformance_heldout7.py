"""Held-out grading, round 7 (issue 46, lane H2): the untaken paths two of its survivors needed.

One device's unreadable health counter failing every device's answer (a python-library bake reading its counters
without per-device containment): RAC211's ``one-unreadable-device-keeps-the-others`` makes the signals the fixture's
faults change unreadable on the first and the last device (c-counters-all-or-nothing: a library's NOT_SUPPORTED
raised out of the hook; c-error-rows-all-or-nothing: one CSV row's N/A making every card unknown). NVIDIA
utilization read from NVML's ``utilization.memory`` (every recorded GPU read 0 for both): ``nvidia/dgx-h100``'s GPU 4
is busy as a published H100 was (100 % and 0 %), and RAC223's ``one-reading-one-metric`` sets the reading beside the
stated one alone to another value and sees the metric follow it (c-busy-from-memory-controller: a JSON record's
other field; c-power-from-limit: a CSV row's other cell; and the NVIDIA plugin with util.memory, wrapped).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import pytest
from mutant_grading import evidence, failure, mutant, wrapped

import rayaccel
import rayaccel_nvidia.plugin as nvidia_plugin
from rayaccel import Device, Host
from rayaccel_conformance.checks.contract import same_record
from rayaccel_conformance.checks.readings import Reading
from rayaccel_conformance.checks.unreadable_signals import UNREADABLE_TEXT, unreadable_host
from rayaccel_conformance.registry import CHECKS, CheckFailed
from rayaccel_nvidia.probe import open_nvml
from rayaccel_testplugins.corpus_contained_health import (
    ERROR_LIBRARY,
    CounterNotSupported,
    CountersAllOrNothing,
    ErrorRowsAllOrNothing,
    reports,
)
from rayaccel_testplugins.corpus_siblings import BusyFromMemoryController, PowerFromLimit

NVIDIA_PACKAGE = nvidia_plugin.__file__.rsplit("/", 1)[0]


class CountersContained(CountersAllOrNothing):
    """The library reader with per-card containment: a counter the library does not give is that card's unknown."""

    def rayaccel_health(self, host: Host, devices: list[Device]) -> list[rayaccel.HealthReport]:
        counters = host.library(ERROR_LIBRARY)
        fatal: dict[int, int | None] = {}
        for device in devices:
            try:
                fatal[device.index] = counters.count(device.index, "fatal")
            except CounterNotSupported:
                fatal[device.index] = None
        return reports(self, host, devices, fatal)


def test_a_signal_is_made_unreadable_as_its_interface_makes_it() -> None:
    host: dict[str, Any] = {"files": {}, "libraries": {"lib": {"cards": {"2": {"fatal": 0, "rows": [0, 0]}},
                                                               "counts": {"2": [0, 0]}}},
            "commands": {"smi --json": {"stdout": json.dumps({"cards": [{"fatal": 0}]})},
                         "smi --csv": {"stdout": "2, ID-2, 0, 0\n"}}}
    readings = [Reading("library", "lib", ("cards", "2", "fatal"), 0.0),
                Reading("library", "lib", ("cards", "2", "rows", 1), 0.0),
                Reading("command", "smi --json", ("cards", 0, "fatal"), 0.0),
                Reading("table", "smi --csv", (0, 2), 0.0, "2, ID-2, 0, 0"),
                Reading("library", "lib", ("counts", "2", 0), 0.0)]
    state = unreadable_host(host, readings)
    assert state["libraries"]["lib"]["cards"]["2"] == {}  # NOT_SUPPORTED: the value, and a list's whole call
    assert state["libraries"]["lib"]["counts"] == {"2": [0, 0]}  # never the device's own entry: that is a loss
    assert json.loads(state["commands"]["smi --json"]["stdout"])["cards"][0]["fatal"] == UNREADABLE_TEXT
    assert state["commands"]["smi --csv"]["stdout"] == "2, ID-2, N/A, 0\n"
    assert host["libraries"]["lib"]["cards"]["2"] == {"fatal": 0, "rows": [0, 0]}  # the given state untouched


@pytest.mark.parametrize("cls", [CountersAllOrNothing, ErrorRowsAllOrNothing], ids=lambda cls: cls.__name__)
def test_one_unreadable_counter_failing_every_card_fails_rac211_naming_the_invariant(cls: type[Any]) -> None:
    plugin = mutant(cls)
    machine = "acme-4-errlib" if cls is CountersAllOrNothing else "acme-4-errsmi"
    said = failure(plugin, "RAC211", machine)
    assert f"invariant one-unreadable-device-keeps-the-others, {plugin.name}/{machine} with ACME-0000-" in said, said
    assert "yet its health went from healthy to unknown (3 in all)" in said, said


def test_a_card_whose_counter_cannot_be_read_is_that_card_s_unknown_alone() -> None:
    said = evidence(CountersContained("c-counters-contained"), "RAC211", "acme-4-errlib")
    assert "the fault signals of ACME-0000-5e1f-4c2a-9d3b-000000000000 and ACME-0003-5e1f-4c2a-9d3b-000000000003 " \
           "unreadable" in said


def test_readings_side_by_side_are_one_record() -> None:
    gpu = Reading("library", "nvml", ("devices", "4", "utilization", "gpu"), 100.0)
    assert same_record(gpu, Reading("library", "nvml", ("devices", "4", "utilization", "memory"), 0.0))
    assert not same_record(gpu, Reading("library", "nvml", ("devices", "3", "utilization", "memory"), 0.0))
    assert not same_record(gpu, Reading("library", "nvml", ("devices", "4", "power_usage"), 70000.0))
    cell = Reading("table", "smi", (2, 2), 252.0, "2, ID, 252.00 W, 700.00 W")
    assert same_record(cell, Reading("table", "smi", (2, 3), 700.0, "2, ID, 252.00 W, 700.00 W"))
    assert not same_record(cell, Reading("table", "smi", (3, 3), 700.0, "3, ID, 253.00 W, 700.00 W"))


@pytest.mark.parametrize(("cls", "machine", "fragment"), [
    (BusyFromMemoryController, "acme-4-busy", "output cards.2.utilization.memory of ACME-0002-5e1f-4c2a-9d3b-"
                                              "000000000002 alone set to 35 (was 23): utilization followed it"),
    (PowerFromLimit, "acme-4-power", "output line 2 field 3 of ACME-0002-5e1f-4c2a-9d3b-000000000002 alone set to 126 "
                                     "(was 700): power followed it")],
    ids=["busy-from-memory-controller", "power-from-limit"])
def test_a_metric_read_from_the_reading_beside_its_own_fails_rac223_naming_the_invariant(
        cls: type[Any], machine: str, fragment: str) -> None:
    plugin = mutant(cls)
    said = failure(plugin, "RAC223", machine)
    assert f"invariant one-reading-one-metric, {plugin.name}/{machine} with `acme-smi" in said, said
    assert fragment in said and "read from a sibling reading of its record?" in said, said


def test_the_reading_of_its_own_passes_rac223_on_the_busy_machine() -> None:
    class BusyFromCore(BusyFromMemoryController):
        FIELD = "core"

    said = evidence(BusyFromCore("c-busy-from-core"), "RAC223", "acme-4-busy")
    assert "utilization x0.5 moved exactly with their readings" in said, said


def nvml_memory_controller(host: Host, devices: Sequence[Device]) -> list[rayaccel.MetricSample]:
    """The NVIDIA plugin's samples with utilization from nvmlUtilization_t.memory (round 7's n2)."""
    samples = nvidia_plugin.rayaccel_metrics(host, devices)
    nvml = open_nvml(host)
    if nvml is None:
        return list(samples)
    busy = {}
    for device in devices:
        try:
            busy[device.id] = float(nvml.nvmlDeviceGetUtilizationRates(nvml.nvmlDeviceGetHandleByIndex(device.index))
                                    .memory)
        except nvml.NVMLError:
            continue
    return [s.model_copy(update={"value": busy[s.device]}) if s.name == "utilization" and s.device in busy else s
            for s in samples]


def test_nvidia_utilization_from_the_memory_controller_fails_rac223_on_the_busy_gpu() -> None:
    subject = wrapped(nvidia_plugin, "nvidia", NVIDIA_PACKAGE, rayaccel_metrics=nvml_memory_controller)
    with pytest.raises(CheckFailed) as failed:
        CHECKS["RAC223"].function(subject, "nvidia/dgx-h100")
    said = str(failed.value)
    assert ("invariant one-reading-one-metric, nvidia/dgx-h100 with library nvml devices.4.utilization.memory of "
            "GPU-a62c2f11-60a6-56b5-96cc-2b7ce4439f2e alone set to 50 (was 0): utilization followed it (0 -> 50), "
            "while the fixture states 100, which library nvml devices.4.utilization.gpu (100) beside it gives") in said
