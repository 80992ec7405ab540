"""Corpus mutants of what a device's readings mean (issue 46: RAC245, RAC246), two shapes each: a NUMA node right on
the fixture's machine because the rule it is computed by happens to agree there (RAC245), or Linux's -1 (no node)
taken for a malformed value or node 0 (RAC245); a link rate measured
between two polls of a busy machine in another unit or direction than its record declares (RAC246).

Imported by tests/conformance/test_conformance_corpus.py (``corpus.MUTANT_MODULES``); each is bound here under its
name (``c-numa-by-index-half`` as ``c_numa_by_index_half``) so a Ray node loads it by ``RAYACCEL_PLUGINS``.
"""

from __future__ import annotations

import time
import weakref
from collections.abc import Callable
from typing import Any

from rayaccel import Device, Host, LibraryAdapter, LibraryUnavailable, MetricSample, report_problem
from rayaccel_testplugins import acme
from rayaccel_testplugins.corpus import SYSFS, Healthy, add_import_defect, read_machine, write_machine


class NumaByIndexHalf(Healthy):
    DEFECT = ("a card's NUMA node is computed from its place on the node (the first half of the cards on socket 0, "
              "the rest on socket 1), not read: right on a machine cabled that way, wrong on the next")
    KILLED_BY = ("RAC245", "invariant numa-node-read-from-the-host")

    def rayaccel_discover(self, host: Host) -> list[Device]:
        devices = super().rayaccel_discover(host)
        return [d.model_copy(update={"numa_node": i * 2 // len(devices)}) for i, d in enumerate(devices)]


class NumaFromFirstCard(Healthy):
    DEFECT = "every card's NUMA node is read from card 0's entry (one read for the node, as if all shared a socket)"
    KILLED_BY = ("RAC245", "invariant numa-node-read-from-the-host")

    def device(self, host: Host, path: str, driver: str | None) -> Device:
        card = super().device(host, path, driver)
        return card.model_copy(update={"numa_node": acme._number(host, f"{SYSFS}/acme0/numa_node")})



class NumaDigitsOnly(Healthy):
    DEFECT = ("a card's numa_node is accepted only as digits: Linux's -1 (no NUMA node: a one-socket machine, a VM) "
              "is reported as unreadable on every poll")
    KILLED_BY = ("RAC245", "invariant no-numa-node-is-not-a-node")

    def device(self, host: Host, path: str, driver: str | None) -> Device:
        card = super().device(host, path, driver)
        text = host.read_text(f"{path}/numa_node").strip()
        if not text.isdigit():
            report_problem("unreadable-attribute", f"{path}/numa_node is {text!r}, not a node number")
        return card.model_copy(update={"numa_node": int(text) if text.isdigit() else None})


class NumaClampedToZero(Healthy):
    DEFECT = "a card's numa_node is clamped to 0 or more, so Linux's -1 (no NUMA node) becomes node 0, made up"
    KILLED_BY = ("RAC245", "invariant no-numa-node-is-not-a-node")

    def device(self, host: Host, path: str, driver: str | None) -> Device:
        card = super().device(host, path, driver)
        return card.model_copy(update={"numa_node": None if card.numa_node is None else max(0, card.numa_node)})

# Link rates between two polls (RAC246) ----------------------------------------------------------------------------


class LinkCounters:
    """ACME's link counter library, simulated: per card, bytes sent and received since the driver loaded, recorded
    twice on a busy machine (``{timestamp: <us>, value: <bytes>}``) and advancing at that rate while it is open."""

    def __init__(self, data: dict[str, Any]) -> None:
        self.cards = data.get("cards") or {}
        self.opened_us = time.time_ns() // 1000

    def read(self, index: int) -> tuple[int, int, int] | None:
        """(timestamp us, bytes sent, bytes received) of a card; None for a card the library does not count."""
        now = time.time_ns() // 1000
        card = self.cards.get(str(index))
        if card is None:
            return None

        def at(recorded: list[dict[str, int]]) -> int:
            first, last = recorded[0], recorded[-1]
            span = last["timestamp"] - first["timestamp"]
            per_us = (last["value"] - first["value"]) / span if span > 0 else 0.0
            return first["value"] + int(per_us * (now - self.opened_us))

        return now, at(card["tx"]), at(card["rx"])


def _no_real_library() -> Any:
    raise LibraryUnavailable("acmelink: simulated only")


ACME_LINK = LibraryAdapter("acmelink", _no_real_library, LinkCounters)
#: Each card's traffic on the busy machine, bytes per second sent and received.
TRAFFIC = [(40e9 + 1e9 * i, 30e9 + 1e9 * i) for i in range(4)]


def _add_link_counters(plugin: str) -> None:
    """The plugin's acme-4 machine busy: its link counters recorded twice, a second apart, and the rates stated."""
    data = read_machine(plugin)
    start = 1_733_400_000_000_000
    data["host"]["libraries"] = {"acmelink": {"cards": {str(i): {
        key: [{"timestamp": start, "value": 2**40}, {"timestamp": start + 1_000_000, "value": 2**40 + int(rate)}]
        for key, rate in (("tx", tx), ("rx", rx))} for i, (tx, rx) in enumerate(TRAFFIC)}}}
    ids = {i: data["host"]["files"][f"{SYSFS}/acme{i}/uuid"].strip() for i in range(4)}
    for i, (tx, rx) in enumerate(TRAFFIC):
        data["expected"]["metric_values"][ids[i]].update({"interconnect_tx": tx, "interconnect_rx": rx})
    write_machine(plugin, "acme-4", data)


Counters = tuple[int, int, int]


def rate_samples(previous: weakref.WeakKeyDictionary[Any, dict[int, Counters]], host: Host, devices: list[Device],
                 rate: Callable[[Counters, Counters], tuple[float, float]],
                 reset_guard: bool = True) -> list[MetricSample]:
    """Each card's link rates: the advance of its counters between this poll and the last (kept per library
    session), over the time between, as ``rate`` works them out; none across a counter that went down (a reset)."""
    counters = host.library(ACME_LINK)
    before_now = previous.setdefault(counters, {})
    samples = []
    for device in devices:
        now, before = counters.read(device.index), before_now.get(device.index)
        if now is None:
            continue
        before_now[device.index] = now
        reset = before is not None and reset_guard and (now[1] < before[1] or now[2] < before[2])
        if before is not None and now[0] > before[0] and not reset:
            tx, rx = rate(before, now)
            samples += [MetricSample(device=device.id, name="interconnect_tx", unit="bytes_per_second", value=tx),
                        MetricSample(device=device.id, name="interconnect_rx", unit="bytes_per_second", value=rx)]
    return samples


def _both_directions(before: Counters, now: Counters) -> tuple[float, float]:
    both = (now[1] - before[1] + now[2] - before[2]) / ((now[0] - before[0]) / 1e6)
    return both, both


def _over_milliseconds(before: Counters, now: Counters) -> tuple[float, float]:
    seconds = (now[0] - before[0]) / 1e3
    return (now[1] - before[1]) / seconds, (now[2] - before[2]) / seconds


class RatesBothWaysSummed(Healthy):
    DEFECT = "a card's link rate sent is what it sent and received together (both directions summed in one rate)"
    KILLED_BY = ("RAC246", "invariant rate-is-the-stated-traffic")

    def __init__(self, name: str) -> None:
        super().__init__(name)
        _add_link_counters(name)
        self.previous: weakref.WeakKeyDictionary[Any, dict[int, Counters]] = weakref.WeakKeyDictionary()

    def rayaccel_metrics(self, host: Host, devices: list[Device]) -> list[MetricSample]:
        return super().rayaccel_metrics(host, devices) + rate_samples(self.previous, host, devices, _both_directions)


class RatesOverMillisecondStamps(Healthy):
    DEFECT = "a card's link rates divide by the time between its samples taken as milliseconds (they are microseconds)"
    KILLED_BY = ("RAC246", "invariant rate-is-the-stated-traffic")

    def __init__(self, name: str) -> None:
        super().__init__(name)
        _add_link_counters(name)
        self.previous: weakref.WeakKeyDictionary[Any, dict[int, Counters]] = weakref.WeakKeyDictionary()

    def rayaccel_metrics(self, host: Host, devices: list[Device]) -> list[MetricSample]:
        return super().rayaccel_metrics(host, devices) + rate_samples(self.previous, host, devices, _over_milliseconds)


def _per_second(before: Counters, now: Counters) -> tuple[float, float]:
    seconds = (now[0] - before[0]) / 1e6
    return (now[1] - before[1]) / seconds, (now[2] - before[2]) / seconds


class RatesAcrossCounterReset(Healthy):
    DEFECT = ("a card's link rates are computed across a counter reset (a driver reload zeroes the library's counters "
              "under the open session): the counter's fall is reported as a negative rate")
    KILLED_BY = ("RAC246", "invariant no-rate-across-a-counter-reset")

    def __init__(self, name: str) -> None:
        super().__init__(name)
        _add_link_counters(name)
        self.previous: weakref.WeakKeyDictionary[Any, dict[int, Counters]] = weakref.WeakKeyDictionary()

    def rayaccel_metrics(self, host: Host, devices: list[Device]) -> list[MetricSample]:
        return super().rayaccel_metrics(host, devices) + rate_samples(self.previous, host, devices, _per_second,
                                                                      reset_guard=False)


#: The width a counter is taken to wrap at: a counter below its last sample is taken to have wrapped.
COUNTER_BITS = 64


def _wrapping(before: Counters, now: Counters) -> tuple[float, float]:
    seconds = (now[0] - before[0]) / 1e6
    return ((now[1] - before[1]) % 2**COUNTER_BITS / seconds, (now[2] - before[2]) % 2**COUNTER_BITS / seconds)


class RatesWrapOnReset(Healthy):
    DEFECT = ("a card's link counters below their last sample are taken to have wrapped at 2**64, so a counter reset "
              "(a driver reload zeroes them) gives a rate of about 2**64 bytes over the interval")
    KILLED_BY = ("RAC246", "invariant no-rate-across-a-counter-reset")

    def __init__(self, name: str) -> None:
        super().__init__(name)
        _add_link_counters(name)
        self.previous: weakref.WeakKeyDictionary[Any, dict[int, Counters]] = weakref.WeakKeyDictionary()

    def rayaccel_metrics(self, host: Host, devices: list[Device]) -> list[MetricSample]:
        return super().rayaccel_metrics(host, devices) + rate_samples(self.previous, host, devices, _wrapping,
                                                                      reset_guard=False)


for _cls in (NumaByIndexHalf, NumaFromFirstCard, NumaDigitsOnly, NumaClampedToZero, RatesBothWaysSummed,
             RatesOverMillisecondStamps, RatesAcrossCounterReset, RatesWrapOnReset):
    _plugin = add_import_defect(_cls)
    globals()[_plugin.name.replace("-", "_")] = _plugin
