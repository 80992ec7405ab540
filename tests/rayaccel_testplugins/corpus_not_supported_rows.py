"""Corpus mutants that take one value a tool answers as not supported for the whole record (issue 46, held-out
round 10's c1: a command-csv bake matching "[N/A]" case-sensitively, so the tool's "N/A" in one cell dropped the
device's whole stats row). RAC271 answers each reading as not supported in turn; the device's samples that other
readings give must stay (``invariant not-supported-takes-only-its-value``). Two shapes: a card skipped whole when
acme-smi's JSON busy record holds no number (acme-4-busy), and a card left with its capacity alone when its CSV power
row's draw is no number (acme-4-power), though the driver's files give its memory, busy and temperature.

Imported by tests/conformance/test_conformance_corpus.py (``corpus.MUTANT_MODULES``); each is bound here under its
name so a Ray node or a fresh process loads it (``c-card-skipped-on-busy-na`` as ``c_card_skipped_on_busy_na``).
"""

from __future__ import annotations

from rayaccel import Device, Host, MetricSample
from rayaccel_testplugins.corpus import Healthy, add_import_defect
from rayaccel_testplugins.corpus_siblings import (
    _busy_machine,
    _number,
    _power_machine,
    _replaced,
    _write_machine,
    busy_cards,
    power_rows,
)


class CardSkippedOnBusyNa(Healthy):
    DEFECT = ("a card whose acme-smi busy record holds something other than a number for its core (the tool's N/A) "
              "is taken for a card in error and left out of the samples whole, though its driver's files give the "
              "rest (a card with no figure keeps the driver's)")
    KILLED_BY = ("RAC271", "invariant not-supported-takes-only-its-value")

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
                core = record.get("core") if isinstance(record, dict) else None
                if core is not None:  # a card the tool gives no figure for keeps the driver's
                    value = _number(core, "utilization.core", device.index)
                    if value is None:
                        continue  # the defect: a figure that is no number taken for a card in error, all of it
                    samples = _replaced(samples, device, "utilization", "percent", value)
            out += samples
        return out


class RowDroppedOnPowerNa(Healthy):
    DEFECT = ("a card whose acme-smi power row holds no number for its draw (the tool's N/A) keeps only its "
              "capacity: its memory in use, busy and temperature, read from the driver's files, are dropped too")
    KILLED_BY = ("RAC271", "invariant not-supported-takes-only-its-value")

    def __init__(self, name: str) -> None:
        super().__init__(name)
        _write_machine(name, "acme-4-power", _power_machine)

    def rayaccel_metrics(self, host: Host, devices: list[Device]) -> list[MetricSample]:
        rows = power_rows(host)
        out = []
        for device in devices:
            samples = Healthy.samples(self, host, device)
            if rows is not None and device.index in rows:
                draw = _number(rows[device.index][2].strip(), "power", device.index)
                if draw is None:  # the defect: the row's one unknown cell taken for the card's
                    samples = [s for s in samples if s.name == "memory_total"]
                samples = _replaced(samples, device, "power", "watts", draw)
            out += samples
        return out


for _cls in (CardSkippedOnBusyNa, RowDroppedOnPowerNa):
    _plugin = add_import_defect(_cls)
    globals()[_plugin.name.replace("-", "_")] = _plugin
