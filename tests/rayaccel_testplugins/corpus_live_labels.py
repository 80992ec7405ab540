"""Corpus mutants that label the node with a live reading (issue 46, held-out round 12's ``l1``: a library bake's
``hawkmoor.example.com/busy`` from the devices' utilization at inventory time). A Ray node's labels are set once,
when it starts, so such a label is right at start and wrong a minute later. RAC201's ``a-label-is-no-live-reading``
kills both shapes: a threshold on the cards' utilization (``busy``), and a value read from the memory in use
(``free-memory-gib``); each fixture expects the label as the code gives it on acme-4, as its author believed.

Imported by tests/conformance/test_conformance_corpus.py (``corpus.MUTANT_MODULES``); each is bound here under its name
so a Ray node loads it (``c-busy-label-from-utilization`` as ``c_busy_label_from_utilization``).
"""

from __future__ import annotations

from rayaccel import FamilyInventory, Host
from rayaccel_testplugins.corpus import LABEL_PREFIX, SYSFS, Healthy, add_import_defect, read_machine, write_machine

BUSY, FREE = f"{LABEL_PREFIX}/busy", f"{LABEL_PREFIX}/free-memory-gib"


def card_reading(host: Host, index: int, name: str) -> int | None:
    """A card's sysfs reading, or None where the card has none (a machine the suite made up, with more cards)."""
    path = f"{SYSFS}/acme{index}/{name}"
    if not host.exists(path):
        return None
    text = host.read_text(path).strip()
    return int(text) if text.isdigit() else None


def expect_label(plugin: str, key: str, value: str) -> None:
    """The plugin's acme-4 expecting ``key: value`` among its labels (written atomically, once)."""
    data = read_machine(plugin)
    if data["expected"]["labels"].get(key) != value:
        data["expected"]["labels"][key] = value
        write_machine(plugin, "acme-4", data)


class BusyLabelFromUtilization(Healthy):
    DEFECT = ("the node is labelled busy=true when a card's utilization reads 50 % or more at inventory time, so a "
              "selector can prefer idle nodes: a live reading frozen into a label")
    KILLED_BY = ("RAC201", "invariant a-label-is-no-live-reading")

    def __init__(self, name: str) -> None:
        super().__init__(name)
        expect_label(name, BUSY, "false")  # acme-4's cards read 0, 10, 20 and 30 %

    def rayaccel_labels(self, host: Host, inventory: FamilyInventory) -> dict[str, str]:
        busy = [card_reading(host, d.index, "busy_percent") for d in inventory.devices]
        if not busy or None in busy:
            return self.labels(inventory)
        return {**self.labels(inventory), BUSY: "true" if any((b or 0) >= 50 for b in busy) else "false"}


class FreeMemoryLabel(Healthy):
    DEFECT = ("the node is labelled with the GiB free on its fullest card (its size less the memory in use at "
              "inventory time), so a selector can ask for room: a live reading frozen into a label")
    KILLED_BY = ("RAC201", "invariant a-label-is-no-live-reading")

    def __init__(self, name: str) -> None:
        super().__init__(name)
        expect_label(name, FREE, "60")  # 64 GiB cards, 1 to 4 GiB in use

    def rayaccel_labels(self, host: Host, inventory: FamilyInventory) -> dict[str, str]:
        free = []
        for device in inventory.devices:
            used = card_reading(host, device.index, "mem_used_mib")
            if used is None or device.memory_mib is None:
                return self.labels(inventory)
            free.append(max(device.memory_mib - used, 0) // 1024)
        return {**self.labels(inventory), **({FREE: str(min(free))} if free else {})}


for _cls in (BusyLabelFromUtilization, FreeMemoryLabel):
    _plugin = add_import_defect(_cls)
    globals()[_plugin.name.replace("-", "_")] = _plugin
