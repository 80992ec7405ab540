"""A device's PCI address is written in the form that names one PCI function (supported tier, issue 46): RAC266.

``pci_bus_id`` is how every consumer finds the device's function: sysfs (``/sys/bus/pci/devices/<address>``),
NVML and amd-smi (the same address, NVML with an 8-digit domain), Kubernetes DRA's ``pciBusID`` attribute, the
NUMA and device-file lookups. Each writes it ``domain:bus:device.function`` in hex. A plugin that copies
lspci's short form (no domain), a path, X.org's decimal ``PCI:16:0:0`` or an address cut before its function
is self-consistent on its fixtures, yet the value names no function, or an ambiguous one on machines with
several PCI domains (a GB200 tray's GPUs sit in domains 0008, 0009, 0018, 0019).
"""

from __future__ import annotations

import re

from rayaccel_conformance.harness.subject import Subject
from rayaccel_conformance.registry import CheckFailed, Evidence, NotApplicable, check

#: domain (4 hex digits as sysfs writes it, 8 as NVML does) : bus : device . function, hex in either case.
PCI_ADDRESS = re.compile(r"^[0-9a-fA-F]{4}(?:[0-9a-fA-F]{4})?:[0-9a-fA-F]{2}:[0-1][0-9a-fA-F]\.[0-7]$")


def address_problem(address: str) -> str | None:
    """Why ``address`` is not a PCI function's address (None when it is one)."""
    if PCI_ADDRESS.match(address):
        return None
    text = address.strip()
    if text != address:
        return "it carries whitespace around the address"
    if "/" in text:
        return "it is a path, not an address (its last part may be one)"
    if re.fullmatch(r"[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]", text):
        return "the PCI domain is missing (lspci's short form): on a machine with several domains it is ambiguous"
    if re.fullmatch(r"(?:[0-9a-fA-F]{4,8}:)?[0-9a-fA-F]{2}:[0-9a-fA-F]{2}", text):
        return "the function (.N) is missing: a multi-function device's functions are told apart by it"
    if text.upper().startswith("PCI:"):
        return "it is X.org's BusID (decimal bus:device:function), not the hex address sysfs and the tools write"
    return "it is not domain:bus:device.function in hex"


@check("RAC266", scope="fixture")
def pci_address_names_one_function(subject: Subject, fixture: str | None) -> Evidence:
    """Every device's PCI address is written domain:bus:device.function, the form that names one PCI function.

    For each device the plugin discovers on the fixture, ``pci_bus_id`` (where it reports one) must be the
    address as sysfs and the vendor tools write it: a 4-digit (sysfs) or 8-digit (NVML) hex domain, a 2-digit
    bus, a device below 0x20 and a function 0-7, ``0000:3b:00.0`` (hex in either case). ``invariant
    pci-address-names-one-function`` fails naming the device, the value and what is wrong with it: the domain
    missing (lspci's short form, ambiguous on machines with several PCI domains), the function missing, a path,
    X.org's decimal ``PCI:59:0:0``, whitespace. Not applicable where no device reports a PCI address (TPU VMs
    without one, a vendor with none). Fix: read the address from sysfs (the device's directory name under
    ``/sys/bus/pci/devices``) or from the tool's full form (``nvidia-smi --query-gpu=pci.bus_id``,
    ``lspci -D``), and record it as written there.
    """
    family = subject.family()
    fx = subject.fixture(fixture)
    fam = subject.inventory(fixture).family(family.name)
    addressed = [d for d in (fam.devices if fam is not None else []) if d.pci_bus_id is not None]
    if not addressed:
        raise NotApplicable(f"{fx.ref}: no device reports a PCI address")
    wrong = [f"invariant pci-address-names-one-function, {fx.ref}: device {d.id} has pci_bus_id {d.pci_bus_id!r}: "
             f"{problem}" for d in addressed if (problem := address_problem(d.pci_bus_id or ""))]
    if wrong:
        raise CheckFailed(wrong[:6] + ([f"... {len(wrong) - 6} more devices"] if len(wrong) > 6 else []))
    return f"{fx.ref}: the {len(addressed)} devices' PCI addresses each name one function (domain:bus:device.function)"
