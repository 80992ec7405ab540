"""Rewrite a fixture's recorded NVML answers so its GPUs are of another SKU (day-zero onboarding)."""

from __future__ import annotations

import copy
from typing import Any

from rayaccel import SkuRecord

NVIDIA_VENDOR_ID = 0x10DE


def fixture_for_sku(fixture: dict[str, Any], sku: SkuRecord) -> dict[str, Any]:
    """Name, PCI device id and memory of every GPU (and its MIG devices' names) become the SKU's."""
    data = copy.deepcopy(fixture)
    recorded = data.get("host", {}).get("libraries", {}).get("nvml")
    if not isinstance(recorded, dict):
        raise ValueError("the fixture has no host.libraries.nvml data to rewrite")
    name = sku.match.product_names[0] if sku.match.product_names else sku.marketing_name
    for device in (recorded.get("devices") or {}).values():
        old_name = str(device.get("name", ""))
        device["name"] = name
        if sku.match.pci_device_ids:
            device.setdefault("pci", {})["pciDeviceId"] = int(sku.match.pci_device_ids[0], 16) << 16 | NVIDIA_VENDOR_ID
        if sku.memory_mib is not None:
            memory = device.setdefault("memory", {})
            total = sku.memory_mib * 2**20
            used = min(int(memory.get("used", 0)), total)
            memory.update({"total": total, "used": used, "free": total - used})
        for mig in (device.get("mig_devices") or {}).values():
            if old_name and str(mig.get("name", "")).startswith(old_name):
                mig["name"] = name + str(mig["name"])[len(old_name):]
    return data
