"""Corpus mutants of a tool's JSON output read right only by accident of the fixture (issue 46, found by
``make mutation``), two shapes each: a size read without the unit printed beside it (RAC260), and a record read by
its shape rather than its field names, so a field a newer tool adds breaks it (RAC261); and the tool's N/A (a value
it cannot give) read as 0 (RAC271).

Each mutant reads ``acme-smi --json`` on a machine of its own (``acme-4-smi``: acme-4 with the tool installed,
stating each card's memory in use as ``{"value": ..., "unit": "MiB"}``); the healthy reader would look each
field up by name and convert each size by its unit. Imported by tests/conformance/test_conformance_corpus.py
(``corpus.MUTANT_MODULES``); each is bound here under its name (``c-size-unit-ignored`` as
``c_size_unit_ignored``) so a Ray node loads it by ``RAYACCEL_PLUGINS``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from rayaccel import Device, Host, HostError, MetricSample, malformed
from rayaccel_testplugins.corpus import Healthy, add_import_defect, read_machine, tool_output, write_machine

SMI = ("acme-smi", "--json")


def _add_smi_machine(plugin: str) -> None:
    """The plugin's acme-4 machine with ``acme-smi`` installed, stating each card's memory in use in MiB."""
    data = read_machine(plugin)
    data["name"], data["description"] = "acme-4-smi", f"{data['description']}, acme-smi installed"
    cards = [{"index": i, "memory_used": {"value": 3000 + 112 * i, "unit": "MiB"}} for i in range(4)]
    for i, values in enumerate((data["expected"].get("metric_values") or {}).values()):
        values["memory_used"] = (3000 + 112 * i) * 2**20  # what the tool states, not the driver's file
    data["host"]["commands"] = {**(data["host"].get("commands") or {}),
                                " ".join(SMI): {"stdout": json.dumps({"cards": cards}, indent=1)}}
    write_machine(plugin, "acme-4-smi", data)


def _stated_memory(host: Host) -> dict[int, Mapping[str, Any]] | None:
    """Card index -> its ``memory_used`` as the tool states it; None where the tool is not installed."""
    if (stdout := tool_output(host, SMI)) is None:
        return None
    try:
        cards = json.loads(stdout)["cards"]
        return {int(card["index"]): card["memory_used"] for card in cards}
    except (ValueError, KeyError, TypeError):
        malformed(" ".join(SMI), "its output", "JSON with a memory_used per card")
        return None


def _samples(plugin: Healthy, host: Host, device: Device, bytes_of: Any) -> list[MetricSample]:
    """The healthy samples, memory in use taken from acme-smi where it is installed, converted by ``bytes_of``."""
    samples = Healthy.samples(plugin, host, device)
    stated = _stated_memory(host)
    if stated is None or device.index not in stated:
        return samples
    size = stated[device.index]
    value = size.get("value") if isinstance(size, Mapping) else None
    if not isinstance(value, int | float) or isinstance(value, bool):
        malformed("memory_used", size, "a size with its unit", where=f"card {device.index}")
        return [s for s in samples if s.name != "memory_used"]
    used = MetricSample(device=device.id, name="memory_used", unit="bytes", value=bytes_of(value, size.get("unit")))
    return [s for s in samples if s.name != "memory_used"] + [used]


class SizeUnitIgnored(Healthy):
    DEFECT = ("a card's memory in use is read from acme-smi's JSON as MiB whatever unit it states beside the "
              "number: a tool printing bytes gives a figure 2**20 times too large")
    KILLED_BY = ("RAC260", "invariant size-in-the-unit-stated")

    def __init__(self, name: str) -> None:
        super().__init__(name)
        _add_smi_machine(name)

    def samples(self, host: Host, device: Device) -> list[MetricSample]:
        return _samples(self, host, device, lambda value, unit: value * 2**20)


#: A unit table with bytes taken for KiB (the number of a "B" size multiplied by 1024).
_TABLE_BYTES_AS_KIB = {"B": 2**10, "KB": 2**10, "KIB": 2**10, "MB": 2**20, "MIB": 2**20, "GB": 2**30, "GIB": 2**30}


class SizeUnitTableOff(Healthy):
    DEFECT = ("acme-smi's sizes are converted by a unit table whose 'B' entry is KiB's factor: right for the MiB "
              "the fixture prints, 1024 times too large for a tool printing bytes")
    KILLED_BY = ("RAC260", "invariant size-in-the-unit-stated")

    def __init__(self, name: str) -> None:
        super().__init__(name)
        _add_smi_machine(name)

    def samples(self, host: Host, device: Device) -> list[MetricSample]:
        def bytes_of(value: float, unit: Any) -> float:
            factor = _TABLE_BYTES_AS_KIB.get(str(unit).strip().upper())
            if factor is None:
                malformed("memory_used unit", unit, "B, KB, MB or GB", where=f"card {device.index}")
                return 0.0
            return value * factor

        return _samples(self, host, device, bytes_of)


class SmiRecordStrict(Healthy):
    DEFECT = ("an acme-smi card record with a field the plugin does not know is refused as malformed, so the next "
              "acme-smi, which adds a field, loses every card's memory in use")
    KILLED_BY = ("RAC261", "invariant more-in-an-answer-changes-nothing")

    def __init__(self, name: str) -> None:
        super().__init__(name)
        _add_smi_machine(name)

    def samples(self, host: Host, device: Device) -> list[MetricSample]:
        samples = Healthy.samples(self, host, device)
        try:
            result = host.run(SMI, timeout=2.0)
            cards = json.loads(result.stdout)["cards"] if result.returncode == 0 else []
        except (HostError, ValueError, KeyError, TypeError):
            return samples
        card = next((c for c in cards if isinstance(c, dict) and c.get("index") == device.index), None)
        if card is None:
            return samples
        if set(card) != {"index", "memory_used"}:  # the defect: a schema closed to what this tool version prints
            malformed("acme-smi card", sorted(card), "the fields index and memory_used", where=f"card {device.index}")
            return [s for s in samples if s.name != "memory_used"]
        return _samples(self, host, device, lambda value, unit: value * _TABLE[str(unit).strip().upper()])


class SmiRecordLastField(Healthy):
    DEFECT = ("a card's memory in use is read from the last field of its acme-smi record, where this version prints "
              "it: a field the next version adds after it is read instead")
    KILLED_BY = ("RAC261", "invariant more-in-an-answer-changes-nothing")

    def __init__(self, name: str) -> None:
        super().__init__(name)
        _add_smi_machine(name)

    def samples(self, host: Host, device: Device) -> list[MetricSample]:
        samples = Healthy.samples(self, host, device)
        try:
            result = host.run(SMI, timeout=2.0)
            cards = json.loads(result.stdout)["cards"] if result.returncode == 0 else []
        except (HostError, ValueError, KeyError, TypeError):
            return samples
        card = next((c for c in cards if isinstance(c, dict) and c.get("index") == device.index), None)
        if card is None:
            return samples
        size = list(card.values())[-1]  # the defect: by position, not by the field's name
        if not isinstance(size, dict) or not isinstance(size.get("value"), int | float):
            malformed("acme-smi memory_used", size, "a size with its unit", where=f"card {device.index}")
            return [s for s in samples if s.name != "memory_used"]
        used = size["value"] * _TABLE.get(str(size.get("unit")).strip().upper(), 2**20)
        return [s for s in samples if s.name != "memory_used"] + [
            MetricSample(device=device.id, name="memory_used", unit="bytes", value=used)]


#: The right unit table (what the healthy reader converts by).
_TABLE = {"B": 1, "KB": 2**10, "KIB": 2**10, "MB": 2**20, "MIB": 2**20, "GB": 2**30, "GIB": 2**30}


class SmiNotAvailableAsZero(Healthy):
    DEFECT = ("acme-smi's N/A for a card's memory in use (a value the tool cannot give: not supported on that card) "
              "is read as 0 bytes in use")
    KILLED_BY = ("RAC271", "invariant not-supported-is-unknown")

    def __init__(self, name: str) -> None:
        super().__init__(name)
        _add_smi_machine(name)

    def samples(self, host: Host, device: Device) -> list[MetricSample]:
        stated = _stated_memory(host)
        size = (stated or {}).get(device.index)
        if isinstance(size, Mapping) and size.get("value") == "N/A":  # the defect: "not available" taken for none used
            return [s for s in Healthy.samples(self, host, device) if s.name != "memory_used"] + [
                MetricSample(device=device.id, name="memory_used", unit="bytes", value=0.0)]
        return _samples(self, host, device, lambda value, unit: value * _TABLE[str(unit).strip().upper()])


for _cls in (SizeUnitIgnored, SizeUnitTableOff, SmiRecordStrict, SmiRecordLastField, SmiNotAvailableAsZero):
    _plugin = add_import_defect(_cls)
    globals()[_plugin.name.replace("-", "_")] = _plugin
