"""Corpus mutants whose device loses what it reads elsewhere when one tool's answer leaves its record out (issue 46,
held-out round 9's j2: a command-json bake emitting memory_total only beside a stats row, though the listing gives the
device's memory): every fixture's tool answers list every device, so a metric hung on the record shows on none.
RAC233 leaves the device's record out of one answer (``invariant a-missing-record-keeps-the-rest``). Two shapes: the
capacity emitted only beside a JSON record (acme-4-busy, corpus_siblings' machine), and every sample of a card built
only from its CSV row (acme-4-power), though its driver's files give memory, busy and temperature.

Imported by tests/conformance/test_conformance_corpus.py (``corpus.MUTANT_MODULES``); each is bound here under its
name so a Ray node or a fresh process loads it (``c-capacity-beside-busy-record`` as ``c_capacity_beside_busy_record``).
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


class CapacityBesideBusyRecord(Healthy):
    DEFECT = ("a card's memory_total is emitted only beside its acme-smi busy record (so a dashboard can divide used "
              "by it), so a card the tool leaves out loses its capacity, which its driver's listing states")
    KILLED_BY = ("RAC233", "invariant a-missing-record-keeps-the-rest")

    def __init__(self, name: str) -> None:
        super().__init__(name)
        _write_machine(name, "acme-4-busy", _busy_machine)

    def rayaccel_metrics(self, host: Host, devices: list[Device]) -> list[MetricSample]:
        cards = busy_cards(host)
        out = []
        for device in devices:
            samples = Healthy.samples(self, host, device)
            if cards is not None:
                record = cards.get(device.index)
                busy = record.get("utilization") if isinstance(record, dict) else None
                value = busy.get("core") if isinstance(busy, dict) else None
                samples = _replaced(samples, device, "utilization", "percent",
                                    _number(value, "utilization.core", device.index))
                if record is None:  # the defect: the capacity hung on the busy record
                    samples = [s for s in samples if s.name != "memory_total"]
            out += samples
        return out


class SamplesOnlyFromPowerRow(Healthy):
    DEFECT = ("a card's samples are built when its acme-smi power row is read, so a card the tool leaves out has "
              "none, though its driver's files give its memory, busy and temperature")
    KILLED_BY = ("RAC233", "invariant a-missing-record-keeps-the-rest")

    def __init__(self, name: str) -> None:
        super().__init__(name)
        _write_machine(name, "acme-4-power", _power_machine)

    def rayaccel_metrics(self, host: Host, devices: list[Device]) -> list[MetricSample]:
        rows = power_rows(host)
        out = []
        for device in devices:
            if rows is None:
                out += Healthy.samples(self, host, device)
            elif device.index in rows:  # the defect: a card without a row gets no samples at all
                out += _replaced(Healthy.samples(self, host, device), device, "power", "watts",
                                 _number(rows[device.index][2].strip(), "power", device.index))
        return out


for _cls in (CapacityBesideBusyRecord, SamplesOnlyFromPowerRow):
    _plugin = add_import_defect(_cls)
    globals()[_plugin.name.replace("-", "_")] = _plugin
