"""Rewrite a fixture so its chips are of another SKU (``rayaccel sku add`` writes day-zero fixtures with it): the
PCI device ids in sysfs, the generation in the pod type, and each chip's HBM in the device plugin's scrape."""

from __future__ import annotations

import copy
import re
from typing import Any

from rayaccel import SkuRecord
from rayaccel_tpu import probe, slice_info

_UEVENT_PCI_ID = re.compile(r"(?m)^PCI_ID=1AE0:[0-9A-Fa-f]{4}$")
#: A memory_total sample of the GKE TPU device plugin's Prometheus text (the chip's HBM, bytes).
_MEMORY_TOTAL = re.compile(r"(?m)^(memory_total(?:\{[^}]*\})?) \S+$")


def rewrite_fixture(fixture: dict[str, Any], sku: SkuRecord) -> dict[str, Any]:
    """Point the fixture's chips at the SKU: PCI device ids in sysfs, the generation in the pod type, and the HBM
    the device plugin's scrape reports per chip (memory in use is left as recorded)."""
    data = copy.deepcopy(fixture)
    host = data.setdefault("host", {})
    files: dict[str, str] = host.setdefault("files", {})
    pci_id = sku.match.pci_device_ids[0].lower() if sku.match.pci_device_ids else None
    for path in list(files):
        if path.endswith("/uevent") and path.startswith("/sys/class/accel/"):
            if pci_id:
                files[path] = _UEVENT_PCI_ID.sub(f"PCI_ID=1AE0:{pci_id[2:].upper()}", files[path])
            else:
                files[path] = _UEVENT_PCI_ID.sub("", files[path])
        elif path.startswith("/sys/kernel/iommu_groups/") and path.endswith("/vendor"):
            if files[path].strip().lower() != probe.GOOGLE_PCI_VENDOR:
                continue
            device_file = path.removesuffix("/vendor") + "/device"
            if pci_id:
                files[device_file] = pci_id + "\n"
            else:
                files.pop(device_file, None)
    generation = sku.accelerator_type.removeprefix("TPU-").lower()
    if sku.accelerator_type.startswith("TPU-") and generation:
        env: dict[str, str] = host.setdefault("env", {})
        if slice_info.ENV_POD_TYPE in env:
            env[slice_info.ENV_POD_TYPE] = _with_generation(env[slice_info.ENV_POD_TYPE], generation)
        for url, answer in host.get("http", {}).items():
            if url.endswith("/" + slice_info.KEY_POD_TYPE) and isinstance(answer, dict) and "body" in answer:
                answer["body"] = _with_generation(answer["body"], generation)
    for url, answer in host.get("http", {}).items():
        if url.endswith("/metrics") and sku.memory_mib and isinstance(answer, dict) and "body" in answer:
            answer["body"] = _MEMORY_TOTAL.sub(rf"\g<1> {sku.memory_mib * 2**20}", answer["body"])
    return data


def _with_generation(pod_type: str, generation: str) -> str:
    size = pod_type.rsplit("-", 1)[-1]
    return f"{generation}-{size}" if size.isdigit() else pod_type
