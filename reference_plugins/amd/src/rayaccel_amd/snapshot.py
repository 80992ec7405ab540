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


@dataclass
class Snapshot:
    source: Source
    gpus: list[GpuRecord]

    def by_uuid(self) -> dict[str, GpuRecord]:
        return {g.uuid: g for g in self.gpus}
