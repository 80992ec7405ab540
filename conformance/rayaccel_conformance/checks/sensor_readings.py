"""One sensor that cannot be read costs its reading, not the device (supported tier, issue 46): RAC268.

RAC233 damages the readings a device's metrics come from and requires the metric to go; what the device's
health does meanwhile is no metric's business, and a plugin that drains a device because one sensor answers
nonsense (any live field N/A taken for a dead device, a thermal sensor that does not parse taken for an
overheat) passes it. A power, temperature, utilization or memory reading is a measurement, not a health signal:
a device whose only fault is that one of them cannot be read still computes.
"""

from __future__ import annotations

from typing import Any

from rayaccel.hosts.fixtures import HostState
from rayaccel.records import Device, FamilyInventory, HealthReport
from rayaccel.simulation.host_factory import simulated_host
from rayaccel_conformance.checks.damaged_readings import GARBAGE, garbled_host
from rayaccel_conformance.checks.readings import Reading, candidates, device_with_samples, host_readings, owned_by
from rayaccel_conformance.harness.subject import Subject
from rayaccel_conformance.registry import CheckFailed, Evidence, NotApplicable, check

#: Measurements: what they read says how busy, hot or full a device is, never whether it works. Error counters
#: (ecc_errors_*) are health signals too, RAC250's.
MEASUREMENTS = ("power", "temperature", "utilization", "memory_used", "memory_total")
MAX_READINGS = 8


def _report(family: FamilyInventory | None, device: Device) -> HealthReport | None:
    return next((r for r in (family.health if family is not None else []) if r.device == device.id), None)


def sensor_readings(host: dict[str, Any], family: FamilyInventory, device: Device) -> list[tuple[Reading, str]]:
    """The device's own readings its measurement samples come from, each with the metric it feeds; a reading
    that also feeds an error counter is left out."""
    own = [r for r in host_readings(host) if owned_by(r, device)]
    signals = {r for s in family.metrics if s.device == device.id and s.name not in MEASUREMENTS
               for r, _ in candidates(s, device, own)}
    found: dict[Reading, str] = {}
    for sample in family.metrics:
        if sample.device == device.id and sample.name in MEASUREMENTS and sample.value:
            for reading, _ in candidates(sample, device, own):
                if reading not in signals:
                    found.setdefault(reading, sample.name)
    return list(found.items())[:MAX_READINGS]


@check("RAC268", scope="fixture")
def unreadable_sensor_costs_its_reading(subject: Subject, fixture: str | None) -> Evidence:
    """A device whose power, temperature, utilization or memory reading cannot be read keeps its health: one
    sensor that answers nonsense costs that reading, not the device.

    The suite takes the readings the middle device's measurement samples come from (power, temperature,
    utilization, memory used and total, found among the device's own numbers on the host as RAC223 finds them:
    a file under a path naming it, a value in a library's data or a command's JSON keyed by its index, a cell of
    a command's CSV row naming it; a reading that also gives an error counter is a health signal, RAC250's, and
    left out) and makes each, in turn, garbage text, as a sensor or a tool answering nonsense does. Where the
    device is still discovered, it must be no worse than on the fixture: not unhealthy, no fatal reason
    (``invariant unreadable-sensor-costs-its-reading``, naming the fixture, the reading, the metric it feeds,
    and the state and reasons the device got). Unknown or degraded is accepted (a plugin may say it cannot see
    everything). Not applicable where no measurement of the device is attributed to one of its readings. Fix:
    judge health by the vendor's health signals (error counters, the driver's state, every field gone at
    once), and leave one unreadable measurement out of the metrics with a problem naming it.
    """
    family = subject.family()
    fx = subject.fixture(fixture)
    fam, device = device_with_samples(fx.ref, subject.build(simulated_host(fx)).family(family.name))
    before = _report(fam, device)
    if before is not None and (before.state == "unhealthy" or any(r.fatal for r in before.reasons)):
        raise NotApplicable(f"{fx.ref}: {device.id} is unhealthy on the fixture already")
    host = fx.host.model_dump(mode="json")
    chosen = sensor_readings(host, fam, device)
    if not chosen:
        raise NotApplicable(f"{fx.ref}: no measurement of {device.id} is attributed to one of its readings")
    wrong = []
    for reading, metric in chosen:
        variant = fx.model_copy(update={"host": HostState.model_validate(garbled_host(host, reading)), "faults": []})
        after = subject.build(simulated_host(variant)).family(family.name)
        if after is None or all(d.id != device.id for d in after.devices):
            continue  # the device is gone: discovery's matter (RAC211, RAC233), not its health's
        report = _report(after, device)
        if report is not None and (report.state == "unhealthy" or any(r.fatal for r in report.reasons)):
            reasons = ", ".join(f"{r.code}{' (fatal)' if r.fatal else ''}" for r in report.reasons) or "no reason"
            wrong.append(f"invariant unreadable-sensor-costs-its-reading, {fx.ref}: {device.id}'s {metric} reading "
                         f"made {GARBAGE!r} and the device went {before.state if before else 'unreported'} -> "
                         f"{report.state} ({reasons}): one measurement that cannot be read is not a device that "
                         f"fails (the reading: {reading.describe()})")
    if wrong:
        raise CheckFailed(wrong[:6])
    return (f"{fx.ref}: {len(chosen)} measurement readings of {device.id} made garbage in turn: its health held "
            f"({', '.join(sorted({m for _, m in chosen}))})")
