"""Corpus mutants publishing a device's memory high-water mark as its memory in use (held-out round 19's ``e2``: a
Neuron wrapper summing each memory category's ``peak``, where the driver's ``total`` beside it is the memory held
now). Each machine states the peak above the use (an earlier, larger model), and each fixture expects the code's
memory in use, so only RAC223's ``a-gauge-is-no-high-water-mark`` kills them. Two shapes: the driver's
``mem_used_peak_mib`` file read for the card's ``mem_used_mib`` beside it (on every machine the driver writes it),
and each core's ``peak_mib`` summed from ``acme-smi memory --json`` (round 19's ``e2`` in a tool's per-core records).
The right readers (:class:`UsedFromItsFile`, :class:`UsedFromToolRecord`, not in the corpus) read the use.

Imported by tests/conformance/test_conformance_corpus.py (``corpus.MUTANT_MODULES``); each is bound here under its
name (``c-used-from-peak-file`` as ``c_used_from_peak_file``) so a Ray node loads it by ``RAYACCEL_PLUGINS``.
"""

from __future__ import annotations

import json
from typing import Any

from rayaccel import Device, Host, MetricSample, report_problem
from rayaccel.hosts.seam import CommandNotFound, HostError
from rayaccel_testplugins.corpus import SYSFS, Healthy, add_import_defect, read_machine, write_machine

#: MiB a card's peak stands above its use on these machines: the model loaded before the one running now.
PEAK_ABOVE_USE_MIB = 2048
MEMORY_ARGV = ("acme-smi", "memory", "--json")


def _used_mib(data: dict[str, Any], index: int) -> int:
    return int(data["host"]["files"][f"{SYSFS}/acme{index}/mem_used_mib"].strip())


def _with_memory(samples: list[MetricSample], device: Device, used_mib: float | None) -> list[MetricSample]:
    """The card's samples with its memory in use replaced by ``used_mib`` (left out where None)."""
    kept = [s for s in samples if s.name != "memory_used"]
    if used_mib is None:
        return kept
    return [*kept, MetricSample(device=device.id, name="memory_used", unit="bytes", value=used_mib * 2**20)]


#: Each card's NeuronCore-like parts in ``acme-smi memory --json``: its use and its peak split evenly among them.
CORES = 2


def _expecting_peaks(data: dict[str, Any]) -> None:
    """The machine's expected memory in use set to each card's peak: the code's answer, so only the invariant
    kills it (the fixture's expectation agrees with the mutant)."""
    for i, values in enumerate(data["expected"]["metric_values"].values()):
        values["memory_used"] = (_used_mib(data, i) + PEAK_ABOVE_USE_MIB) * 2**20


def _peak_files_machine(plugin: str, machine: str, expect_peaks: bool) -> None:
    """acme-4 as ``machine`` with each card's ``mem_used_peak_mib`` beside its use, above it."""
    data = read_machine(plugin)
    if machine != "acme-4":
        data["name"], data["description"] = machine, f"{data['description']}, each card's memory peak beside its use"
    data["host"]["files"].update({f"{SYSFS}/acme{i}/mem_used_peak_mib": f"{_used_mib(data, i) + PEAK_ABOVE_USE_MIB}\n"
                                  for i in range(4)})
    if expect_peaks:
        _expecting_peaks(data)
    write_machine(plugin, machine, data)


