"""``rayaccel sku add`` for Neuron: a fixture's devices made the new SKU's."""

from __future__ import annotations

import copy
import json
from typing import Any

from rayaccel import SkuRecord
from rayaccel_neuron import neuronls


def rewrite_fixture(fixture: dict[str, Any], sku: SkuRecord) -> dict[str, Any]:
    """Make the fixture's devices the SKU's: neuron-ls memory_size, sysfs device_name, PCI device id."""
    data = copy.deepcopy(fixture)
    host = data.setdefault("host", {})
    files: dict[str, str] = host.setdefault("files", {})
    for command in host.get("commands", {}).values():
        try:
            entries = json.loads(command.get("stdout", ""))
        except (json.JSONDecodeError, TypeError):
            continue
        # Before Neuron 2.34 a device list; from 2.34 an object holding it (see neuronls.DEVICE_LIST_KEYS).
        listed = entries if isinstance(entries, list) else next(
            (entries[k] for k in neuronls.DEVICE_LIST_KEYS if isinstance(entries.get(k), list)), None) \
            if isinstance(entries, dict) else None
        if listed is not None and sku.memory_mib:
            for entry in listed:
                if isinstance(entry, dict):
                    entry["memory_size"] = sku.memory_mib * 2**20
            command["stdout"] = json.dumps(entries, indent=4) + "\n"
    name = sku.match.product_names[0] if sku.match.product_names else sku.marketing_name
    pci_id = sku.match.pci_device_ids[0].lower() if sku.match.pci_device_ids else None
    for path in list(files):
        if path.endswith("/info/architecture/device_name"):
            files[path] = name + "\n"
        elif path.startswith("/sys/bus/pci/devices/") and path.endswith("/device"):
            if pci_id:
                files[path] = pci_id + "\n"
            else:
                del files[path]
    return data
