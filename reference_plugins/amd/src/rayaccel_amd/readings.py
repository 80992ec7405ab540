"""What one probe of the machine (:mod:`rayaccel_amd.probe`) found, whichever AMD interface answered (library or CLI).

Both readers (:mod:`rayaccel_amd.library`, :mod:`rayaccel_amd.cli`) produce these plain records, so
discovery, topology, health and metrics are computed once, from the same facts.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal

Source = Literal["amdsmi", "amd-smi"]


@dataclass(frozen=True)
class PeerLink:
    """How this GPU reaches a peer, as amdsmi's topology query reports it."""

    kind: Literal["xgmi", "pcie", "other"]
    hops: int | None = None
    weight: int | None = None


@dataclass(frozen=True)
class EccCounts:
    """ECC error counts; None: the tool or library left the count out or printed no number (unknown, never 0)."""

    correctable: int | None = 0
    uncorrectable: int | None = 0
    deferred: int | None = 0


@dataclass(frozen=True)
class WholeGpuMemory:
    """A partitioned GPU's whole VRAM as its primary partition states it (ROCm 6.4.1+: see
    :mod:`rayaccel_amd.primary_partition`); None: not stated."""

    mib: int | None = None
    total_bytes: int | None = None
    used_bytes: int | None = None


@dataclass
class GpuRecord:
    index: int
    uuid: str
    market_name: str
    device_id: int | None = None
    bdf: str | None = None
    #: The HIP device id (what HIP_VISIBLE_DEVICES counts), when amdsmi reports it; None: the amdsmi index.
    hip_id: int | None = None
    #: HIP's uuid of the physical GPU (``GPU-<serial>``), the same on each of its partitions (ROCm 6.4+).
    hip_uuid: str | None = None
    #: Its DRM render node's minor (``/dev/dri/renderD<N>``), when amdsmi reports it (ROCm 6.4+).
    drm_render: int | None = None
    vram_mib: int | None = None
    numa_node: int | None = None
    driver_version: str | None = None
    rocm_version: str | None = None
    gfx_target: str | None = None
    compute_partition: str | None = None
    memory_partition: str | None = None
    xgmi_hive_id: str | None = None
    links: dict[int, PeerLink] = field(default_factory=dict)
    ecc: EccCounts | None = None
    ras_blocks: dict[str, str] = field(default_factory=dict)
    gfx_activity: float | None = None
    umc_activity: float | None = None
    power_w: float | None = None
    temperature_c: float | None = None
    vram_used_bytes: int | None = None
    vram_total_bytes: int | None = None
    #: The product was not read from this GPU but taken from the others (it did not answer).
    inferred: bool = False
    #: Health query -> amdsmi status name, for queries that failed with something other than "not supported".
    errors: dict[str, str] = field(default_factory=dict)
    #: The compute partition (XCP) this logical GPU is, when the GPU is partitioned (CPX/DPX/...).
    partition_id: int | None = None
    #: Why ``uuid`` is not the GPU's own uuid (a fallback or a disambiguated one); None when it is.
    id_fallback: str | None = None
    #: On a partitioned GPU's primary partition, the whole GPU's memory where the primary states it beside (and in
    #: place of) its own share; the vram_* fields above are then the partition's own.
    whole_gpu: WholeGpuMemory | None = None


@dataclass
class Snapshot:
    source: Source
    gpus: list[GpuRecord]

    def by_uuid(self) -> dict[str, GpuRecord]:
        return {g.uuid: g for g in self.gpus}



def infer_unanswered_products(gpus: list[GpuRecord]) -> None:
    """A GPU that does not answer is taken to be the node's model (the first GPU that did name its product), so
    one dead GPU keeps the SKU known; with none answering, it is an "AMD GPU". Either reader's records."""
    known = next((g for g in gpus if g.market_name), None)
    for gpu in gpus:
        if not gpu.market_name:
            gpu.market_name = known.market_name if known else "AMD GPU"
            gpu.device_id = gpu.device_id if gpu.device_id is not None else (known.device_id if known else None)
            gpu.inferred = True

