"""Rewrite a fixture's recorded NVML answers so its GPUs are of another SKU (day-zero onboarding).

Identity is rewritten as a whole, in the host and in each fault's patch, so that no field of the base
SKU is left to win SKU resolution (which matches the PCI id before the name):

- name (and the MIG devices' names, which start with it);
- PCI device id: the SKU's first; when it has none, ``0xffff`` (what PCI reads for "no device": never a
  catalogued id), so the GPU resolves by its name;
- memory, when the SKU gives it;
- architecture, when the SKU gives it: NVML's architecture enum and the compute capability become that
  architecture's; for one the plugin does not know yet both are left out, so the GPU reports no
  architecture and the catalog's holds.
"""

from __future__ import annotations

import copy
from typing import Any

from rayaccel import SkuRecord
from rayaccel_nvidia.naming import _ARCH_BY_CC, ARCHITECTURES, architecture

NVIDIA_VENDOR_ID = 0x10DE
#: A PCI device id no SKU is catalogued under: PCI config space reads all ones where there is no device.
NO_DEVICE_ID = 0xFFFF


def fixture_for_sku(fixture: dict[str, Any], sku: SkuRecord) -> dict[str, Any]:
    """Every identity field of every GPU becomes the SKU's (see the module docstring)."""
    data = copy.deepcopy(fixture)
    recorded = (data.get("host") or {}).get("libraries", {}).get("nvml")
    if not isinstance(recorded, dict):
        raise ValueError("the fixture has no host.libraries.nvml data to rewrite")
    states = [recorded, *[((f.get("patch") or {}).get("libraries") or {}).get("nvml") or {}
                          for f in data.get("faults") or [] if isinstance(f, dict)]]
    for state in states:
        for device in (state.get("devices") or {}).values() if isinstance(state, dict) else []:
            if isinstance(device, dict):
                _rewrite_device(device, sku)
    return data


def _rewrite_device(device: dict[str, Any], sku: SkuRecord) -> None:
    name = sku.match.product_names[0] if sku.match.product_names else sku.marketing_name
    old_name = str(device.get("name", ""))
    if "name" in device or old_name:
        device["name"] = name
    if "name" in device or "pci" in device:
        pci_id = int(sku.match.pci_device_ids[0], 16) if sku.match.pci_device_ids else NO_DEVICE_ID
        device.setdefault("pci", {})["pciDeviceId"] = pci_id << 16 | NVIDIA_VENDOR_ID
    if sku.memory_mib is not None and isinstance(device.get("memory"), dict):
        memory = device["memory"]
        total = sku.memory_mib * 2**20
        used = min(int(memory.get("used", 0)), total)
        memory.update({"total": total, "used": used, "free": total - used})
    if sku.architecture is not None:
        _rewrite_architecture(device, sku.architecture)
    for mig in (device.get("mig_devices") or {}).values():
        if old_name and isinstance(mig, dict) and str(mig.get("name", "")).startswith(old_name):
            mig["name"] = name + str(mig["name"])[len(old_name):]


def _rewrite_architecture(device: dict[str, Any], arch: str) -> None:
    enum, cc = device.get("architecture"), device.get("compute_capability")
    current = architecture(int(enum) if isinstance(enum, int) else None,
                           (int(cc[0]), int(cc[1])) if isinstance(cc, list) and len(cc) == 2 else None)
    if current == arch or ("architecture" not in device and "compute_capability" not in device):
        return
    enums = [e for e, name in ARCHITECTURES.items() if name == arch]
    ccs = [c for c, name in _ARCH_BY_CC.items() if name == arch]
    for key, values in (("architecture", enums), ("compute_capability", [list(c) for c in ccs])):
        if values:
            device[key] = values[0]
        else:
            device.pop(key, None)
