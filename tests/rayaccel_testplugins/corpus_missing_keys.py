"""Corpus mutants that read a tool's JSON right only while every field is there (issue 46, held-out round 6: a
reading's key missing from a tool's JSON, as amd-smi leaves out what its version or the driver's does not give):
RAC233 leaves each key of a metric reading out in turn (``invariant a-missing-key-is-an-unknown-reading``). Two
shapes: the missing value read as 0, and one card's missing field refusing every card's readings.

Each mutant reads ``acme-smi --json`` on the machine ``acme-4-smi`` (corpus_vendor_json's: each card's memory in use
as ``{"value": ..., "unit": "MiB"}``), and handles garbage and N/A as it should. Imported by
tests/conformance/test_conformance_corpus.py (``corpus.MUTANT_MODULES``); each is bound here under its name
(``c-missing-key-read-as-zero`` as ``c_missing_key_read_as_zero``) so a Ray node loads it by ``RAYACCEL_PLUGINS``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from rayaccel import Device, Host, MetricSample, malformed
from rayaccel_testplugins.corpus import Healthy, add_import_defect, tool_output
from rayaccel_testplugins.corpus_vendor_json import SMI, _add_smi_machine

_MIB = {"MIB": 2**20, "GIB": 2**30, "KIB": 2**10, "B": 1}


def _cards(host: Host) -> list[Any] | None:
    if (stdout := tool_output(host, SMI)) is None:
        return None
    try:
        return json.loads(stdout)["cards"]  # type: ignore[no-any-return]
    except (ValueError, KeyError, TypeError):
        malformed(" ".join(SMI), "its output", "JSON with a list of cards")
        return None


def _with_used(plugin: Healthy, host: Host, device: Device, size: Any) -> list[MetricSample]:
    """The healthy samples with memory in use from ``size`` (the tool's ``{"value", "unit"}``), left out (reported)
    where it is no size in a known unit."""
    samples = [s for s in Healthy.samples(plugin, host, device) if s.name != "memory_used"]
    value = size.get("value") if isinstance(size, Mapping) else None
    factor = _MIB.get(str(size.get("unit")).strip().upper()) if isinstance(size, Mapping) else None
    if (not isinstance(value, int | float) or isinstance(value, bool) or factor is None
            or not 0 <= value < 2**53):  # past a double's integers (a 23-digit figure, inf, nan): no size
        malformed("memory_used", size, "a size with its unit", where=f"card {device.index}")
        return samples
    return [*samples, MetricSample(device=device.id, name="memory_used", unit="bytes", value=value * factor)]


class MissingKeyReadAsZero(Healthy):
    DEFECT = ("acme-smi's memory in use is read with .get('value', 0): a tool that leaves the field out gives 0 "
              "bytes in use, not an unknown reading")
    KILLED_BY = ("RAC233", "invariant a-missing-key-is-an-unknown-reading")

    def __init__(self, name: str) -> None:
        super().__init__(name)
        _add_smi_machine(name)

    def rayaccel_metrics(self, host: Host, devices: list[Device]) -> list[MetricSample]:
        cards = _cards(host)  # once per poll: a hung tool is waited out once
        return [s for d in devices for s in self.card_samples(host, d, cards)]

    def card_samples(self, host: Host, device: Device, cards: list[Any] | None) -> list[MetricSample]:
        card = next((c for c in cards or [] if isinstance(c, Mapping) and c.get("index") == device.index), None)
        if card is None:
            return Healthy.samples(self, host, device)
        size = card.get("memory_used") or {}
        # the defect: a missing value taken as 0 where it is unknown
        size = {"value": 0, "unit": "MiB"} if not isinstance(size, Mapping) else {"unit": "MiB", "value": 0, **size}
        return _with_used(self, host, device, size)


class MissingKeyDropsEveryCard(Healthy):
    DEFECT = ("acme-smi's cards are read in one comprehension, card['memory_used']['value'] for every card: one "
              "card's missing field refuses the whole listing, and every card falls back to the driver's figure")
    KILLED_BY = ("RAC233", "invariant a-missing-key-is-an-unknown-reading")

    def __init__(self, name: str) -> None:
        super().__init__(name)
        _add_smi_machine(name)

    def rayaccel_metrics(self, host: Host, devices: list[Device]) -> list[MetricSample]:
        cards = _cards(host)  # once per poll: a hung tool is waited out once
        return [s for d in devices for s in self.card_samples(host, d, cards)]

    def card_samples(self, host: Host, device: Device, cards: list[Any] | None) -> list[MetricSample]:
        try:  # the defect: one card's KeyError refuses every card's readings
            sizes = {int(c["index"]): {"value": c["memory_used"]["value"], "unit": c["memory_used"]["unit"]}
                     for c in cards or []}
        except (KeyError, TypeError, ValueError):
            malformed(" ".join(SMI), "its output", "a memory_used value and unit per card")
            sizes = {}
        if device.index not in sizes:
            return Healthy.samples(self, host, device)
        return _with_used(self, host, device, sizes[device.index])


for _cls in (MissingKeyReadAsZero, MissingKeyDropsEveryCard):
    _plugin = add_import_defect(_cls)
    globals()[_plugin.name.replace("-", "_")] = _plugin
