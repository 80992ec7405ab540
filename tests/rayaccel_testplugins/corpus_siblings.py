"""Corpus mutants that read a metric from the reading beside its own in one record (issue 46, held-out round 7:
NVIDIA utilization read from NVML's ``utilization.memory``, the memory controller's, instead of ``.gpu``): on every
recorded idle GPU both read 0, so only a machine whose two readings differ, with the value it states, tells them
apart; RAC223 sets the sibling alone to another value and sees the metric follow it (``invariant
one-reading-one-metric``). Two shapes: utilization from a tool's JSON record ``{"core", "memory"}`` (the memory
controller's taken), and power from a tool's CSV row of draw and limit (the limit taken).

Each mutant reads ``acme-smi`` on a machine of its own beside acme-4 (``acme-4-busy``: the JSON tool, each card's
core busier than its memory controller; ``acme-4-power``: the CSV tool, each card drawing less than its limit),
whose expectation states what each card's metric reads; on acme-4 (the tool not installed) it reads the driver's
files as the healthy plugin does. Imported by tests/conformance/test_conformance_corpus.py
(``corpus.MUTANT_MODULES``); each is bound here under its name (``c-busy-from-memory-controller`` as
``c_busy_from_memory_controller``) so a Ray node loads it by ``RAYACCEL_PLUGINS``.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from typing import Any

from rayaccel import Device, Host, MetricSample, malformed
from rayaccel_testplugins.corpus import SYSFS, Healthy, add_import_defect, read_machine, tool_output, write_machine

BUSY = ("acme-smi", "--json", "--query-busy")
POWER = ("acme-smi", "--query-power", "--format=csv,noheader")
#: Each card's core and memory controller busy % on the busy machine (the core's is the card's utilization).
CORE_BUSY, MEMORY_BUSY = (45, 62, 70, 88), (12, 19, 23, 31)
#: Each card's power limit on the power machine, watts (its draw is the driver's, 250 W + 1 W a card).
POWER_LIMIT = 700
_CELL = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(?:W|%)?\s*$")


def _write_machine(plugin: str, name: str, change: Callable[[dict[str, Any], list[str]], None]) -> None:
    """The plugin's acme-4 as ``name``, changed by ``change(data, card ids)``, beside it."""
    data = read_machine(plugin)
    data["name"], data["description"] = name, f"{data['description']}, acme-smi installed"
    ids = [data["host"]["files"][f"{SYSFS}/acme{i}/uuid"].strip() for i in range(4)]
    change(data, ids)
    # The tool names each card by its uuid: acme-4's reorder and change perturbations rewrite the driver's files
    # alone, which the tool's records would contradict.
    data["perturbations"] = []
    write_machine(plugin, name, data)


def _busy_machine(data: dict[str, Any], ids: list[str]) -> None:
    cards = [{"index": i, "uuid": ids[i], "utilization": {"core": CORE_BUSY[i], "memory": MEMORY_BUSY[i]}}
             for i in range(4)]
    data["host"]["commands"][" ".join(BUSY)] = {"stdout": json.dumps({"cards": cards}, indent=1)}
    for i in range(4):  # the driver's figure is the core's too
        data["host"]["files"][f"{SYSFS}/acme{i}/busy_percent"] = f"{CORE_BUSY[i]}\n"
        data["expected"]["metric_values"][ids[i]]["utilization"] = CORE_BUSY[i]


def _power_machine(data: dict[str, Any], ids: list[str]) -> None:
    rows = "".join(f"{i}, {ids[i]}, {250 + i}.00 W, {POWER_LIMIT}.00 W\n" for i in range(4))  # index, uuid, draw, limit
    data["host"]["commands"][" ".join(POWER)] = {"stdout": rows}


