"""RAC223's ``an-error-is-counted-once`` (issue 46, held-out round 14's ``c3``): an ECC error is corrected or it
is not, so it is counted in one class. Under a fault of the fixture that only raises numbers (the vendor's
recorded state of errors counted), the device's ECC counter metrics together rise by no more than the machine's
numbers rose: a plugin publishing ``ecc_errors_corrected`` as corrected plus uncorrected ("every error the ECC
logic saw") counts each uncorrectable error twice, once in each class. Every fixture's counters are 0 and a
scaling of 0 leaves 0, so only a fault raising a counter shows it; no expectation is read.
"""

from __future__ import annotations

from rayaccel.hosts.fixtures import Fixture, apply_faults
from rayaccel.records import FamilyInventory
from rayaccel.simulation.host_factory import simulated_host
from rayaccel_conformance.checks.counter_polls import COUNTER_METRICS, UNMEASURED_KINDS, rose_only
from rayaccel_conformance.checks.fault_readings import _numbers_only
from rayaccel_conformance.checks.readings import host_readings
from rayaccel_conformance.harness.subject import Subject

INVARIANT = "invariant an-error-is-counted-once"


def _total_rise(base: dict[str, object], moved: dict[str, object]) -> float:
    """How much the machine's numbers rose in all, from ``base`` to ``moved`` (none fell: see ``rose_only``)."""
    before = {(r.where, r.key, r.path): r.value for r in host_readings(base, zeros=True)}
    return sum(r.value - before.get((r.where, r.key, r.path), 0.0)
               for r in host_readings(moved, zeros=True) if r.value > before.get((r.where, r.key, r.path), 0.0))


def errors_counted_twice(subject: Subject, fx: Fixture, fam: FamilyInventory) -> list[str]:
    """Under each fault of ``fx`` that raises numbers alone and lowers none, the family's ECC counter samples must
    not rise, all together, by more than the machine's numbers rose: one error counted in both classes (or twice
    in one) is named with the fault, what it raised and each counter's rise."""
    if not any(s.name in COUNTER_METRICS for s in fam.metrics):
        return []
    family = subject.family().name
    base = fx.host.model_dump(mode="json")
    before = {(s.device, s.name): s.value for s in fam.metrics if s.name in COUNTER_METRICS}
    wrong: list[str] = []
    for fault in fx.faults:
        if fault.kind in UNMEASURED_KINDS:
            continue
        faulty = apply_faults(fx, [fault.name]).model_dump(mode="json")
        rose = rose_only(base, faulty) if _numbers_only(base, faulty) else []
        if not rose:
            continue
        built = subject.build(simulated_host(fx, [fault.name])).family(family)
        after = {(s.device, s.name): s.value for s in (built.metrics if built else []) if s.name in COUNTER_METRICS}
        rises = {key: after[key] - value for key, value in before.items() if key in after and after[key] > value}
        machine = _total_rise(base, faulty)
        if sum(rises.values()) <= machine + 1e-9:
            continue
        counted = ", ".join(f"{name} of {device} {before[(device, name)]:g} -> {after[(device, name)]:g}"
                            for (device, name) in sorted(rises))
        wrong.append(f"{INVARIANT}, {fx.ref} under fault {fault.name}: the machine's numbers rose by {machine:g} in "
                     f"all ({'; '.join(rose[:3])}{' ...' if len(rose) > 3 else ''}), yet the ECC counters rose by "
                     f"{sum(rises.values()):g} ({counted}): an error is corrected or it is not, counted once, in "
                     "its own class; publish ecc_errors_corrected from the corrected counters alone and "
                     "ecc_errors_uncorrected from the uncorrected ones alone, each the vendor's running total")
    return wrong
