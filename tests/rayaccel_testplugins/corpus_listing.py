"""Corpus mutants that take a device's index from its row's position in the vendor tool's listing, not from the
row's own index field (issue 46, held-out round 5's ``zorder``): right on every fixture, whose tools list the
devices in index order, wrong on a machine whose tool lists them otherwise (RAC226). Two shapes: a JSON list of
records enumerated, matched by uuid, and a CSV table's row number, matched by PCI address.

Each mutant reads its tool on a machine of its own (``acme-4-list``: acme-4 with the tool installed, listing the
four cards in index order, each row with its index); the healthy reader would take the row's ``index`` field.
Imported by tests/conformance/test_conformance_corpus.py (``corpus.MUTANT_MODULES``); each is bound here under
its name (``c-index-from-json-position`` as ``c_index_from_json_position``) so a Ray node loads it by
``RAYACCEL_PLUGINS``.
"""

from __future__ import annotations

import json

from rayaccel import Device, Host
from rayaccel_testplugins.corpus import SYSFS, Healthy, add_import_defect, read_machine, tool_output, write_machine

LIST_JSON = ("acme-smi", "list", "--json")
LIST_CSV = ("acme-smi", "--query-cards=index,uuid,pci.bus_id", "--format=csv")


def _add_listing_machine(plugin: str, command: tuple[str, ...], render: str) -> None:
    """The plugin's acme-4 machine with ``command`` installed, listing the cards in index order (``render``:
    ``json`` or ``csv``)."""
    data = read_machine(plugin)
    files = data["host"]["files"]
    cards = [{"index": i, "uuid": files[f"{SYSFS}/acme{i}/uuid"].strip(),
              "pci_bus_id": files[f"{SYSFS}/acme{i}/pci_bus_id"].strip()} for i in range(4)]
    if render == "json":
        stdout = json.dumps({"driver": "1.4.2", "cards": cards}, indent=1) + "\n"
    else:
        stdout = "".join(f"{c['index']}, {c['uuid']}, {c['pci_bus_id']}\n" for c in cards)
        stdout = "index, uuid, pci.bus_id\n" + stdout
    data["name"], data["description"] = "acme-4-list", f"{data['description']}, the cards listed by acme-smi"
    data["host"]["commands"] = {**(data["host"].get("commands") or {}), " ".join(command): {"stdout": stdout}}
    write_machine(plugin, "acme-4-list", data)


def _reindexed(devices: list[Device], position: dict[str, int], key: str) -> list[Device]:
    moved = [d.model_copy(update={"index": position.get(str(getattr(d, key)), d.index)}) for d in devices]
    return sorted(moved, key=lambda d: d.index)


class IndexFromJsonPosition(Healthy):
    DEFECT = ("a card's index is its position in acme-smi's JSON list of cards ('listed in index order'), not the "
              "record's index field: a tool listing the cards in another order gives each another card's index")
    KILLED_BY = ("RAC226", "invariant reordered-listing-keeps-the-devices")

    def __init__(self, name: str) -> None:
        super().__init__(name)
        _add_listing_machine(name, LIST_JSON, "json")

    def rayaccel_discover(self, host: Host) -> list[Device]:
        devices = Healthy.rayaccel_discover(self, host)
        stdout = tool_output(host, LIST_JSON)
        try:
            cards = json.loads(stdout)["cards"] if stdout else []
        except (ValueError, KeyError, TypeError):
            return devices
        # the defect: enumerate() where the record's own "index" is meant
        return _reindexed(devices, {str(card.get("uuid")): n for n, card in enumerate(cards)}, "id")


class IndexFromCsvRow(Healthy):
    DEFECT = ("a card's index is its row number in acme-smi's CSV (header skipped), matched by PCI address, not the "
              "row's index column: a tool listing the cards in another order gives each another card's index")
    KILLED_BY = ("RAC226", "invariant reordered-listing-keeps-the-devices")

    def __init__(self, name: str) -> None:
        super().__init__(name)
        _add_listing_machine(name, LIST_CSV, "csv")

    def rayaccel_discover(self, host: Host) -> list[Device]:
        devices = Healthy.rayaccel_discover(self, host)
        stdout = tool_output(host, LIST_CSV)
        rows = [[field.strip() for field in line.split(",")] for line in (stdout or "").splitlines()[1:] if line]
        # the defect: the row number where the row's "index" column is meant
        return _reindexed(devices, {row[2]: n for n, row in enumerate(rows) if len(row) > 2}, "pci_bus_id")


for _cls in (IndexFromJsonPosition, IndexFromCsvRow):
    _plugin = add_import_defect(_cls)
    globals()[_plugin.name.replace("-", "_")] = _plugin
