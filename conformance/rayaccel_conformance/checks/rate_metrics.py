"""RAC246 (supported tier): a rate (bytes per second) is measured between two polls of one host, and on a busy
machine it is the traffic the fixture states, one direction, within what the device's SKU declares its links carry.

Every other check builds an inventory once, and a rate needs two samples of a counter, so a rate in the wrong unit
(a KiB counter's delta reported as bytes), both directions summed or counted in bits was never compared with
anything. The suite polls the metrics hook twice on one simulated host (the simulated library advances a counter
recorded on a busy machine at its recorded rate, as the real one does) and compares each rate with the fixture's
``expected.metric_values`` and with the SKU's ``link_bandwidth_gbytes_per_s``.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from rayaccel import hookspec
from rayaccel.records import STANDARD_METRICS, Device, MetricSample, Problem
from rayaccel.simulation.host_factory import simulated_host
from rayaccel_conformance.checks.invariants import catalog_link_maxima
from rayaccel_conformance.checks.supported import metric_value_differences
from rayaccel_conformance.harness.subject import Subject
from rayaccel_conformance.registry import CheckFailed, Evidence, NotApplicable, check

#: The least time between the two polls: a counter's advance over it is thousands of its units, so a rate
#: read from it is exact to well within the 1% a stated value is compared with.
MIN_INTERVAL_S = 0.05
#: How far above the SKU's declared bandwidth a rate may read (a timestamp's jitter), and what is named as
#: both directions summed or bits for bytes.
HEADROOM = 1.05


def rate_names() -> set[str]:
    return {name for name, unit in STANDARD_METRICS.items() if unit == "bytes_per_second"}


def _poll_twice(subject: Subject, fixture: str, devices: Sequence[Device]) -> tuple[list[MetricSample], list[str]]:
    """The second of two polls of one host, at least :data:`MIN_INTERVAL_S` apart, and the problems of both."""
    host = simulated_host(subject.fixture(fixture))
    problems: list[Problem] = []
    subject.manager.answer(subject.name, hookspec.METRICS, problems, host=host, devices=list(devices))
    started = time.monotonic()
    while time.monotonic() - started < MIN_INTERVAL_S:  # the interval is the measurement: a rate over it
        time.sleep(MIN_INTERVAL_S / 5)
    second = subject.manager.answer(subject.name, hookspec.METRICS, problems, host=host, devices=list(devices))
    return list(second or []), [p.render() for p in problems]


def over_the_sku(sample: MetricSample, sku: str, gbytes_per_s: float, where: str) -> str | None:
    """What is wrong with a rate against its device's SKU's declared link bandwidth (one direction, all links)."""
    limit = gbytes_per_s * 1e9
    if sample.value <= limit * HEADROOM:
        return None
    why = ("sent and received summed? report one direction" if sample.value <= 2 * limit * HEADROOM
           else "bits counted for bytes? divide by 8" if sample.value <= 8 * limit * HEADROOM
           else "a counter's unit taken for bytes?")
    return (f"invariant rate-within-the-sku-bandwidth, {where}: {sample.name} of {sample.device} is "
            f"{sample.value:g} bytes/s, more than the {gbytes_per_s:g} GB/s one direction SKU {sku} declares its links "
            f"carry (link_bandwidth_gbytes_per_s): {why}")


@check("RAC246", scope="fixture")
def rates_between_two_polls(subject: Subject, fixture: str | None) -> Evidence:
    """A rate measured between two polls of one host is the traffic the fixture states, one direction, within
    the bandwidth the device's SKU declares.

    The suite polls ``rayaccel_metrics`` twice on one simulated host, at least 50 ms apart (a simulated library
    advances a counter recorded on a busy machine at its recorded rate, as NVML's NVLink throughput counters
    advance). Each rate on the second poll (``interconnect_tx``, ``interconnect_rx``: bytes per second) must
    be at most the fastest link bandwidth the device's SKU declares (``link_bandwidth_gbytes_per_s``, one
    direction of all its links; `invariant rate-within-the-sku-bandwidth`, naming twice it as both directions
    summed and eight times as bits), and equal, within 1%, the rate the fixture states
    (``expected.metric_values``; `invariant rate-is-the-stated-traffic`, naming a KiB counter's delta read as
    bytes); a rate the fixture states that the second poll lacks was never computed. Not applicable where the
    second poll gives no rate and the fixture states none. Fix: keep each counter's previous sample per device
    (and per library session), divide the counter's advance by the time between the samples' timestamps, and
    convert it from the counter's unit (NVML's NVLink counters are KiB: x 1024) to bytes; report one direction.
    """
    subject.family()
    fx = subject.fixture(fixture)
    ref = fx.ref
    devices = subject.devices(subject.inventory(fixture))
    rates = rate_names()
    stated = {device: {n: v for n, v in values.items() if n in rates}
              for device, values in fx.expected.metric_values.items()}
    stated = {device: values for device, values in stated.items() if values}
    second, problems = _poll_twice(subject, ref, devices)
    measured = [s for s in second if s.name in rates]
    if not measured and not stated:
        raise NotApplicable(f"{ref}: no rate on the second poll and none stated")
    where = f"{ref}, second poll"
    wrong = list(problems)
    declared = catalog_link_maxima(subject)
    sku_of = {d.id: d.sku for d in devices}
    for sample in measured:
        sku = sku_of.get(sample.device)
        if sku in declared:
            found = over_the_sku(sample, str(sku), declared[str(sku)], where)
            if found:
                wrong.append(found)
    wrong += [f"invariant rate-is-the-stated-traffic, {where}: {d}"
              for d in metric_value_differences(measured, stated, devices, fx)]
    if wrong:
        raise CheckFailed(wrong[:6])
    return (f"{ref}: {len(measured)} rates on the second poll, within their SKUs' link bandwidth"
            + (f"; {sum(len(v) for v in stated.values())} stated rates met" if stated else ""))
