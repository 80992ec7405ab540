"""A counter metric is the device's running total: it never goes down between polls while the device's own counter
does not (RAC246, ``invariant a-counter-never-goes-down``; held-out round 13's ``s3``: a sysfs bake publishing its ECC
counters as the increase since its previous poll, so a driver counter 0, 5, 5 was published 0, 5, 0).

The SDK exports ``ecc_errors_corrected`` and ``ecc_errors_uncorrected`` as Prometheus counters
(``rayaccel_device_ecc_errors_*_total``, :data:`rayaccel.outputs.metric_series.STANDARD`), which only go down where
the counter resets; Prometheus takes any fall for a reset and ``rate()``/``increase()`` count the new value again
from zero. Every fixture's counters are static (0 on most machines), so a single build, or RAC223's scaling of
a reading that is 0, never tells a running total from an increment. The suite polls the metrics hook on one
simulated host three times: the fixture's machine, then a machine on which the device's numbers only rose (a fault
of the fixture raising error counters, the vendor's own recorded state; else each counter reading the plugin
publishes, as RAC223 attributes it, doubled), and that machine again. A counter sample must not fall from the first
poll to the second, and must be the same on the third as on the second (nothing moved between them).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rayaccel import hookspec
from rayaccel.hosts.fixtures import Fixture, HostState, apply_faults
from rayaccel.hosts.simulated import SimulatedHost
from rayaccel.outputs.metric_series import STANDARD
from rayaccel.records import Device, MetricSample
from rayaccel.simulation.host_factory import simulated_host
from rayaccel_conformance.checks.readings import candidates, host_readings, scaled_host
from rayaccel_conformance.harness.subject import Subject

INVARIANT = "invariant a-counter-never-goes-down"
#: The standard metrics the SDK exports as Prometheus counters.
COUNTER_METRICS = tuple(sorted(name for name, (family, _) in STANDARD.items() if family.kind == "counter"))
#: Faults whose machine is not the device's numbers moving: a hung or garbled tool, a device gone.
UNMEASURED_KINDS = ("tool-hang", "tool-garbage", "device-lost")


def _numbers(state: dict[str, Any]) -> dict[tuple[str, str, tuple[str | int, ...]], float]:
    return {(r.where, r.key, r.path): r.value for r in host_readings(state, zeros=True)}


def rose_only(base: dict[str, Any], moved: dict[str, Any]) -> list[str]:
    """The numbers that rose from ``base`` to ``moved`` (described), where none fell or went away; [] otherwise."""
    before, after = _numbers(base), _numbers(moved)
    if any(key not in after or after[key] < value for key, value in before.items()):
        return []
    return [f"{where} {key}{' ' + '.'.join(map(str, path)) if path else ''} {before.get((where, key, path), 0):g} "
            f"-> {value:g}" for (where, key, path), value in after.items() if value > before.get((where, key, path), 0)]


def advanced_machines(fx: Fixture, samples: Sequence[MetricSample], devices: Sequence[Device]) -> list[
        tuple[str, Fixture, list[str]]]:
    """Machines on which some of the device's numbers rose and none fell: each of the fixture's faults that does so
    (an ECC fault, errors counted), then the fixture's machine with each non-zero counter reading the plugin
    publishes doubled; (what, the machine as a fixture without faults, the numbers that rose)."""
    base = fx.host.model_dump(mode="json")
    found = []
    for fault in fx.faults:
        if fault.kind in UNMEASURED_KINDS:
            continue
        state = apply_faults(fx, [fault.name]).model_dump(mode="json")
        rose = rose_only(base, state)
        if rose:
            found.append((f"fault {fault.name}", _machine(fx, state), rose))
    by_id = {d.id: d for d in devices}
    readings = host_readings(base)
    state = base
    for sample in samples:
        device = by_id.get(sample.device)
        if sample.name not in COUNTER_METRICS or device is None or sample.value == 0:
            continue
        for reading, _ in candidates(sample, device, readings):
            state = scaled_host(state, reading, 2.0)
    rose = rose_only(base, state) if state is not base else []
    if rose:
        found.append(("the counter readings doubled", _machine(fx, state), rose))
    return found


def _machine(fx: Fixture, state: dict[str, Any]) -> Fixture:
    return fx.model_copy(update={"host": HostState.model_validate(state), "faults": []})


def _counters(subject: Subject, host: SimulatedHost, devices: Sequence[Device]) -> dict[tuple[str, str], float]:
    samples = subject.manager.answer(subject.name, hookspec.METRICS, [], host=host, devices=list(devices)) or []
    return {(s.device, s.name): s.value for s in samples if s.name in COUNTER_METRICS}


def counter_failures(subject: Subject, fx: Fixture, samples: Sequence[MetricSample],
                     devices: Sequence[Device]) -> tuple[list[str], str | None]:
    """(What is wrong, what was polled) for the counter metrics of ``samples`` over three polls of one host: the
    fixture's machine, a machine whose numbers only rose, and that machine again; (([], None) where the plugin
    publishes no counter or no machine moves one."""
    if not any(s.name in COUNTER_METRICS for s in samples):
        return [], None
    for what, machine, rose in advanced_machines(fx, samples, devices):
        host = simulated_host(fx.model_copy(update={"faults": []}))
        first = _counters(subject, host, devices)
        host.change_machine(machine)
        second = _counters(subject, host, devices)
        if second == first:
            continue  # this machine moves none of the plugin's counters: the next one
        third = _counters(subject, host, devices)
        where = f"{fx.ref}, {what} ({'; '.join(rose[:3])}{' ...' if len(rose) > 3 else ''})"
        wrong = []
        for key, value in sorted(second.items()):
            device, name = key
            if key in first and value < first[key]:
                wrong.append(f"{INVARIANT}, {where}: {name} of {device} went from {first[key]:g} to {value:g} on the "
                             "poll after the device's numbers rose, none falling: a counter is the device's running "
                             "total, never what changed since the previous poll")
            if key in third and third[key] != value:
                how = ("went down" if third[key] < value else "rose")
                wrong.append(f"{INVARIANT}, {where}: {name} of {device} {how} from {value:g} to {third[key]:g} on the "
                             "next poll of the same machine, where nothing moved: a counter is the device's running "
                             "total (Prometheus takes a fall for a reset and counts it again), never the increase "
                             "since the previous poll or a sum of the polls; publish the vendor's counter as it stands")
        return wrong, f"{what}: {len(second)} counter samples, 3 polls"
    return [], None
