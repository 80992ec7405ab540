"""GPU records -> rayaccel Device records."""

from __future__ import annotations

from functools import partial

from rayaccel import Device, Host, HostError, report_problem
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


#: Where the amdgpu driver shows each GPU's render node and its PCI vendor (AMD's is 0x1002).
_DRM = "/sys/class/drm"
AMD_PCI_VENDOR = "0x1002"


def gpu_render_nodes(host: Host) -> list[str]:
    """The amdgpu driver's render nodes of AMD GPUs (``renderD128`` ...): a second witness of the GPUs."""
    found = []
    for node in host.glob(f"{_DRM}/renderD*"):  # the host's glob expands the last part only
        try:
            vendor = host.read_text(f"{node}/device/vendor").strip().lower()
        except (OSError, HostError):
            continue
        if vendor == AMD_PCI_VENDOR:
            found.append("/dev/dri/" + node.rsplit("/", 1)[-1])
    return sorted(found)


def unseen_gpus_problem(host: Host, snapshot: Snapshot | None) -> None:
    """amdsmi / amd-smi find no GPU (or neither is there) while the driver's render nodes show AMD GPUs: say
    so, do not offer 0 quietly (a container given /dev/dri and /dev/kfd but not ROCm's amdsmi)."""
    nodes = gpu_render_nodes(host)
    if not nodes or (snapshot is not None and snapshot.gpus):
        return
    why = (f"{snapshot.source} reports no GPU" if snapshot is not None
           else "neither the amdsmi Python package nor the amd-smi command is available")
    report_problem("gpus-not-enumerated", f"{why}, while the amdgpu driver shows {len(nodes)} AMD GPU render "
                   f"node{'s' if len(nodes) > 1 else ''} ({', '.join(nodes[:4])}{', ...' if len(nodes) > 4 else ''}); "
                   "no GPU is offered", fix="install ROCm's amdsmi (pip install amdsmi matching the ROCm version) or "
                   "amd-smi; check 'amd-smi list'", severity="warning")


def devices_of(snapshot: Snapshot | None) -> list[Device]:
    if snapshot is None:
        return []
    # One GPU's garbage (a negative VRAM size) costs that GPU, with a problem naming it: never the others.
    built = (record_or_report(f"GPU {g.index} ({g.bdf or g.uuid})", partial(to_device, g, snapshot.source))
             for g in snapshot.gpus)
    return [d for d in built if d is not None]