def _memory_json_machine(plugin: str, machine: str, expect_peaks: bool) -> None:
    data = read_machine(plugin)
    data["name"], data["description"] = machine, f"{data['description']}, acme-smi memory --json (per core)"
    records = [{"uuid": data["host"]["files"][f"{SYSFS}/acme{i}/uuid"].strip(),
                "cores": [{"core": k, "used_mib": _used_mib(data, i) // CORES,
                           "peak_mib": (_used_mib(data, i) + PEAK_ABOVE_USE_MIB) // CORES} for k in range(CORES)]}
               for i in range(4)]
    data["host"]["commands"] = {**(data["host"].get("commands") or {}),
                                " ".join(MEMORY_ARGV): {"stdout": json.dumps(records) + "\n", "returncode": 0}}
    if expect_peaks:
        _expecting_peaks(data)
    write_machine(plugin, machine, data)


def _with_tool_memory(samples: list[MetricSample], host: Host, devices: list[Device],
                      field: str) -> list[MetricSample]:
    """``samples`` with each card's memory in use summed over its cores' ``field`` in ``acme-smi memory --json``,
    the tool asked once per poll; where it is not installed or has no memory command, the driver's files as the
    healthy plugin reads them; where it fails or a card's record cannot be read, reported and the sample left out."""
    try:
        result = host.run(list(MEMORY_ARGV), timeout=2.0)
    except CommandNotFound:
        return samples  # no tool: the driver's files
    except HostError as e:
        report_problem("tool-failed", f"acme-smi memory --json: {e}; memory in use unknown")
        return [s for s in samples if s.name != "memory_used"]
    if result.returncode != 0:
        return samples  # a tool without the memory command: the driver's files
    try:
        records = {str(r["uuid"]): r for r in json.loads(result.stdout)}
    except (ValueError, KeyError, TypeError):
        records = {}
    kept = [s for s in samples if s.name != "memory_used"]
    for device in devices:
        try:
            used = sum(float(core[field]) for core in records[device.id]["cores"])
        except (ValueError, KeyError, TypeError):
            report_problem("unreadable-attribute", f"acme-smi memory --json: no memory figure for {device.id}")
            continue
        kept.append(MetricSample(device=device.id, name="memory_used", unit="bytes", value=used * 2**20))
    return kept


class UsedFromItsFile(Healthy):
    """The driver's peak file beside each card's use; the use read (the right reader, not in the corpus)."""

    MACHINE = "acme-4-peak-files"

    def __init__(self, name: str) -> None:
        super().__init__(name)
        _peak_files_machine(name, self.MACHINE, expect_peaks=False)


class UsedFromPeakFile(Healthy):
    DEFECT = ("memory in use read from the driver's mem_used_peak_mib file where it writes one, beside mem_used_mib "
              "('peak is what the monitor plots'): a card that unloaded its larger model still shows it held")
    KILLED_BY = ("RAC223", "invariant a-gauge-is-no-high-water-mark")
    MACHINE = UsedFromItsFile.MACHINE

    def __init__(self, name: str) -> None:
        super().__init__(name)
        _peak_files_machine(name, self.MACHINE, expect_peaks=True)
        _peak_files_machine(name, "acme-4", expect_peaks=True)  # this driver writes it on every machine

    def samples(self, host: Host, device: Device) -> list[MetricSample]:
        peak = self.number(host, f"{SYSFS}/acme{device.index}/mem_used_peak_mib")  # the defect: the high-water mark
        return _with_memory(super().samples(host, device), device, peak)


class UsedFromToolRecord(Healthy):
    """Each core's ``used_mib`` summed (the right reader, not in the corpus)."""

    MACHINE = "acme-4-memory-json"

    def __init__(self, name: str) -> None:
        super().__init__(name)
        _memory_json_machine(name, self.MACHINE, expect_peaks=False)

    def rayaccel_metrics(self, host: Host, devices: list[Device]) -> list[MetricSample]:
        return _with_tool_memory(super().rayaccel_metrics(host, devices), host, devices, "used_mib")


class UsedFromCorePeaks(Healthy):
    DEFECT = ("memory in use summed over each core's peak_mib in acme-smi memory --json, beside its used_mib: a "
              "card that freed memory on any core still counts its high-water mark")
    KILLED_BY = ("RAC223", "invariant a-gauge-is-no-high-water-mark")
    MACHINE = UsedFromToolRecord.MACHINE

    def __init__(self, name: str) -> None:
        super().__init__(name)
        _memory_json_machine(name, self.MACHINE, expect_peaks=True)

    def rayaccel_metrics(self, host: Host, devices: list[Device]) -> list[MetricSample]:
        samples = super().rayaccel_metrics(host, devices)
        return _with_tool_memory(samples, host, devices, "peak_mib")  # the defect: the high-water mark


for _cls in (UsedFromPeakFile, UsedFromCorePeaks):
    _plugin = add_import_defect(_cls)
    globals()[_plugin.name.replace("-", "_")] = _plugin
