"""RAC246 (supported tier): a rate (bytes per second) is measured between two polls of one host, and on a busy
machine it is the traffic the fixture states, one direction, within what the device's SKU declares its links carry.

Every other check builds an inventory once, and a rate needs two samples of a counter, so a rate in the wrong unit
(a KiB counter's delta reported as bytes), both directions summed or counted in bits was never compared with
anything. A rate above the SKU's bandwidth is said with its ratio to it; a cause only where the ratio names one
(exactly 8: bits for bytes?), for the SKU's figure is a ceiling, not the rate due (held-out round 17's c1: three
links' ratings summed, 3x the ceiling, once guessed as bits counted for bytes). The suite polls the metrics hook
twice on one simulated host (the simulated library advances a counter recorded on a busy machine at its recorded
rate, as the real one does) and compares each rate with the fixture's
``expected.metric_values`` and with the SKU's ``link_bandwidth_gbytes_per_s``. Then one device's counters reset
under the open session (a driver reload, a GPU reset, a wrap: :meth:`SimulatedHost.change_machine`) and a third
poll may give that device no rate computed across the reset.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from rayaccel import hookspec
from rayaccel.hosts.fixtures import Fixture, HostState
from rayaccel.hosts.simulated import SimulatedHost
from rayaccel.records import STANDARD_METRICS, Device, MetricSample, Problem
from rayaccel.simulation.host_factory import simulated_host
from rayaccel_conformance.checks.counter_polls import counter_failures
from rayaccel_conformance.checks.failed_queries import stale_failures
from rayaccel_conformance.checks.invariants import KIND_MAX_GBYTES_PER_S, catalog_link_maxima
from rayaccel_conformance.checks.rate_directions import direction_failures
from rayaccel_conformance.checks.supported import metric_value_differences
from rayaccel_conformance.checks.value_relations import RATIO_TOLERANCE
from rayaccel_conformance.harness.subject import Subject
from rayaccel_conformance.registry import CheckFailed, Evidence, NotApplicable, check

#: The least time between the two polls: a counter's advance over it is thousands of its units, so a rate
#: read from it is exact to well within the 1% a stated value is compared with.
MIN_INTERVAL_S = 0.05
#: How far above the SKU's declared bandwidth a rate may read (a timestamp's jitter).
HEADROOM = 1.05
#: Bits per byte: a rate exactly this many times the SKU's bandwidth is the one ratio over it that names a cause.
BITS_PER_BYTE = 8


def rate_names() -> set[str]:
    return {name for name, unit in STANDARD_METRICS.items() if unit == "bytes_per_second"}


def _poll(subject: Subject, host: SimulatedHost, devices: Sequence[Device],
          problems: list[Problem]) -> list[MetricSample]:
    samples: list[MetricSample] = subject.manager.answer(subject.name, hookspec.METRICS, problems, host=host,
                                                         devices=list(devices))
    return list(samples or [])


def _wait_interval() -> None:
    started = time.monotonic()
    while time.monotonic() - started < MIN_INTERVAL_S:  # the interval is the measurement: a rate over it
        time.sleep(MIN_INTERVAL_S / 5)


def _poll_twice(subject: Subject, host: SimulatedHost,
                devices: Sequence[Device]) -> tuple[list[MetricSample], list[str]]:
    """The second of two polls of one host, at least :data:`MIN_INTERVAL_S` apart, and the problems of both."""
    problems: list[Problem] = []
    _poll(subject, host, devices, problems)
    _wait_interval()
    second = _poll(subject, host, devices, problems)
    return second, [p.render() for p in problems]


def reset_counters(fx: Fixture, device: Device) -> tuple[Fixture, list[str]]:
    """The fixture with every non-zero number of ``device``'s own on the host (its readings as RAC223 finds them: in
    files, a library's data, a command's JSON or CSV) made 0, as a device's counters read after a reset; and what
    was reset. The SDK cannot tell a counter from its other numbers, so it resets them all: only rates are judged."""
    from rayaccel_conformance.checks.readings import host_readings, owned_by, with_reading

    state = fx.host.model_dump(mode="json")
    own = [r for r in host_readings(state) if owned_by(r, device)]
    for reading in own:
        state = with_reading(state, reading, lambda _old: "0", lambda old: 0 if isinstance(old, int) else 0.0)
    variant = fx.model_copy(update={"host": HostState.model_validate(state), "faults": []})
    return variant, [r.describe() for r in own]


def across_a_reset(sample: MetricSample, limit: float | None, where: str) -> str | None:
    """What is wrong with a rate of the reset device on the poll after its counters reset (None: nothing); without
    a bandwidth its SKU declares, the fastest link product of any kind bounds it."""
    ceiling, whose = (limit, "its SKU declares") if limit is not None else (
        max(KIND_MAX_GBYTES_PER_S.values()), "the fastest link product of any kind carries")
    if sample.value >= 0 and sample.value <= ceiling * 1e9 * HEADROOM:
        return None
    how = ("negative: the counter's fall was taken for traffic" if sample.value < 0 else
           f"more than the {ceiling:g} GB/s {whose}: a counter that went down was taken for a wrap, or its fall's "
           "size for traffic")
    return (f"invariant no-rate-across-a-counter-reset, {where}: {sample.name} of {sample.device} is "
            f"{sample.value:g} bytes/s, {how}; a counter below its previous sample has reset (a driver reload, a GPU "
            "reset): give no rate for that poll and measure from the new sample")


def over_the_sku(sample: MetricSample, sku: str, gbytes_per_s: float, where: str) -> str | None:
    """What is wrong with a rate against its device's SKU's declared link bandwidth (one direction, all links)."""
    limit = gbytes_per_s * 1e9
    if sample.value <= limit * HEADROOM:
        return None
    # The ratio is what the numbers establish; the SKU's figure is a ceiling, so only a ratio of exactly 8 (bits per
    # byte) points to a cause, and even that one is asked, not told.
    ratio = sample.value / limit
    if abs(ratio - BITS_PER_BYTE) <= RATIO_TOLERANCE * BITS_PER_BYTE:
        times = f"{BITS_PER_BYTE}x that: bits counted for bytes? divide by 8"
    elif abs(ratio - 2) <= RATIO_TOLERANCE * 2:
        times = "twice that"
    else:
        times = f"{ratio:.3g}x that"
    return (f"invariant rate-within-the-sku-bandwidth, {where}: {sample.name} of {sample.device} is "
            f"{sample.value:g} bytes/s, more than the {gbytes_per_s:g} GB/s one direction SKU {sku} declares its links "
            f"carry (link_bandwidth_gbytes_per_s): {times}")


@check("RAC246", scope="fixture")
def rates_between_two_polls(subject: Subject, fixture: str | None) -> Evidence:
    """A rate measured between two polls of one host is the traffic the fixture states, one direction, within
    the bandwidth the device's SKU declares.

    The suite polls ``rayaccel_metrics`` twice on one simulated host, at least 50 ms apart (a simulated library
    advances a counter recorded on a busy machine at its recorded rate, as NVML's NVLink throughput counters
    advance). Each rate on the second poll (``interconnect_tx``, ``interconnect_rx``: bytes per second) must
    be at most the fastest link bandwidth the device's SKU declares (``link_bandwidth_gbytes_per_s``, one
    direction of all its links; `invariant rate-within-the-sku-bandwidth`, saying the rate's ratio to it, and at
    exactly eight times asking whether bits were counted for bytes), and equal, within 1%, the rate the fixture states
    (``expected.metric_values``; `invariant rate-is-the-stated-traffic`, naming a KiB counter's delta read as
    bytes, and a power of 1000 as the time between the samples in the wrong unit, or a decimal size step where the
    machine's recorded counters, by their stamps and advance, leave one); a rate the fixture states that the second
    poll lacks was never computed. A rate moves with its own direction's counter and only with it (``invariant
    a-rate-follows-its-own-counter``, :mod:`rate_directions`): on the middle device with a rate, the readings the
    machine names for one direction (NVML's field ids 138 TX, 139 RX; a counter's own name, ``tx_bytes``) advanced
    alone between two polls may not move the other direction's rate, and a rate equal to a reading named for no
    direction (a link's rated speed) may not move with it doubled alone. Then the counters of one
    device with a rate (the middle one) reset under the process: every non-zero number of its own on the host
    (found as RAC223 finds readings) is made 0 while the library sessions the plugin holds stay open and answer
    the new values (``SimulatedHost.change_machine``, as a driver reload or a GPU reset does to NVML's
    counters), and a third poll may give that device no negative rate and none above its SKU's bandwidth
    (without one, above the fastest link product of any kind; `invariant no-rate-across-a-counter-reset`: a
    counter's fall taken for traffic, or for a wrap; a negative rate a range check refused is named too). A counter
    metric (``ecc_errors_corrected``, ``ecc_errors_uncorrected``: the SDK exports them as Prometheus counters) is
    polled three times on one host: the fixture's machine, a machine on which the device's numbers only rose (a fault
    of the fixture raising them, else each counter reading the plugin publishes doubled) and that machine again; it
    may not fall from the first poll to the second, nor change from the second to the third (``invariant
    a-counter-never-goes-down``: a counter published as the increase, or the errors per second, since the previous
    poll falls back to 0, which Prometheus takes for a reset). A gauge (utilization, temperature, power, memory) is
    polled on one host after two histories, the fixture's machine and that machine with the gauge readings of one
    query scaled, then with that query failing (its command exiting 1, its library raising on every call): the
    failing poll's gauges must be the same after either (``invariant a-failed-query-gives-no-reading``: a value kept
    from an earlier poll and published as current when the query fails). Not applicable where the second poll gives
    no rate, the fixture states none, no machine moves a counter the plugin publishes and no gauge is read from a
    command or a library. Fix: a query that fails gives no sample this poll (report it), never the last reading;
    publish an error counter as the device's running total, as the vendor counts it; keep each counter's
    previous sample per device (and per library session), divide the counter's advance by the time between the
    samples' timestamps, and convert it from the counter's unit (NVML's NVLink counters are KiB: x 1024) to
    bytes; report one direction, each from its own counter (never a link's rated speed); when a counter is below
    its previous sample it has reset: give no rate for that poll and measure from the new sample.
    """
    subject.family()
    fx = subject.fixture(fixture)
    ref = fx.ref
    devices = subject.devices(subject.inventory(fixture))
    rates = rate_names()
    stated = {device: {n: v for n, v in values.items() if n in rates}
              for device, values in fx.expected.metric_values.items()}
    stated = {device: values for device, values in stated.items() if values}
    fam = subject.inventory(fixture).family(subject.family().name)
    counter_wrong, counted = counter_failures(subject, fx, fam.metrics if fam else [], devices)
    stale_wrong, failed = stale_failures(subject, fx, fam.metrics if fam else [], devices)
    counter_wrong += stale_wrong
    failed_polled = f"; gauges polled over {failed}, none kept from an earlier poll" if failed else ""
    host = simulated_host(fx)
    second, problems = _poll_twice(subject, host, devices)
    measured = [s for s in second if s.name in rates]
    if not measured and not stated:
        if counter_wrong:
            raise CheckFailed(counter_wrong[:6])
        if counted is None and failed is None:
            raise NotApplicable(f"{ref}: no rate on the second poll and none stated; no counter a machine moves; no "
                                "gauge read from a command or a library")
        return (f"{ref}: no rate on the second poll and none stated"
                + (f"; counters polled over {counted}, none going down" if counted else "") + failed_polled)
    where = f"{ref}, second poll"
    wrong = [*counter_wrong, *problems]
    declared = catalog_link_maxima(subject)
    sku_of = {d.id: d.sku for d in devices}
    for sample in measured:
        sku = sku_of.get(sample.device)
        if sku in declared:
            found = over_the_sku(sample, str(sku), declared[str(sku)], where)
            if found:
                wrong.append(found)
    # Before the stated traffic: a rate following the wrong counter names its cause, the comparison only the symptom.
    crossed, directions = direction_failures(subject, fx, devices, measured, _wait_interval)
    wrong += crossed
    wrong += [f"invariant rate-is-the-stated-traffic, {where}: {d}"
              for d in metric_value_differences(measured, stated, devices, fx)]
    reset = ""
    with_rates = [d for d in devices if any(s.device == d.id for s in measured)]
    if with_rates:
        device = with_rates[len(with_rates) // 2]
        variant, zeroed = reset_counters(fx, device)
        host.change_machine(variant)
        _wait_interval()
        after: list[Problem] = []
        third = [s for s in _poll(subject, host, devices, after) if s.name in rates]
        where = f"{ref}, {device.id}'s counters reset between two polls ({len(zeroed)} numbers made 0)"
        limit = declared.get(str(device.sku)) if device.sku is not None else None
        wrong += [found for s in third if s.device == device.id and (found := across_a_reset(s, limit, where))]
        # A rate computed across the reset and refused by a range check (the SDK's vendor_float) is no sample but
        # a warning naming the rate: the computation is the defect, whoever refused its result.
        wrong += [f"invariant no-rate-across-a-counter-reset, {where}: the poll after the reset reports "
                  f"{p.render()!r}: a rate was computed across the reset (the counter's fall taken for traffic) "
                  "and refused only by a range check; a counter below its previous sample has reset: give no rate "
                  "for that poll" for p in after if p.severity in ("error", "warning")
                  and any(name in p.message for name in rates)]
        wrong += [f"invariant no-rate-across-a-counter-reset, {where}: {s.name} of {s.device} is {s.value:g} bytes/s, "
                  "negative" for s in third if s.device != device.id and s.value < 0]
        reset = f"; no rate across a reset of {device.id}'s counters"
    if wrong:
        raise CheckFailed(wrong[:6])
    return (f"{ref}: {len(measured)} rates on the second poll, within their SKUs' link bandwidth"
            + (f"; {sum(len(v) for v in stated.values())} stated rates met" if stated else "") + directions + reset
            + (f"; counters polled over {counted}, none going down" if counted else "") + failed_polled)
