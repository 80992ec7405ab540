"""One probe of the host: amdsmi when it is importable and initialises, else ``amd-smi --json``."""

from __future__ import annotations

from collections.abc import Collection

from rayaccel import Host, LibraryUnavailable
from rayaccel_amd.amdsmi import AMDSMI
from rayaccel_amd.cli import PARTS, read_cli
from rayaccel_amd.discovery import physical_gpus
from rayaccel_amd.library import read_library
from rayaccel_amd.mirrored_partitions import unmirror
from rayaccel_amd.primary_partition import separate_whole_gpu
from rayaccel_amd.readings import Snapshot, disambiguate_shared_uuids


def probe(host: Host, parts: Collection[str] = PARTS) -> Snapshot | None:
    """What the host's AMD interfaces report; None when it has neither amdsmi nor amd-smi (no AMD GPUs).

    ``parts`` limits which amd-smi commands run (see :data:`rayaccel_amd.cli.PARTS`); the library, in-process
    and fast, is read whole but for its links between GPUs, which only ``topology`` reads, as ``amd-smi
    topology`` runs only then.
    """
    try:
        lib = host.library(AMDSMI)
    except LibraryUnavailable:
        snapshot = read_cli(host, parts)
    else:
        snapshot = read_library(lib, links="topology" in parts)
    if snapshot is not None:
        disambiguate_shared_uuids(snapshot.gpus)
        for group in physical_gpus(snapshot.gpus):
            unmirror(group)  # partitions that print their whole GPU's values (ROCm <= 6.4.0)
            separate_whole_gpu(group)  # a primary partition that prints its whole GPU's memory (ROCm >= 6.4.1)
    return snapshot
