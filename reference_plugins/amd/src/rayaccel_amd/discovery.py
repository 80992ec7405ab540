"""GPU records -> rayaccel Device records: a GPU in SPX mode is one Device, a GPU split into compute partitions
(CPX, DPX, QPX, ...) one Device whose partitions are its logical GPUs.

amdsmi enumerates each compute partition as a GPU of its own (one PCI function each, ``0000:05:00.0`` ...
``.7`` in CPX), which is how HIP counts them too: ``HIP_VISIBLE_DEVICES`` takes a partition's HIP id. So the
logical GPUs of one PCI device are grouped into the physical GPU they share (memory, xGMI links, power), each
a :class:`~rayaccel.Partition` of kind ``compute-partition`` whose id is its HIP id and whose profile names
its size (:func:`partition_profile`); Ray then schedules ``GPU_COMPUTE_PARTITION_cpx.1xcd.24gb``, never a
partitioned GPU whole.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import partial

from rayaccel import DEVICE_FILE, ID_FALLBACK, Device, Host, HostError, record_or_report, report_problem
from rayaccel_amd.products import pci_device_id
from rayaccel_amd.readings import GpuRecord, Snapshot

#: Partition attribute holding the logical GPU's own amdsmi uuid (the Partition's id is its HIP id).
PARTITION_UUID = "uuid"
PARTITION_KIND = "compute-partition"
#: Accelerator complex dies (XCDs) per GPU, the compute slices its partitions divide (AMD's partitioning
#: guide: CPX gives each XCD its own partition). Products not listed report no slice counts.
XCDS = {"MI300X": 8, "MI325X": 8, "MI350X": 8, "MI355X": 8, "MI300A": 6, "MI308X": 4}
#: The compute partition mode by partitions per GPU, for when amdsmi / amd-smi cannot say (the modes of AMD's
#: partitioning guide: SPX 1, DPX 2, TPX 3, QPX 4; CPX one per XCD).
MODES = {1: "spx", 2: "dpx", 3: "tpx", 4: "qpx"}
#: MiB in the GiB a profile's memory is rounded to (what NVIDIA's MIG profiles do: 9856 MiB is '10gb').
_MIB_PER_GB = 1024
_NPS = re.compile(r"^NPS(\d)$")
_PCI_FUNCTION = re.compile(r"^([0-9a-f]{4,8}:[0-9a-f]{2}:[0-9a-f]{2})\.[0-7]$", re.IGNORECASE)

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


def physical_gpus(gpus: Sequence[GpuRecord]) -> list[list[GpuRecord]]:
    """The logical GPUs grouped by the physical GPU they are, in enumeration order: the logical GPUs of one PCI
    device (its functions), or, for one whose PCI address amdsmi cannot read, of one HIP uuid (``GPU-<serial>``,
    the package's), each group in partition order; every other GPU alone."""
    groups: dict[str, list[GpuRecord]] = {}
    order: list[list[GpuRecord]] = []
    for gpu in gpus:
        place = _PCI_FUNCTION.match(gpu.bdf or "")
        keys = [k for k in (place.group(1).lower() if place else None, gpu.hip_uuid) if k is not None]
        group = next((groups[k] for k in keys if k in groups), None)
        if group is None:
            group = []
            order.append(group)
        group.append(gpu)
        groups.update({k: group for k in keys})
    for group in order:
        group.sort(key=lambda g: (g.partition_id if g.partition_id is not None else 0xFF, g.bdf or "", g.index))
    return order


def physical_uuid(primary: GpuRecord) -> str:
    """The physical GPU's id: amdsmi's uuid with its "no partition" second byte (0xff, what every ROCm before
    7.12 reports for each partition), else the primary partition's id with ``-gpu``."""
    match = re.fullmatch(r"([0-9a-f]{2})[0-9a-f]{2}([0-9a-f]{4}-0000-1000-80[0-9a-f]{2}-[0-9a-f]{12})(-.*)?",
                         primary.uuid, re.IGNORECASE)
    return f"{match.group(1)}ff{match.group(2)}".lower() if match else f"{primary.uuid}-gpu"


def partition_profile(mode: str, xcds: int | None, memory_mib: int | None) -> str:
    """A compute partition's profile, which names its Ray resource and label: the mode as amd-smi prints it,
    then what sizes the partition, as NVIDIA's MIG profile ``1g.10gb`` does: its XCDs and its memory in GiB,
    rounded (``dpx.4xcd.96gb``). The mode alone is not a size: DPX is 4 XCDs and 96 GiB on an MI300X but 144 GiB
    on an MI350X, and 2 XCDs on an MI308X (docs/partitions.md). What the plugin cannot tell is left out."""
    size = ([f"{xcds}xcd"] if xcds else []) + (
        [f"{max(1, round(memory_mib / _MIB_PER_GB))}gb"] if memory_mib else [])
    return ".".join([mode.lower(), *size])


def _partitioned(members: list[GpuRecord], source: str) -> Device:
    primary = members[0]
    mode = next((g.compute_partition for g in members if g.compute_partition), None)
    nps = next((g.memory_partition for g in members if g.memory_partition), None)
    product = next((name for name in XCDS if name in primary.market_name), None)
    xcds = XCDS.get(product or "")
    share = xcds // len(members) if xcds and xcds % len(members) == 0 else None
    memory_slices = _NPS.match(nps or "")
    named_mode = mode or ("cpx" if len(members) == xcds else MODES.get(len(members), f"{len(members)}x"))
    partitions = []
    for gpu in members:
        attributes: dict[str, str | int | float | bool] = {PARTITION_UUID: gpu.uuid}
        if gpu.partition_id is not None:
            attributes["partition_id"] = gpu.partition_id
        if gpu.bdf:
            attributes["pci_bus_id"] = gpu.bdf
        if gpu.drm_render is not None:  # what a job on this partition is given (Slurm's MultipleFiles)
            attributes[DEVICE_FILE] = f"/dev/dri/renderD{gpu.drm_render}"
        if gpu.inferred:
            attributes["product_inferred"] = True
        partitions.append({"id": str(gpu.hip_id if gpu.hip_id is not None else gpu.index), "kind": PARTITION_KIND,
                           "profile": partition_profile(named_mode, share, gpu.vram_mib), "compute_slices": share,
                           "memory_mib": gpu.vram_mib, "attributes": attributes})
    whole = to_device(primary, source)
    # The GPU's memory: what its primary states for it where it does (rayaccel_amd.primary_partition), else its
    # partitions' together.
    memory = [primary.whole_gpu.mib] if primary.whole_gpu else [g.vram_mib for g in members]
    attributes = {k: v for k, v in whole.attributes.items() if k not in ("partition_id", "product_inferred")}
    attributes.update({k: v for k, v in (("compute_partition", mode), ("memory_partition", nps)) if v})
    attributes["partitions"] = len(members)
    fallback = next((g.id_fallback for g in members if g.id_fallback), None)
    if fallback:
        attributes[ID_FALLBACK] = fallback
    capacity = ({"compute_slices": xcds, "memory_slices": int(memory_slices.group(1)) if memory_slices else 1}
                if share is not None else None)
    return Device.model_validate({
        **whole.model_dump(), "id": physical_uuid(primary), "units": [],
        "memory_mib": sum(m for m in memory if m is not None) if None not in memory else None,
        "partitions": partitions, "partition_capacity": capacity, "attributes": attributes})


def members(device: Device, snapshot: Snapshot) -> list[GpuRecord | None]:
    """The logical GPUs a device is, as this snapshot reads them (None: one no longer enumerated)."""
    by_uuid = snapshot.by_uuid()
    if not device.partitions:
        return [by_uuid.get(device.id)]
    return [by_uuid.get(str(p.attributes.get(PARTITION_UUID))) for p in device.partitions]


def devices_of(snapshot: Snapshot | None) -> list[Device]:
    if snapshot is None:
        return []
    devices = []
    for group in physical_gpus(snapshot.gpus):
        primary = group[0]
        # One GPU's garbage (a negative VRAM size) costs that GPU, with a problem naming it: never the others.
        build = partial(to_device, primary, snapshot.source) if len(group) == 1 else partial(
            _partitioned, group, snapshot.source)
        device = record_or_report(f"GPU {primary.index} ({primary.bdf or primary.uuid})", build)
        if device is not None:
            devices.append(device)
    return devices
