"""Corpus mutants found by grading a third batch of held-out broken plugins (issue 46, lane D: RAC266, RAC267): a
PCI address in a form that names no function, and a link's bandwidth that does not follow the link's own
reading, each right on the fixture as recorded, two shapes each (neither the held-out plugin's own).

Imported by tests/conformance/test_conformance_corpus.py (``corpus.MUTANT_MODULES``); each is bound here under
its name so a Ray node or a fresh process loads it (``c-pci-address-xorg-bus-id`` as ``c_pci_address_xorg_bus_id``).
"""

from __future__ import annotations

from rayaccel import Device, Host, Link, Topology
from rayaccel_testplugins import acme
from rayaccel_testplugins.corpus import SYSFS, Healthy, add_import_defect

# A PCI address names one function (RAC266) ---------------------------------------------------------------------


class PciAddressXorgBusId(Healthy):
    DEFECT = ("the PCI address is written as X.org's BusID (PCI:<bus>:<device>:<function>, decimal), the form the "
              "author's display tooling used, instead of sysfs' hex domain:bus:device.function")
    KILLED_BY = ("RAC266", "X.org's BusID")

    def device(self, host: Host, path: str, driver: str | None) -> Device:
        device = super().device(host, path, driver)
        _domain, bus, slot = (device.pci_bus_id or "0000:00:00.0").split(":")
        number, function = slot.split(".")
        return device.model_copy(update={"pci_bus_id": f"PCI:{int(bus, 16)}:{int(number, 16)}:{function}"})


class PciAddressWithoutFunction(Healthy):
    DEFECT = ("the PCI address is cut before its function ('0000:10:00'): the author's cards are single-function, "
              "so '.0' was dropped as noise")
    KILLED_BY = ("RAC266", "the function (.N) is missing")

    def device(self, host: Host, path: str, driver: str | None) -> Device:
        device = super().device(host, path, driver)
        return device.model_copy(update={"pci_bus_id": (device.pci_bus_id or "").rsplit(".", 1)[0] or None})


# A link's bandwidth follows the link's own reading (RAC267) ---------------------------------------------------


class LinkSpeedOfFirstPeer(Healthy):
    DEFECT = ("each card's links all take the bandwidth of that card's first link file (the author's boards wire "
              "every peer at one speed), so a link's own file is never read")
    KILLED_BY = ("RAC267", "invariant link-follows-its-reading")

    def rayaccel_topology(self, host: Host, devices: list[Device]) -> Topology:
        by_uuid = {d.id: d for d in devices}
        links = []
        for device in devices:
            base = f"{SYSFS}/acme{device.index}/links"
            peers = sorted(host.list_dir(base)) if host.is_dir(base) else []
            speed = acme._number(host, f"{base}/{peers[0]}") if peers else None
            links += [Link(a=device.id, b=peer, kind="other", bandwidth_gbps=float(speed)) for peer in peers
                      if peer in by_uuid and device.id < peer and speed is not None]
        return Topology(links=links)


_SPEEDS: dict[tuple[str, str], float] = {}


class LinkSpeedCachedPerPair(Healthy):
    DEFECT = ("each link's bandwidth is read once per process and kept by its pair of device ids (a link's speed "
              "'never changes'): a link retrained at another speed keeps the old one")
    KILLED_BY = ("RAC267", "one reading or a cached value stands for this link")

    def rayaccel_topology(self, host: Host, devices: list[Device]) -> Topology:
        fresh = acme.rayaccel_topology(host, devices)
        return Topology(links=[link.model_copy(update={"bandwidth_gbps": _SPEEDS.setdefault(
            (link.a, link.b), link.bandwidth_gbps or 0.0)}) for link in fresh.links])


for _cls in (PciAddressXorgBusId, PciAddressWithoutFunction, LinkSpeedOfFirstPeer, LinkSpeedCachedPerPair):
    _plugin = add_import_defect(_cls)
    globals()[_plugin.name.replace("-", "_")] = _plugin
