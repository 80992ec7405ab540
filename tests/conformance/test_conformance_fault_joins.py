"""Held-out grading, round 9 (issue 46, lane Y): a fault that lands on another device names the join.

The Gaudi wrapper ``g2`` read each module's driver status from ``/sys/class/accel/accel<N>`` as hl-smi's device N;
the driver probes modules asynchronously, so ``accel2`` is the module at index 3 and its status landed on index 2.
RAC203 and RAC211 said only that (expected unhealthy, got healthy; another module was not touched, yet changed).
:func:`fault_joins.landed_elsewhere` names the record the fault changes, the field in it that names the device the
fault touches (its PCI address), and the other device's index as the number the record's place carries.
"""

from __future__ import annotations

from mutant_grading import evidence, failure, mutant

from rayaccel.plugins.manager import PluginManager
from rayaccel_conformance.checks.fault_joins import landed_elsewhere
from rayaccel_conformance.harness.subject import Subject
from rayaccel_testplugins.corpus_fault_joins import MACHINE, StatusByAddress, StatusByListPosition

JOIN = ("the plugin joins the record to a device by that number (an enumeration order the driver need not keep) "
        "instead of by the PCI address the record gives")
CARD0, CARD1 = "ACME-0000-5e1f-4c2a-9d3b-000000000000", "ACME-0001-5e1f-4c2a-9d3b-000000000001"


def test_a_listing_record_joined_by_position_names_the_join() -> None:
    """Another shape than g2's sysfs directory: a JSON list of a tool's records, taken by position."""
    plugin = mutant(StatusByListPosition)
    for check in ("RAC203", "RAC211"):
        said = failure(plugin, check, MACHINE)
        assert (f"fault halted-1: `acme-smi status --json` output cards.0 is {CARD1}'s record (its pci_bus_id holds "
                "its PCI address 0000:") in said, said
        assert f"yet {CARD1} stays healthy and {CARD0} goes from healthy to unhealthy: {CARD0}'s index is 0" in said
        assert JOIN in said, said


def test_the_record_joined_by_its_address_passes() -> None:
    right = StatusByAddress("c-status-by-address")
    assert "halted-1" in evidence(right, "RAC211", MACHINE)
    evidence(right, "RAC203", MACHINE)  # raises CheckFailed if the control's fault goes wrong


def test_gaudi_status_read_by_accel_number_names_the_join() -> None:
    """g2's shape on the Gaudi fixture whose accel2 is the module at index 3: its fault ``module-needs-reset``
    answered on index 2 instead (the build g2 gave), the touched module left healthy."""
    subject = Subject("gaudi", PluginManager(autoload=True))
    fx = subject.fixture("gaudi/hls-gaudi3")
    healthy = subject.inventory("gaudi/hls-gaudi3").family("gaudi")
    assert healthy is not None
    fault = fx.fault("module-needs-reset")
    touched = next(iter(fault.expected.health))
    index_2 = next(d.id for d in healthy.devices if d.index == 2)
    answered = [h.model_copy(update={"state": "unhealthy"}) if h.device == index_2 else h for h in healthy.health]
    faulty = healthy.model_copy(update={"health": answered})
    said = landed_elsewhere(fx, fault, healthy, faulty)
    assert said == [
        f"fault module-needs-reset: directory /sys/class/accel/accel2/device is {touched}'s record (its pci_addr "
        f"holds its PCI address 0000:4e:00.0); the fault changes its status, yet {touched} stays healthy and "
        f"{index_2} goes from healthy to unhealthy: {index_2}'s index is 2, the number the record's place carries: "
        + JOIN], said
    # The plugin answering on the module the record names: nothing to name.
    right = [h.model_copy(update={"state": "unhealthy"}) if h.device == touched else h for h in healthy.health]
    assert landed_elsewhere(fx, fault, healthy, healthy.model_copy(update={"health": right})) == []
