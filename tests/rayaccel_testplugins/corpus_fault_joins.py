"""A corpus mutant that joins a vendor tool's per-card record to a device by the record's place in the listing, not
by the PCI address the record gives (issue 46, held-out round 9's ``g2``: Gaudi's driver status read from
``accel<N>`` as hl-smi's index N, a sysfs directory's number; here another shape, a JSON list's position).

Its machine (``acme-4-status``): acme-4 with ``acme-smi status --json`` listing each card's PCI address and state
in the order the driver finished probing them (card 1 first: cards probe asynchronously, as habanalabs' do), and a
fault ``halted-1`` that halts card 1, whose record is the list's first. The right reader
(:class:`StatusByAddress`, the healthy control's tests) matches each record by its ``pci_bus_id``; the mutant takes
the n-th record for the card of index n, so card 1's halt lands on card 0 (RAC203, RAC211).
"""

from __future__ import annotations

import json
from typing import Any

from rayaccel import Device, HealthReport, Host
from rayaccel.records import HealthReason
from rayaccel_testplugins.corpus import SYSFS, Healthy, add_import_defect, read_machine, tool_output, write_machine

STATUS = ("acme-smi", "status", "--json")
MACHINE = "acme-4-status"
#: The order the driver finished probing the cards in: the listing's order.
PROBED = (1, 0, 2, 3)


def _status_output(files: dict[str, str], halted: int | None = None) -> str:
    cards = [{"pci_bus_id": files[f"{SYSFS}/acme{i}/pci_bus_id"].strip(), "state": "halted" if i == halted else "ok"}
             for i in PROBED]
    return json.dumps({"driver": "1.4.2", "cards": cards}, indent=1) + "\n"


def _add_status_machine(plugin: str) -> None:
    data: dict[str, Any] = read_machine(plugin)
    files = data["host"]["files"]
    uuid = files[f"{SYSFS}/acme1/uuid"].strip()
    data["name"], data["description"] = MACHINE, f"{data['description']}, acme-smi status listing in probe order"
    command = " ".join(STATUS)
    data["host"]["commands"] = {**(data["host"].get("commands") or {}), command: {"stdout": _status_output(files)}}
    data["faults"] = [{
        "name": "halted-1", "description": "acme-smi status reports card 1 (listed first) halted",
        "kind": "fatal-error",
        "patch": {"commands": {command: {"stdout": _status_output(files, halted=1)}}},
        "expected": {"reasons": {uuid: ["acme-halted"]}, "health": {uuid: "unhealthy"}, "fatal": True,
                     "resources": {k: (v - 1.0 if not k.startswith("accelerator_type") else v)
                                   for k, v in data["expected"]["resources"].items()}}}]
    data["perturbations"] = []
    write_machine(plugin, MACHINE, data)


def _cards(host: Host) -> list[dict[str, Any]]:
    stdout = tool_output(host, STATUS)
    cards: list[dict[str, Any]] = json.loads(stdout)["cards"] if stdout else []
    return cards


def _with_halts(reports: list[HealthReport], records: dict[str, dict[str, Any]]) -> list[HealthReport]:
    """Each report, a card whose status record says halted made unhealthy (fatal)."""
    return [HealthReport(device=r.device, state="unhealthy", reasons=[
        HealthReason(code="acme-halted", message="acme-smi status: halted", fatal=True)])
        if records.get(r.device, {}).get("state") == "halted" else r for r in reports]


class StatusByAddress(Healthy):
    """Each card's state from the acme-smi status record naming its PCI address (the right reader)."""

    def __init__(self, name: str) -> None:
        super().__init__(name)
        _add_status_machine(name)

    def rayaccel_health(self, host: Host, devices: list[Device]) -> list[HealthReport]:
        by_address = {str(card.get("pci_bus_id", "")).lower(): card for card in _cards(host)}
        records = {d.id: by_address[(d.pci_bus_id or "").lower()] for d in devices
                   if (d.pci_bus_id or "").lower() in by_address}
        return _with_halts(super().rayaccel_health(host, devices), records)


class StatusByListPosition(Healthy):
    DEFECT = ("acme-smi status's n-th record taken for the card of index n ('listed in index order'), not matched by "
              "its pci_bus_id: the driver lists cards in the order they finished probing, so a halt lands on another")
    KILLED_BY = ("RAC203", "the number the record's place carries")

    def __init__(self, name: str) -> None:
        super().__init__(name)
        _add_status_machine(name)

    def rayaccel_health(self, host: Host, devices: list[Device]) -> list[HealthReport]:
        cards = _cards(host)
        # the defect: the list's position where the record's own pci_bus_id is meant
        records = {d.id: cards[d.index] for d in devices if d.index < len(cards)}
        return _with_halts(super().rayaccel_health(host, devices), records)


plugin = add_import_defect(StatusByListPosition)
c_status_by_list_position = plugin
