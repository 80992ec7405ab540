"""A value the vendor answers as not supported is unknown (supported tier, issue 46): RAC271.

Every fixture records a machine whose every query answers, so a plugin's "not supported" path (NVML's
``NVML_ERROR_NOT_SUPPORTED``, amdsmi's ``AMDSMI_STATUS_NOT_SUPPORTED``, a tool's ``N/A``) ran on no fixture:
taken for a lost device, for an unhealthy one, or for 0, it passed. Unlike RAC233 and RAC268 (garbage, which a
plugin should report), "not supported" is an ordinary answer: an older driver, a VM, a product without the
sensor. The SDK cannot produce a vendor's error, but it knows how each place a reading lives says "not
supported" in the vendor's own way: a library's data without the value (the simulated libraries answer a value
missing from their data as the vendor's not-supported status, as the real ones do for a query the device
lacks), ``N/A`` in a tool's JSON or CSV output, a sysfs attribute the driver does not create. Each helper is pure.
"""

from __future__ import annotations

import json
import re
from typing import Any

from rayaccel.hosts.fixtures import HostState
from rayaccel.records import Device, FamilyDeclaration, FamilyInventory, HealthReport
from rayaccel.simulation.host_factory import simulated_host
from rayaccel_conformance.checks.readings import (
    Reading,
    candidates,
    device_with_samples,
    host_readings,
    owned_by,
    samples_by_device,
    with_reading,
)
from rayaccel_conformance.harness.subject import Subject
from rayaccel_conformance.registry import CheckFailed, Evidence, NotApplicable, check

#: What vendor tools print in place of a value they cannot give (amd-smi, hl-smi, neuron-monitor; nvidia-smi
#: writes ``[N/A]``, which a plugin reading its CSV meets as the same word).
NOT_AVAILABLE = "N/A"
#: Metrics that restate a fact of the device record (its size) rather than a live value: not perturbed.
STATIC_METRICS = ("memory_total",)
#: Readings made "not supported" per fixture: those feeding the device's metrics, one variant (one build) each.
MAX_READINGS = 6


#: A reason row about a "not supported" answer (NVML_ERROR_NOT_SUPPORTED, AMDSMI_STATUS_NOT_SUPPORTED, ...).
_NOT_SUPPORTED = re.compile(r"not[ _-]supported", re.IGNORECASE)


def not_supported_reasons_that_drain(family: FamilyDeclaration) -> list[str]:
    """Rows of the declared reason table for a not-supported answer that put the device unhealthy or drain it."""
    return [f"invariant not-supported-is-not-a-lost-device: health_reasons declares {row.code!r} ({row.meaning!r}) "
            f"{row.state}{', fatal' if row.fatal else ''}: a query the device answers as not supported is not a device "
            "that stopped answering; such an answer leaves the value unknown (and the device healthy)"
            for row in family.health_reasons or []
            if (row.state == "unhealthy" or row.fatal) and (_NOT_SUPPORTED.search(row.code)
                                                             or _NOT_SUPPORTED.search(row.meaning))]


def _device_key_at(path: tuple[str | int, ...], index: int) -> int | None:
    """Where in a library's data path the device's own entry is (the first key equal to its index), if any."""
    return next((i for i, p in enumerate(path) if (isinstance(p, int) or str(p).isdigit()) and int(p) == index),
                None)


def unsupported_host(host: dict[str, Any], reading: Reading, device: Device) -> tuple[dict[str, Any], str] | None:
    """The host state with ``reading`` answered "not supported" as its place says it, and how; None where its place
    has no such answer (a library value that is the device's entry itself, a list position)."""
    state: dict[str, Any] = json.loads(json.dumps(host))
    if reading.where == "file":
        del state["files"][reading.key]
        return state, f"file {reading.key} absent (the driver does not create it)"
    if reading.where == "library":
        at = _device_key_at(reading.path, device.index)
        if at is None or at + 1 >= len(reading.path):
            return None
        inner = state["libraries"][reading.key]
        for step in reading.path[:at + 1]:
            inner = inner[step]
        field = reading.path[at + 1]
        if not isinstance(inner, dict):
            return None
        del inner[field]
        where = ".".join(str(p) for p in reading.path[:at + 2])
        return state, f"library {reading.key} {where} absent (the library answers the query as not supported)"
    variant = with_reading(state, reading, lambda _old: NOT_AVAILABLE, lambda _old: NOT_AVAILABLE)
    return variant, f"{reading.describe()} printed {NOT_AVAILABLE!r}"


def _report(family: FamilyInventory | None, device: Device) -> HealthReport | None:
    return next((r for r in (family.health if family is not None else []) if r.device == device.id), None)


def _worse(before: HealthReport | None, after: HealthReport | None) -> str | None:
    """How the device's health got worse (unhealthy or a fatal reason it did not have), or None."""
    if after is None:
        return None
    fatal = sorted({r.code for r in after.reasons if r.fatal} - {r.code for r in (before.reasons if before else [])
                                                                 if r.fatal})
    if (after.state == "unhealthy" and (before is None or before.state != "unhealthy")) or fatal:
        reasons = ", ".join(f"{r.code}{' (fatal)' if r.fatal else ''}" for r in after.reasons) or "no reason"
        return f"{before.state if before else 'unreported'} -> {after.state} ({reasons})"
    return None