#: amdsmi's uuid (``amdsmi_uuid_gen``): ``<serial[7]><idx><PCI device id>-0000-1000-80<serial[6]>-<serial[5..0]>``;
#: ``idx`` (the second byte) is 0xff ("no partition") on every ROCm before 7.12, the partition id from 7.12 on.
_AMDSMI_UUID = re.compile(r"([0-9a-f]{2})ff([0-9a-f]{4}-0000-1000-80[0-9a-f]{2}-[0-9a-f]{12})", re.IGNORECASE)
_BDF = re.compile(r"([0-9a-f]{4,8}:[0-9a-f]{2}:[0-9a-f]{2})\.([0-7])", re.IGNORECASE)


def partition_uuid(gpu_uuid: str, partition: int) -> str | None:
    """The uuid ROCm 7.12+ reports for ``partition`` of the GPU whose uuid is ``gpu_uuid`` on an older ROCm.

    None when ``gpu_uuid`` is not amdsmi's "no partition" uuid (or the partition id does not fit its byte).
    """
    match = _AMDSMI_UUID.fullmatch(gpu_uuid)
    if match is None or not 0 <= partition < 0xFF:
        return None
    return f"{match.group(1)}{partition:02x}{match.group(2)}".lower()


def _partition_ids(members: list[GpuRecord]) -> list[int] | None:
    """Each logical GPU's partition id: amdsmi's (kfd_info), else its PCI function on the GPU's one device."""
    ids = [g.partition_id for g in members if g.partition_id is not None]
    if len(ids) == len(members) and len(set(ids)) == len(ids):
        return ids
    # ROCm before 6.3 has no kfd_info; each partition is still its own PCI function (0000:05:00.0 ... .7).
    places = [_BDF.fullmatch(g.bdf or "") for g in members]
    if any(p is None for p in places) or len({p.group(1).lower() for p in places if p}) != 1:
        return None
    functions = [int(p.group(2)) for p in places if p]
    return functions if len(set(functions)) == len(functions) else None


def disambiguate_shared_uuids(gpus: list[GpuRecord]) -> None:
    """Give logical GPUs that report one uuid distinct ids that stay the same when the node moves to ROCm 7.12.

    Up to ROCm 7.11 amdsmi gives every compute partition of a GPU (CPX/DPX/...) the GPU's uuid; ROCm 7.12 puts
    the partition id into the uuid's second byte (ROCm/rocm-systems#3977). Each partition is a GPU Ray counts,
    so each needs its own id: where the data shows the partition (kfd_info's partition id, else the PCI
    function) the id is the uuid ROCm 7.12 reports for it, so upgrading does not rename the node's devices.
    Otherwise it is ``<uuid>-p<partition id>`` or ``<uuid>-<n>`` (its place among the GPUs sharing the uuid),
    which does change on the upgrade. Either way ``id_fallback`` says so (a ``fallback-device-id`` warning).
    """
    groups: dict[str, list[GpuRecord]] = {}
    for gpu in gpus:
        groups.setdefault(gpu.uuid, []).append(gpu)
    for uuid, members in groups.items():
        if len(members) < 2:
            continue
        shared = (f"{len(members)} logical GPUs report uuid {uuid}: compute partitions on a ROCm before 7.12, "
                  "which gives every partition of a GPU the GPU's uuid")
        partitions = _partition_ids(members)
        derived = [partition_uuid(uuid, p) for p in partitions] if partitions is not None else []
        if (partitions is not None and None not in derived and len(set(derived)) == len(members)
                and not set(derived) & set(groups)):
            for gpu, partition, new_id in zip(members, partitions, derived, strict=True):
                gpu.uuid = str(new_id)
                gpu.id_fallback = (f"{shared}; this one is partition {partition}, id {new_id}: the uuid ROCm 7.12+ "
                                   "reports for it (partition id in the second byte), so it stays on the upgrade")
            continue
        for n, gpu in enumerate(members):
            gpu.uuid = f"{uuid}-p{partitions[n]}" if partitions is not None else f"{uuid}-{n}"
            gpu.id_fallback = (f"{shared}; this one is {gpu.uuid}, an id that changes when the node moves to ROCm "
                               "7.12+ (which gives each partition its own uuid)")