def _number(value: Any, what: str, card: int) -> float | None:
    """A tool's figure (a JSON number, or a CSV cell with its unit); None (reported) when it is none."""
    if isinstance(value, str) and (match := _CELL.match(value)):
        value = float(match.group(1))
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) \
            or not 0 <= value < 2**53:
        malformed(what, value, "a number", where=f"card {card}")
        return None
    return float(value)


def busy_cards(host: Host) -> dict[int, Any] | None:
    """Card index -> its record in ``acme-smi --json --query-busy``, read once per poll; None where the tool is not
    installed (the driver's files then) or its output is no such JSON (reported)."""
    stdout = tool_output(host, BUSY)
    try:
        return {int(c["index"]): c for c in json.loads(stdout)["cards"]} if stdout is not None else None
    except (ValueError, KeyError, TypeError):
        malformed(" ".join(BUSY), "its output", "JSON with a utilization record per card")
        return None


def power_rows(host: Host) -> dict[int, list[str]] | None:
    """Card index -> the cells of its row of ``acme-smi --query-power`` (index, uuid, draw, limit), read once per
    poll; None where the tool is not installed. A line that is no such row is reported and skipped."""
    stdout = tool_output(host, POWER)
    if stdout is None:
        return None
    rows = {}
    for line in stdout.splitlines():
        cells = line.split(",")
        if len(cells) == 4 and cells[0].strip().isdigit():
            rows[int(cells[0])] = cells
        elif line.strip():
            malformed(" ".join(POWER), line, "index, uuid, draw, limit")
    return rows


def _replaced(samples: list[MetricSample], device: Device, name: str, unit: str, value: float | None,
              ) -> list[MetricSample]:
    kept = [s for s in samples if s.name != name]
    return kept if value is None else [*kept, MetricSample(device=device.id, name=name, unit=unit, value=value)]


class BusyFromMemoryController(Healthy):
    DEFECT = ("a card's utilization is read from acme-smi's utilization.memory (how busy its memory controller is) "
              "instead of utilization.core: every idle card reads 0 for both, a busy one shows it")
    KILLED_BY = ("RAC223", "invariant one-reading-one-metric")
    #: The field of acme-smi's utilization record the card's utilization is read from.
    FIELD = "memory"  # the defect: "core" is the card's

    def __init__(self, name: str) -> None:
        super().__init__(name)
        _write_machine(name, "acme-4-busy", _busy_machine)

    def rayaccel_metrics(self, host: Host, devices: list[Device]) -> list[MetricSample]:
        cards = busy_cards(host)
        out = []
        for device in devices:
            samples = Healthy.samples(self, host, device)
            if cards is not None:
                record = (cards.get(device.index) or {}).get("utilization")
                value = record.get(self.FIELD) if isinstance(record, dict) else None
                samples = _replaced(samples, device, "utilization", "percent",
                                    _number(value, f"utilization.{self.FIELD}", device.index))
            out += samples
        return out


class PowerFromLimit(Healthy):
    DEFECT = ("a card's power is read from acme-smi's power.limit cell, beside power.draw in its row: every card "
              "reads its limit, whatever it draws")
    KILLED_BY = ("RAC223", "invariant one-reading-one-metric")
    #: The cell of acme-smi's power row the card's power is read from (index, uuid, draw, limit).
    FIELD = 3  # the defect: 2, the draw, is the card's

    def __init__(self, name: str) -> None:
        super().__init__(name)
        _write_machine(name, "acme-4-power", _power_machine)

    def rayaccel_metrics(self, host: Host, devices: list[Device]) -> list[MetricSample]:
        rows = power_rows(host)
        out = []
        for device in devices:
            samples = Healthy.samples(self, host, device)
            if rows is not None and device.index in rows:
                samples = _replaced(samples, device, "power", "watts",
                                    _number(rows[device.index][self.FIELD].strip(), "power", device.index))
            out += samples
        return out


for _cls in (BusyFromMemoryController, PowerFromLimit):
    _plugin = add_import_defect(_cls)
    globals()[_plugin.name.replace("-", "_")] = _plugin