@check("RAC271", scope="fixture")
def unsupported_value_is_unknown(subject: Subject, fixture: str | None) -> Evidence:
    """A value the vendor answers as not supported is unknown: the device keeps its health and its other values,
    and the value is absent, never 0.

    The suite takes the readings the middle device's live metric samples come from (found among the device's own
    numbers on the host as RAC223 finds them, up to six; ``memory_total`` restates the device's size, which
    discovery reads too, and is left out) and answers each, in turn, as "not supported" the way its
    place says it: a library's data without that field of the device's entry (the simulated libraries answer a
    value missing from their data with the vendor's not-supported status: ``NVML_ERROR_NOT_SUPPORTED``,
    ``AMDSMI_STATUS_NOT_SUPPORTED``), ``N/A`` in place of the number in a tool's JSON or CSV output, a sysfs
    attribute absent. No hook may raise; the device must still be discovered, neither unhealthy nor with a fatal
    reason it did not have (``invariant not-supported-is-not-a-lost-device``); the samples that reading gave must
    be gone or, where another reading gives them, unchanged: never 0 or another number
    (``invariant not-supported-is-unknown``); no other device's sample may move; where a tool's output or a file
    answered, the device keeps every sample other readings give (``invariant not-supported-takes-only-its-value``:
    one cell printed ``N/A`` leaves the rest of its row readable). Each failure names the fixture,
    the reading and how it was answered. The plugin's declared reason table (``health_reasons``) may hold no row
    for a not-supported answer (its code or meaning saying "not supported") that is unhealthy or fatal: a tool that
    prints a query's status in place of its value (amd-smi of ROCm 6.0 prints the library's error text,
    ``AMDSMI_STATUS_NOT_SUPPORTED - ...``, for any failed query) reaches that row on a machine no fixture
    records. Not applicable where no metric of the device is attributed to one of its readings. Fix: take the
    vendor's not-supported answer (the status code, ``N/A``, a missing attribute) for "this value is unknown":
    leave the sample out, and keep health to the vendor's health signals.
    """
    family = subject.family()
    declared = not_supported_reasons_that_drain(family)
    if declared:
        raise CheckFailed(declared)
    fx = subject.fixture(fixture)
    fam, device = device_with_samples(fx.ref, subject.inventory(fixture).family(family.name))
    host = fx.host.model_dump(mode="json")
    own = [r for r in host_readings(host) if owned_by(r, device)]
    fed: dict[Reading, set[str]] = {}
    for sample in fam.metrics:
        # memory_total is the device's size, a fact discovery reads too (its memory_mib): not a live value a query
        # may answer as not supported while the device is whole.
        if sample.device == device.id and sample.value != 0 and sample.name not in STATIC_METRICS:
            for reading, _ in candidates(sample, device, own):
                fed.setdefault(reading, set()).add(sample.name)
    before_report = _report(fam, device)
    before = samples_by_device(fam)
    wrong: list[str] = []
    tried: list[str] = []
    for reading, names in list(fed.items()):
        if len(tried) == MAX_READINGS:
            break
        answered = unsupported_host(host, reading, device)
        if answered is None:
            continue
        state, how = answered
        tried.append(how)
        variant = fx.model_copy(update={"host": HostState.model_validate(state), "faults": []})
        built = subject.build(simulated_host(variant))
        after_fam = built.family(family.name)
        where = f"{fx.ref} with {device.id}'s {', '.join(sorted(names))} reading not supported: {how}"
        raised = [p for p in subject.plugin_problems(built, severities=("error", "warning")) if p.code == "hook-raised"]
        wrong += [f"invariant not-supported-is-unknown, {where}: {p.hook or 'a hook'} raised: {p.message}"
                  for p in raised]
        if after_fam is None or all(d.id != device.id for d in after_fam.devices):
            wrong += subject.blamed(built, [f"invariant not-supported-is-not-a-lost-device, {where}: {device.id} is no "
                                            "longer discovered: a value the device does not offer is not a device "
                                            "gone"], "")
            continue
        worse = _worse(before_report, _report(after_fam, device))
        if worse:
            wrong.append(f"invariant not-supported-is-not-a-lost-device, {where}: {device.id} went {worse}: a query "
                         "answered as not supported is not a device that stopped answering; keep health to the "
                         "vendor's health signals")
        after = samples_by_device(after_fam)
        for name in sorted(names):
            now, was = after.get((device.id, name)), before.get((device.id, name))
            if now is not None and now != was:
                wrong.append(f"invariant not-supported-is-unknown, {where}: {name} of {device.id} is {now:g} (was "
                             f"{was:g}): a value the vendor does not give is unknown; leave the sample out"
                             + (" (0 is a reading, not 'not supported')" if now == 0 else ""))
        # A tool's output or a file answers each value alone, so the device's other samples stay; a library's query
        # may answer several at once as not supported (NVML's memory info: used, free and total).
        kept = sorted(n for (d, n) in before if d == device.id and n not in names and (d, n) not in after)
        if kept and reading.where != "library":
            wrong.append(f"invariant not-supported-takes-only-its-value, {where}: {device.id} lost {', '.join(kept)} "
                         "too, which other readings give: one value the vendor does not give leaves the rest of its "
                         "record (a CSV row, a JSON object) readable; leave that one sample out and keep the others")
        moved = [f"{n} of {d} from {v:g} to {after.get((d, n))}" for (d, n), v in before.items()
                 if d != device.id and (d, n) in after and after[(d, n)] != v]
        if moved:
            wrong.append(f"invariant not-supported-is-unknown, {where}: another device's {moved[0]} ({len(moved)} "
                         "in all): a reading feeds only its own device")
    if wrong:
        raise CheckFailed(sorted(set(wrong), key=wrong.index)[:6])
    if not tried:
        raise NotApplicable(f"{fx.ref}: no metric of {device.id} is attributed to one of its readings")
    return (f"{fx.ref}: {len(tried)} readings of {device.id} answered as not supported in turn: the device kept its "
            "health, the values went unknown")
