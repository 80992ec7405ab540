"""Per-device answers on every layout of a fixture, not only the one it was recorded in (supported tier, issue 46):
RAC241.

RAC221 (labels and resources free of the devices' order) and RAC223 (a scaled reading moves its own device's
metric) hold on the layout the fixture was recorded in, where every device is alike and the driver lists them
in index order. A resource named for the first device's size, or metrics paired with devices by position in
two different orders, agree with every such invariant there and break on the first machine whose devices
differ or whose driver lists them otherwise. This check runs both invariants again on each variant of the
machine the fixture declares (its perturbations: reordered, changed, lost devices) and on its entries
renumbered as RAC224 renumbers them.
"""

from __future__ import annotations

from rayaccel.hosts.fixtures import Fixture, HostState
from rayaccel.records import Device, FamilyInventory
from rayaccel.simulation.host_factory import simulated_host
from rayaccel_conformance.checks.contract import scaled_reading_failures
from rayaccel_conformance.checks.invariants import raw_memory
from rayaccel_conformance.checks.readings import SCALED_METRICS, candidates, chosen_device, host_readings
from rayaccel_conformance.checks.renumbering import (
    entry_renamer,
    names_devices_outside_files,
    numbered_prefix,
    renumbered_host,
)
from rayaccel_conformance.checks.supported import perturbed
from rayaccel_conformance.harness.subject import Subject
from rayaccel_conformance.registry import CheckFailed, Evidence, NotApplicable, check


def other_layouts(fx: Fixture, devices: list[Device]) -> list[tuple[str, Fixture]]:
    """(what, variant) for each layout of the machine besides the recorded one: the fixture's perturbations, and
    its devices' entries renumbered (where RAC224 can renumber them)."""
    found = [(f"perturbation {p.name} ({p.kind})", perturbed(fx, p.patch)) for p in fx.perturbations]
    host = fx.host.model_dump(mode="json")
    prefix = numbered_prefix(host.get("files") or {}, devices)
    if prefix is not None and devices and not names_devices_outside_files(host, devices):
        indexes = sorted(d.index for d in devices)
        renumbered = renumbered_host(host, entry_renamer(prefix, indexes))
        found.append((f"{prefix}{indexes[0]}..{prefix}{indexes[-1]} renumbered {prefix}{10 + len(indexes) - 1}.."
                      f"{prefix}10", fx.model_copy(update={"host": HostState.model_validate(renumbered),
                                                           "faults": []})))
    return found


def foreign_readings(recorded: Fixture, base: FamilyInventory, variant: Fixture, fam: FamilyInventory) -> list[str]:
    """Metrics that one of the device's own readings gave on the recorded layout and none gives on this one: the
    plugin read them from another device's entry (the one at the device's old place in some listing)."""
    base_readings, readings = host_readings(recorded.host.model_dump(mode="json")), host_readings(
        variant.host.model_dump(mode="json"))
    before = {d.id: d for d in base.devices}
    recorded_samples = {(s.device, s.name): s for s in base.metrics}
    wrong = []
    for device in fam.devices:
        for sample in (s for s in fam.metrics if s.device == device.id and s.name in SCALED_METRICS and s.value):
            old = recorded_samples.get((device.id, sample.name))
            if device.id not in before or old is None or not old.value or not candidates(old, before[device.id],
                                                                                         base_readings):
                continue
            if not candidates(sample, device, readings):
                own = [r for r, _ in candidates(old, before[device.id], base_readings)][:1]
                wrong.append(f"invariant metric-read-from-its-own-device: {sample.name} of {device.id} (index "
                             f"{device.index}) is {sample.value:g}, which none of its own readings gives (on the "
                             f"recorded layout its {own[0].describe() if own else 'own reading'} gave it): read "
                             "from another device's entry")
    return wrong


@check("RAC241", scope="fixture")
def device_answers_hold_on_every_layout(subject: Subject, fixture: str | None) -> Evidence:
    """On every layout of the machine a fixture gives (its perturbations, its entries renumbered), labels and
    resources stay free of the devices' order and a scaled reading moves only its own device's metric.

    A fixture records one layout, usually of identical devices listed in index order, where a resource named
    after the first device's memory, or metric readings paired with devices by position, cannot be told from
    right ones. For each perturbation the fixture declares (devices reordered, changed, lost) and for its
    devices' entries renumbered in reverse from 10 (as RAC224 does, where it applies), the suite builds the
    inventory of that layout and holds it to RAC221 (hypothesis draws orders of its devices:
    ``rayaccel_resources`` and ``rayaccel_labels`` must answer alike for each) and to RAC223 (one reading of
    the middle device scaled at the host seam moves that device's metric by exactly that factor, and no
    other device's); and a metric one of a device's own readings gave on the recorded layout must be given
    by one of its own readings on this one too (else it was read from another device's entry). A failure
    names the invariant, the fixture and the layout, with the values. Fix: name and count resources from
    every device (a size resource counts only the devices of that size), and read each device's metrics
    from its own entry, found by its id or index, never by its position in a listing.
    """
    family = subject.family()
    fx = subject.fixture(fixture)
    base = subject.inventory(fixture).family(family.name)
    layouts = other_layouts(fx, list(base.devices) if base is not None else [])
    if not layouts:
        raise NotApplicable(f"{fx.ref}: no perturbation declared and no entries to renumber: one layout")
    from rayaccel_conformance.checks.properties import order_failures  # hypothesis: loaded by the check

    raw = raw_memory(subject, fx.ref)
    wrong, done = [], []
    for what, variant in layouts:
        host = simulated_host(variant)
        built = subject.build(host)
        fam = built.family(family.name)
        if fam is None or subject.plugin_problems(built, ("rayaccel_discover",), ("error",)):
            continue  # discovery failing on a layout is RAC210's, RAC211's and RAC224's to name
        where = f"{fx.ref} with {what}"
        found = order_failures(subject, host, fam) if len(fam.devices) > 1 else []
        wrong += [f"{where}: {w}" for w in found]
        wrong += [f"{where}: {w}" for w in foreign_readings(fx, base, variant, fam)] if base is not None else []
        device = chosen_device(fam)
        if device is not None:
            failures, _moved, _unattributed = scaled_reading_failures(subject, variant, fam, device, raw)
            wrong += [f.replace(f"{fx.ref} with", f"{where}, with", 1) for f in failures]
        done.append(what)
    if wrong:
        raise CheckFailed(sorted(set(wrong), key=wrong.index)[:6])
    if not done:
        raise NotApplicable(f"{fx.ref}: no layout besides the recorded one left a discovery to check")
    return f"{fx.ref}: order-free labels and resources, metrics that follow their readings on {', '.join(done)}"
