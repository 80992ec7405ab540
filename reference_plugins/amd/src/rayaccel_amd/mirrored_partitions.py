"""Partitions that mirror their GPU: up to ROCm 6.4.0, amdsmi answers every device query of a partitioned GPU's
secondary partitions from the primary's sysfs card (rocm_smi_main.cc adds each secondary with the primary's
``card<N>`` path), so every partition prints the whole GPU's VRAM total and usage, socket power, temperatures,
activity and RAS/ECC counts. ROCm 6.4.1 fixed it (amdsmi CHANGELOG, "amd_smi_lib for ROCm 6.4.1", Resolved
issues: partition nodes "mirrored renderD128's information"; its CPX example prints 201 W and 0.3/192.0 GB on all
eight partitions of one MI300X before the fix, N/A and 24.0 GB on the secondaries after it).

Read as they are, such partitions would add up to N GPUs' memory and power. The release says which behaviour the
machine has: values alike on every partition are no proof (partitions of one size print one VRAM total on every
release), so the records are made what a fixed release reports: each partition its share of the GPU's memory,
the package's readings once, on the primary partition.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from rayaccel_amd.readings import GpuRecord

#: The first release whose partitions answer for themselves.
FIRST_UNMIRRORED = (6, 4, 1)


def mirrors_primary(rocm_version: str | None) -> bool:
    """Whether this ROCm release answers a secondary partition's device queries with the primary's values; an
    unknown or unreadable release is taken as it reports itself (not mirrored)."""
    match = re.match(r"(\d+)\.(\d+)(?:\.(\d+))?", rocm_version or "")
    if match is None:
        return False
    major, minor, patch = (int(part or 0) for part in match.groups())
    return (major, minor, patch) < FIRST_UNMIRRORED


def unmirror(group: Sequence[GpuRecord]) -> None:
    """One partitioned GPU's records (primary first), read on a mirroring release, made what a fixed release
    reports: memory split among the partitions (the primary keeps the remainder, so the parts add up to the GPU),
    power, temperature, VRAM usage, activity and ECC/RAS on the primary alone. A failed query stays on every
    partition (a secondary that stops answering is still drained)."""
    if len(group) < 2 or not mirrors_primary(group[0].rocm_version):
        return
    primary, count = group[0], len(group)
    whole_mib, whole_bytes = primary.vram_mib, primary.vram_total_bytes
    for gpu in group:
        gpu.vram_mib = None if whole_mib is None else _part(whole_mib, count, gpu is primary)
        gpu.vram_total_bytes = None if whole_bytes is None else _part(whole_bytes, count, gpu is primary)
    for gpu in group[1:]:
        gpu.power_w = gpu.temperature_c = gpu.gfx_activity = gpu.umc_activity = None
        gpu.vram_used_bytes = None
        gpu.ecc = None
        gpu.ras_blocks = {}


def _part(whole: int, count: int, primary: bool) -> int:
    share = whole // count
    return whole - share * (count - 1) if primary else share
