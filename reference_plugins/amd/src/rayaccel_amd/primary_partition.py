"""A partitioned GPU's primary partition states its whole GPU's memory, its secondaries their share.

From ROCm 6.4.1 (amd-smi 25.4.2, amdsmi 7.x) every partition answers through its own node, and amdsmi's VRAM size
(``amdsmi_get_gpu_memory_total``, ``amdsmi_get_gpu_vram_info``'s ``vram_size``, ``amdsmi_get_gpu_vram_usage``'s
total; ``amd-smi static`` ``vram.size``, ``amd-smi metric`` ``mem_usage.total_vram``) is rocm_smi's
``rsmi_dev_memory_total_get``: the card's sysfs ``mem_info_vram_total``, and KFD's memory banks (the partition's
share) only "if VRAM total is 0" (ROCm/rocm-systems projects/rocm-smi-lib/src/rocm_smi.cc). Only the PCI device, the
primary partition, has that file (ROCm/k8s-device-plugin#108: "For the cards which are partitions, this
mem_info_vram_total file is not present", so its labels showed 192G for partitions): the primary prints the whole
GPU (206141652992 B on an MI300X), each secondary its share (25767706624 B in CPX). The amdsmi CHANGELOG for ROCm
6.4.1 (Resolved issues) prints ``0.3/192.0 GB`` on partition 0 and ``0.5/ 24.0 GB`` on partitions 1-7.

VRAM in use follows the same path (``rsmi_dev_memory_usage_get``): the primary's is the whole device's
(``mem_info_vram_used``: every partition's allocations), a secondary's KFD's (its share less what KFD has available,
``KFDNode::get_used_memory`` in rocm_smi_kfd.cc). No query states partition 0's own use, and the two accountings
do not add up (the CHANGELOG's idle GPU: 0.3 GB on the whole device, 0.5 GB on each secondary), so the primary's
figures are kept as the whole GPU's (``GpuRecord.whole_gpu``: the GPU's memory and memory in use) and its
partition is sized as its secondaries: KFD gives every compute partition of a GPU one size
(``amdgpu_amdkfd_xcp_memory_size``: the memory partition's size over the compute partitions in it), never the
whole GPU's. Partition 0's own use is left unknown.

The records decide, not the release: a primary stating at least twice the size its secondaries agree on states
more than any one partition has, so it states its GPU (a few MiB more is a partition's own, counted another way).
A GPU whose secondaries state no size or disagree is read as printed, and so is one whose primary states its
share, as it would under the open ROCm/rocm-systems#8419 (KFD's figure "in a multi-partition mode"). That change
is to the total alone: were it released, the primary's use would still be the whole device's, and this rule would
have to take it as the GPU's there too. Up to ROCm 6.4.0 every partition prints the whole GPU
(:mod:`rayaccel_amd.mirrored_partitions`); that release is left to it.
"""

from __future__ import annotations

from collections.abc import Sequence

from rayaccel_amd.mirrored_partitions import mirrors_primary
from rayaccel_amd.readings import GpuRecord, WholeGpuMemory


def separate_whole_gpu(group: Sequence[GpuRecord]) -> None:
    """One partitioned GPU's records (primary first), where its secondaries agree on a size: a primary stating at
    least twice that has its figures made the GPU's (``whole_gpu``); a primary stating no size at all (a query that
    failed, a garbled answer) leaves the GPU's size unknown, its use still the GPU's. Either way the primary's
    partition is its secondaries' size and its own use unknown; a primary stating its share is left as it is."""
    if len(group) < 2 or mirrors_primary(group[0].rocm_version):
        return
    primary, secondaries = group[0], group[1:]
    share_mib = _agreed([g.vram_mib for g in secondaries])
    share_bytes = _agreed([g.vram_total_bytes for g in secondaries])
    if share_mib is None and share_bytes is None:
        return
    if primary.vram_mib is None and primary.vram_total_bytes is None:
        # Whole GPU or share, nothing says: the GPU's size is unknown, never a part of it. Its use is the whole
        # device's either way (rsmi_dev_memory_usage_get reads the PCI device's mem_info_vram_used).
        primary.whole_gpu = WholeGpuMemory(used_bytes=primary.vram_used_bytes)
    elif _whole(primary.vram_mib, share_mib) or _whole(primary.vram_total_bytes, share_bytes):
        primary.whole_gpu = WholeGpuMemory(mib=primary.vram_mib, total_bytes=primary.vram_total_bytes,
                                           used_bytes=primary.vram_used_bytes)
    else:
        return
    primary.vram_mib = share_mib if share_mib is not None else _mib(share_bytes)
    primary.vram_total_bytes = share_bytes if share_bytes is not None else _bytes(share_mib)
    primary.vram_used_bytes = None


def _agreed(values: list[int | None]) -> int | None:
    """The one value the partitions state (those that state one), None where none does or they differ."""
    stated = {v for v in values if v is not None}
    return stated.pop() if len(stated) == 1 else None


def _whole(stated: int | None, share: int | None) -> bool:
    """Whether ``stated`` is more than one partition's (two shares or more): partitions of a GPU have one size."""
    return stated is not None and share is not None and stated >= 2 * share > 0


def _mib(size: int | None) -> int | None:
    return None if size is None else size // 2**20


def _bytes(mib: int | None) -> int | None:
    return None if mib is None else mib * 2**20
