"""Corpus mutants that take a metric from another reading and publish the machine's own under a vendor name (issue 46,
held-out round 10's ``p1``: a TPU wrapper reading utilization from the scrape's ``duty_cycle`` and publishing
``tensorcore_utilization``, which the fixture states, as ``vendor.tensorcore_utilization``; RAC203 and RAC206 named
only the values). Which of two readings a metric means is the vendor's word, which only a fixture states, so no
invariant holds across correct plugins; a failing RAC206 names the defect from the plugin's own samples instead: the
value the machine reads for the metric is what the plugin publishes for the same device under another name.

Two shapes, on the machines of :mod:`.corpus_siblings` (acme-smi installed beside the driver's files, the expectation
stating each card's metric): utilization from a JSON record's memory-controller figure, the core's published as
``vendor.utilization_core`` (``acme-4-busy``); power from a CSV row's limit cell, the draw published as
``vendor.power_draw`` (``acme-4-power``). Imported by tests/conformance/test_conformance_corpus.py
(``corpus.MUTANT_MODULES``); each is bound here under its name (``c-busy-core-as-vendor`` as
``c_busy_core_as_vendor``) so a Ray node loads it by ``RAYACCEL_PLUGINS``.
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

#: The fragment RAC206 names the defect with.
NAMED = "is what the plugin publishes for"


class BusyCoreAsVendor(Healthy):
    DEFECT = ("a card's utilization is acme-smi's utilization.memory, and utilization.core, the card's, is published "
              "as vendor.utilization_core ('the memory controller is the bottleneck')")
    KILLED_BY = ("RAC206", NAMED)

    def __init__(self, name: str) -> None:
        super().__init__(name)
        _write_machine(name, "acme-4-busy", _busy_machine)

    def rayaccel_metrics(self, host: Host, devices: list[Device]) -> list[MetricSample]:
        cards = busy_cards(host)
        out = []
        for device in devices:
            samples = Healthy.samples(self, host, device)
            record = (cards or {}).get(device.index, {}).get("utilization")
            if isinstance(record, dict):  # the defect: the two fields' roles exchanged
                samples = _replaced(samples, device, "utilization", "percent",
                                    _number(record.get("memory"), "utilization.memory", device.index))
                samples = _replaced(samples, device, "vendor.utilization_core", "percent",
                                    _number(record.get("core"), "utilization.core", device.index))
            out += samples
        return out


class PowerDrawAsVendor(Healthy):
    DEFECT = ("a card's power is acme-smi's power.limit cell, and power.draw, the card's, is published as "
              "vendor.power_draw ('power is the budget the card may use')")
    KILLED_BY = ("RAC206", NAMED)

    def __init__(self, name: str) -> None:
        super().__init__(name)
        _write_machine(name, "acme-4-power", _power_machine)

    def rayaccel_metrics(self, host: Host, devices: list[Device]) -> list[MetricSample]:
        rows = power_rows(host)
        out = []
        for device in devices:
            samples = Healthy.samples(self, host, device)
            if rows is not None and device.index in rows:  # the defect: the limit as power, the draw a vendor's
                cells = rows[device.index]
                samples = _replaced(samples, device, "power", "watts", _number(cells[3].strip(), "power.limit",
                                                                               device.index))
                samples = _replaced(samples, device, "vendor.power_draw", "watts",
                                    _number(cells[2].strip(), "power.draw", device.index))
            out += samples
        return out


for _cls in (BusyCoreAsVendor, PowerDrawAsVendor):
    _plugin = add_import_defect(_cls)
    globals()[_plugin.name.replace("-", "_")] = _plugin
