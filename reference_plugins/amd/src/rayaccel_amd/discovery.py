"""GPU records -> rayaccel Device records."""

from __future__ import annotations

from functools import partial

from rayaccel import Device
from rayaccel.records import ID_FALLBACK
from rayaccel.reporting import record_or_report
from rayaccel_amd.products import pci_device_id
from rayaccel_amd.readings import GpuRecord, Snapshot

#: gfx target -> architecture name, for labels (rayaccel.io/architecture) when the SKU is not catalogued.
ARCHITECTURES = {"gfx908": "cdna", "gfx90a": "cdna2", "gfx940": "cdna3", "gfx941": "cdna3", "gfx942": "cdna3",
                 "gfx950": "cdna4"}


def to_device(gpu: GpuRecord, source: str) -> Device:
    attributes: dict[str, str | int | float | bool] = {"source": source}
    if gpu.inferred:
        attributes["product_inferred"] = True
    if gpu.id_fallback is not None:
        attributes[ID_FALLBACK] = gpu.id_fallback
    for key in ("compute_partition", "memory_partition", "partition_id", "gfx_target", "xgmi_hive_id"):
        value = getattr(gpu, key)
        if value is not None:
            attributes[key] = value
    return Device(
        index=gpu.index, id=gpu.uuid, product_name=gpu.market_name, pci_device_id=pci_device_id(gpu.device_id),
        memory_mib=gpu.vram_mib, pci_bus_id=gpu.bdf, numa_node=gpu.numa_node,
        architecture=ARCHITECTURES.get(gpu.gfx_target or ""), driver_version=gpu.driver_version,
        runtime_version=gpu.rocm_version, attributes=attributes,
        # HIP_VISIBLE_DEVICES counts HIP devices; amdsmi's order usually matches it, but not always.
        units=[str(gpu.hip_id if gpu.hip_id is not None else gpu.index)],
    )


def devices_of(snapshot: Snapshot | None) -> list[Device]:
    if snapshot is None:
        return []
    # One GPU's garbage (a negative VRAM size) costs that GPU, with a problem naming it: never the others.
    built = (record_or_report(f"GPU {g.index} ({g.bdf or g.uuid})", partial(to_device, g, snapshot.source))
             for g in snapshot.gpus)
    return [d for d in built if d is not None]
