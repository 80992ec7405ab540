"""The words records are written in: link and domain kinds, health states and their order, problem
severities, the standard metric names and units, and the device attributes the SDK reads.

Plain data, no pydantic: a plugin's module uses these when it is imported (``attributes[ID_FALLBACK] = ...``),
and importing them must not load the records' validation (``rayaccel.records`` imports them from here).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from types import MappingProxyType
from typing import Literal

#: Link kinds a topology may use. ``other`` exists so a new interconnect can be reported before the
#: vocabulary grows, rather than mislabelled as one of the others.
LinkKind = Literal[
    "nvlink", "nvswitch", "xgmi", "ici", "neuronlink", "pcie", "roce", "infiniband", "efa",
    "ethernet", "gaudi-roce", "other",
]
LINK_KINDS: tuple[str, ...] = LinkKind.__args__  # type: ignore[attr-defined]
#: What separates the words of a fabric's name (``pcie5-x16``, ``PCIe Gen5 x16``, ``neuronlink_v3``).
_FABRIC_NAME_SEPARATORS = re.compile(r"[\s_./-]+")
#: A generation written after a kind's name (``pcie5``, ``nvlink4``, ``pciegen5``).
_FABRIC_GENERATION = re.compile(r"(gen)?\d+$")


def named_link_kind(name: str) -> str | None:
    """The link kind a fabric's name (a SKU catalog's ``interconnect``) reads as: the whole name (``gaudi-roce``),
    or its first word without the generation written after it (``pcie5-x16`` -> ``pcie``, ``nvlink4-nvswitch`` ->
    ``nvlink``, ``roce-v2`` -> ``roce``); None for a name no kind has, and for ``other`` itself."""
    words = [word for word in _FABRIC_NAME_SEPARATORS.split(name.strip().lower()) if word]
    if not words:
        return None
    for candidate in ("-".join(words), _FABRIC_GENERATION.sub("", words[0])):
        if candidate in LINK_KINDS and candidate != "other":
            return candidate
    return None

#: Scale-up domain kinds: a set of devices, possibly across hosts, joined by the fast fabric.
DomainKind = Literal["nvlink-clique", "nvswitch", "xgmi-hive", "tpu-slice", "ultraserver", "neuronlink",
                     "gaudi-scaleup", "other"]

HealthState = Literal["healthy", "degraded", "unhealthy", "unknown"]
HEALTH_ORDER: dict[str, int] = {"healthy": 0, "unknown": 1, "degraded": 2, "unhealthy": 3}

#: Device attribute a plugin sets when the vendor interface gave no stable id (no UUID, only a PCI id) and
#: the device is offered under a fallback id; its value says why. The SDK reports it as a warning problem.
ID_FALLBACK = "id_fallback"

#: Device attribute naming the device's own device file where discovery found it (a TPU chip's
#: ``/dev/vfio/<group>`` or ``/dev/accel<N>``): exporters that list device files (Slurm's ``File=``) take it
#: before the family's ``schedulers.device_files`` pattern, which can only guess from the index.
DEVICE_FILE = "device_file"

Severity = Literal["error", "warning", "info"]

#: Standard metric names and the one unit each must be reported in.
#: Read-only: validation reads it, so no plugin may change what a valid sample is (RAC112 watches it too).
STANDARD_METRICS: Mapping[str, str] = MappingProxyType({
    "utilization": "percent",
    "memory_used": "bytes",
    "memory_total": "bytes",
    "power": "watts",
    "temperature": "celsius",
    "interconnect_tx": "bytes_per_second",
    "interconnect_rx": "bytes_per_second",
    "ecc_errors_corrected": "count",
    "ecc_errors_uncorrected": "count",
})
