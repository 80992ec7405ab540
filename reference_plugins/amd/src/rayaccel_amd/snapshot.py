"""What one probe of the machine found, whichever AMD interface answered (library or CLI).

Both readers (:mod:`rayaccel_amd.library`, :mod:`rayaccel_amd.cli`) produce these plain records, so
discovery, topology, health and metrics are computed once, from the same facts.
"""

from __future__ import annotations

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
    correctable: int = 0
    uncorrectable: int = 0
    deferred: int = 0


@dataclass
class GpuRecord:
    index: int
    uuid: str
    market_name: str
    device_id: int | None = None
    bdf: str | None = None
    #: The HIP device id (what HIP_VISIBLE_DEVICES counts), when amdsmi reports it; None: the amdsmi index.
    hip_id: int | None = None
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


@dataclass
class Snapshot:
    source: Source
    gpus: list[GpuRecord]

    def by_uuid(self) -> dict[str, GpuRecord]:
        return {g.uuid: g for g in self.gpus}


def disambiguate_shared_uuids(gpus: list[GpuRecord]) -> None:
    """Give logical GPUs that report one uuid distinct, stable ids.

    Older ROCm gives every compute partition of a GPU in CPX/DPX mode the uuid of the whole GPU (later
    releases put the partition id into it). Each partition is still a GPU Ray counts, so each gets
    ``<uuid>-p<partition id>`` (or ``-<n>``, its place among the GPUs sharing the uuid, when the partition
    id is unknown), noted in ``id_fallback``.
    """
    groups: dict[str, list[GpuRecord]] = {}
    for gpu in gpus:
        groups.setdefault(gpu.uuid, []).append(gpu)
    for uuid, members in groups.items():
        if len(members) < 2:
            continue
        partitions = [g.partition_id for g in members]
        by_partition = None not in partitions and len(set(partitions)) == len(partitions)
        for n, gpu in enumerate(members):
            gpu.uuid = f"{uuid}-p{gpu.partition_id}" if by_partition else f"{uuid}-{n}"
            gpu.id_fallback = (f"{len(members)} logical GPUs report uuid {uuid} (compute partitions on a ROCm that "
                               f"does not put the partition id in the uuid); this one is {gpu.uuid}")
