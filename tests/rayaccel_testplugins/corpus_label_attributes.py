"""Corpus mutants labelling the node with a device fact read from somewhere other than the devices' own records
(held-out round 18's ``e2``: Neuron's ``logical-nc-config`` label read from ``NEURON_LOGICAL_NC_CONFIG``, ``1`` where
it is unset, while every device runs LNC 2 as neuron-ls states). Each fixture expects the code's label, so only
RAC201's ``a-label-agrees-with-its-devices`` kills them. Two shapes: each card's compute mode read from the driver's
``compute_mode`` file, the label from an operator's variable with a default; each card's memory mode read from
``acme-smi config --json``, the label the product sheet's default, a constant.

Imported by tests/conformance/test_conformance_corpus.py (``corpus.MUTANT_MODULES``); each is bound here under its
name (``c-mode-label-from-variable`` as ``c_mode_label_from_variable``) so a Ray node loads it by
``RAYACCEL_PLUGINS``.
"""

from __future__ import annotations

import json

from rayaccel import Device, FamilyInventory, Host
from rayaccel_testplugins.corpus import SYSFS, Healthy, add_import_defect, read_machine, tool_output, write_machine

MODE_MACHINE = "acme-4-compute-mode"
CONFIG_MACHINE = "acme-4-memory-mode"
CONFIG_ARGV = ("acme-smi", "config", "--json")
#: The operator's variable the first shape labels the compute mode from, and what it takes where it is unset.
MODE_VARIABLE, MODE_DEFAULT = "ACME_COMPUTE_MODE", "exclusive"
#: The product sheet's memory mode, which the second shape labels whatever the cards run.
SHEET_MEMORY_MODE = "flat"


def _ids(data: dict[str, object]) -> list[str]:
    files = data["host"]["files"]  # type: ignore[index]
    return [files[f"{SYSFS}/acme{i}/uuid"].strip() for i in range(4)]


class ModeLabelFromVariable(Healthy):
    DEFECT = (f"the compute-mode label read from {MODE_VARIABLE} ('{MODE_DEFAULT}' where it is unset), while each "
              "card's compute_mode attribute is its driver file's 'shared': a task selected by the label lands on "
              "shared cards")
    KILLED_BY = ("RAC201", "invariant a-label-agrees-with-its-devices")
    LABEL = "acme.example.com/compute-mode"

    def __init__(self, name: str) -> None:
        super().__init__(name)
        data = read_machine(name)
        data["name"], data["description"] = MODE_MACHINE, f"{data['description']}, cards in shared compute mode"
        data["host"]["files"].update({f"{SYSFS}/acme{i}/compute_mode": "shared\n" for i in range(4)})
        data["expected"]["labels"][self.LABEL] = MODE_DEFAULT
        write_machine(name, MODE_MACHINE, data)

    def rayaccel_discover(self, host: Host) -> list[Device]:
        devices = []
        for device in super().rayaccel_discover(host):
            path = f"{SYSFS}/acme{device.index}/compute_mode"
            mode = host.read_text(path).strip() if host.exists(path) else ""
            if mode:  # an empty file states no mode: left unknown
                device = device.model_copy(update={"attributes": {**device.attributes, "compute_mode": mode}})
            devices.append(device)
        return devices

    def rayaccel_labels(self, host: Host, inventory: FamilyInventory) -> dict[str, str]:
        moded = any("compute_mode" in d.attributes for d in inventory.devices)
        mode = host.getenv(MODE_VARIABLE) or MODE_DEFAULT  # the defect: the devices say what they run
        return {**self.labels(inventory), **({self.LABEL: mode} if moded else {})}


class MemoryModeLabelFromSheet(Healthy):
    DEFECT = (f"the memory-mode label the product sheet's default ('{SHEET_MEMORY_MODE}'), while acme-smi states each "
              "card's memory_mode 'cache', which its attribute holds")
    KILLED_BY = ("RAC201", "invariant a-label-agrees-with-its-devices")
    LABEL = "acme.example.com/memory-mode"

    def __init__(self, name: str) -> None:
        super().__init__(name)
        data = read_machine(name)
        data["name"], data["description"] = CONFIG_MACHINE, f"{data['description']}, acme-smi config --json"
        records = [{"uuid": card, "memory_mode": "cache"} for card in _ids(data)]
        data["host"]["commands"] = {**(data["host"].get("commands") or {}),
                                    " ".join(CONFIG_ARGV): {"stdout": json.dumps(records) + "\n", "returncode": 0}}
        data["expected"]["labels"][self.LABEL] = SHEET_MEMORY_MODE
        write_machine(name, CONFIG_MACHINE, data)

    def rayaccel_discover(self, host: Host) -> list[Device]:
        devices = super().rayaccel_discover(host)
        try:
            records = {str(r["uuid"]): r for r in json.loads(tool_output(host, CONFIG_ARGV) or "")}
        except (ValueError, KeyError, TypeError):
            return devices
        return [d.model_copy(update={"attributes": {**d.attributes, "memory_mode": str(records[d.id]["memory_mode"])}})
                if d.id in records else d for d in devices]

    def rayaccel_labels(self, host: Host, inventory: FamilyInventory) -> dict[str, str]:
        moded = any("memory_mode" in d.attributes for d in inventory.devices)
        return {**self.labels(inventory), **({self.LABEL: SHEET_MEMORY_MODE} if moded else {})}  # the defect


for _cls in (ModeLabelFromVariable, MemoryModeLabelFromSheet):
    _plugin = add_import_defect(_cls)
    globals()[_plugin.name.replace("-", "_")] = _plugin
