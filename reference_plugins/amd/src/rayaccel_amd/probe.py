"""One probe of the host: amdsmi when it is importable and initialises, else ``amd-smi --json``."""

from __future__ import annotations

from rayaccel import Host, LibraryUnavailable
from rayaccel_amd.cli import read_cli
from rayaccel_amd.library import read_library
from rayaccel_amd.snapshot import Snapshot


def probe(host: Host) -> Snapshot | None:
    """What the host's AMD interfaces report; None when it has neither amdsmi nor amd-smi (no AMD GPUs)."""
    try:
        lib = host.library("amdsmi")
    except LibraryUnavailable:
        return read_cli(host)
    return read_library(lib)
