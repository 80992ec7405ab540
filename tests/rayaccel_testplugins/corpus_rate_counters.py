"""Corpus mutants whose link rates do not follow their own direction's counter (issue 46, held-out round 17's ``n1``:
an NVIDIA wrapper publishing NVML's NVLink TX counter as ``interconnect_rx`` and RX as ``interconnect_tx``; ``c1m``:
a CSV bake publishing each device's fastest link's rated GB/s as both rates, a constant). Each machine states no
rate in ``expected.metric_values``, so every fixture passes RAC246's comparisons; RAC246 advances one direction's
counters of a card alone at the host seam between two polls, and doubles a named reading a rate equals
(``invariant a-rate-follows-its-own-counter``). Two shapes: ACME's counter library stating each card's link bytes
sent and received since the driver loaded (``sent_bytes``, ``received_bytes``, an idle machine: they stay put), read
crossed; and ``acme-smi link --json`` stating each card's links and their rated speed (``speed_gbytes_per_s``, as
``nvidia-smi nvlink -s`` prints ``Link 0: 26.562 GB/s``), the fastest published as both rates.

Imported by tests/conformance/test_conformance_corpus.py (``corpus.MUTANT_MODULES``); each is bound here under its
name (``c-link-rates-crossed`` as ``c_link_rates_crossed``) so a Ray node loads it by ``RAYACCEL_PLUGINS``.
"""

from __future__ import annotations

import json
import time
import weakref
from typing import Any

from rayaccel import Device, Host, LibraryAdapter, LibraryUnavailable, MetricSample
from rayaccel_testplugins.corpus import Healthy, add_import_defect, read_machine, tool_output, write_machine

#: Each card's link bytes sent and received since the driver loaded (an idle machine: they stay put).
BYTES = [(7_340_032_000 + 1_048_576 * i, 5_242_880_000 + 1_048_576 * i) for i in range(4)]
#: ``acme-smi link --json``: per card (by uuid), its links to the other cards and each one's rated GB/s.
SPEEDS_ARGV = ("acme-smi", "link", "--json")
LINK_GBYTES_PER_S = 50


class ByteCounters:
    """ACME's link byte counter library, simulated: per card (by index), bytes sent and received."""

    def __init__(self, data: dict[str, Any]) -> None:
        self.cards = data.get("cards") or {}

    def read(self, index: int) -> tuple[float, int, int] | None:
        """(monotonic seconds, bytes sent, bytes received) of a card; None for a card the library does not count."""
        card = self.cards.get(str(index))
        if card is None:
            return None
        return time.monotonic(), int(card["sent_bytes"]), int(card["received_bytes"])


def _no_real_library() -> Any:
    raise LibraryUnavailable("acmebytes: simulated only")


ACME_BYTES = LibraryAdapter("acmebytes", _no_real_library, ByteCounters)


def add_byte_counters(plugin: str) -> None:
    """The plugin's acme-4 with each card's link byte counters in ACME's counter library."""
    data = read_machine(plugin)
    data["host"]["libraries"] = {**(data["host"].get("libraries") or {}), "acmebytes": {"cards": {
        str(i): {"sent_bytes": sent, "received_bytes": received} for i, (sent, received) in enumerate(BYTES)}}}
    write_machine(plugin, "acme-4", data)


def speeds_report(ids: list[str]) -> str:
    """``acme-smi link --json``'s report: each card (by uuid), its links to the others with their rated speed."""
    return json.dumps({"cards": [{"uuid": card, "links": [{"peer": peer, "speed_gbytes_per_s": LINK_GBYTES_PER_S}
                                                          for peer in ids if peer != card]} for card in ids]}) + "\n"


def add_speeds(plugin: str) -> None:
    """The plugin's acme-4 with ``acme-smi link --json`` stating each card's links and their rated speed."""
    data = read_machine(plugin)
    ids = list(data["expected"]["device_ids"])
    data["host"]["commands"] = {**(data["host"].get("commands") or {}),
                                " ".join(SPEEDS_ARGV): {"stdout": speeds_report(ids), "returncode": 0}}
    write_machine(plugin, "acme-4", data)


Sample = tuple[float, int, int]


class LinkRatesCrossed(Healthy):
    DEFECT = ("a card's link rate sent is read from its received_bytes counter and received from sent_bytes ('the "
              "peer's receive is what the card sends')")
    KILLED_BY = ("RAC246", "invariant a-rate-follows-its-own-counter")

    def __init__(self, name: str) -> None:
        super().__init__(name)
        add_byte_counters(name)
        # library session -> card index -> (monotonic seconds, bytes sent, bytes received) of the previous poll
        self.previous: weakref.WeakKeyDictionary[Any, dict[int, Sample]] = weakref.WeakKeyDictionary()

    def rayaccel_metrics(self, host: Host, devices: list[Device]) -> list[MetricSample]:
        samples = super().rayaccel_metrics(host, devices)
        try:
            counters = host.library(ACME_BYTES)
        except LibraryUnavailable:
            return samples
        before_now = self.previous.setdefault(self.kept_by(host, counters), {})
        for device in devices:
            now, before = counters.read(device.index), before_now.get(device.index)
            if now is None:
                continue
            before_now[device.index] = now
            if before is None or now[0] <= before[0] or now[1] < before[1] or now[2] < before[2]:
                continue  # the first poll, or a counter reset: no rate this poll
            seconds = now[0] - before[0]
            sent, received = self.directions((now[1] - before[1]) / seconds, (now[2] - before[2]) / seconds)
            samples += [MetricSample(device=device.id, name="interconnect_tx", unit="bytes_per_second", value=sent),
                        MetricSample(device=device.id, name="interconnect_rx", unit="bytes_per_second",
                                     value=received)]
        return samples

    def kept_by(self, host: Host, counters: ByteCounters) -> Any:
        """What the previous samples are kept per: the library session (as NVIDIA's plugin keeps NVML's)."""
        return counters

    def directions(self, sent: float, received: float) -> tuple[float, float]:
        return received, sent  # the defect: each direction read from the other's counter


class LinkRateAsRatedSpeed(Healthy):
    DEFECT = ("a card's link rates are its fastest link's rated speed from acme-smi link --json ('the link runs at "
              "its rated speed'), a constant whatever the traffic")
    KILLED_BY = ("RAC246", "invariant a-rate-follows-its-own-counter")

    def __init__(self, name: str) -> None:
        super().__init__(name)
        add_speeds(name)

    def rayaccel_metrics(self, host: Host, devices: list[Device]) -> list[MetricSample]:
        samples = super().rayaccel_metrics(host, devices)
        try:
            cards = json.loads(tool_output(host, SPEEDS_ARGV) or "")["cards"]
            fastest = {str(card["uuid"]): max(float(link["speed_gbytes_per_s"]) for link in card["links"])
                       for card in cards if card["links"]}
        except (ValueError, KeyError, TypeError, AttributeError):
            return samples
        return samples + [MetricSample(device=d.id, name=name, unit="bytes_per_second", value=fastest[d.id] * 1e9)
                          for d in devices if d.id in fastest for name in ("interconnect_tx", "interconnect_rx")]


for _cls in (LinkRatesCrossed, LinkRateAsRatedSpeed):
    _plugin = add_import_defect(_cls)
    globals()[_plugin.name.replace("-", "_")] = _plugin
