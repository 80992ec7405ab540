"""``neuron-ls --json-output``: what the Neuron tools say is on the host. Pure parsing.

The output is a JSON array with one object per Neuron device, e.g. (trn1.2xlarge)::

    [{"neuron_device": 0, "bdf": "0000:00:1e.0", "cpu_affinity": "0-7", "numa_node": "-1",
      "connected_to": null, "nc_count": 2, "memory_size": 34359738368,
      "neuroncore_ids": [0, 1], "neuron_processes": []}]

``connected_to`` lists the logical ids of the devices this one has NeuronLink to. On Trainium2,
``nc_count`` and ``neuroncore_ids`` count *logical* NeuronCores, and ``logical_neuroncore_config``
says how many physical cores make one (2 by default: 8 physical cores appear as 4). Older tools omit
``neuroncore_ids``; the runtime then numbers cores device by device, so device ``i`` with ``c`` cores owns
``i*c .. i*c+c-1`` -- the ids NEURON_RT_VISIBLE_CORES takes.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

NEURON_LS = "/opt/aws/neuron/bin/neuron-ls"
NEURON_LS_ARGS = ("--json-output",)


class NeuronLsError(Exception):
    """neuron-ls answered something this plugin cannot use; the message says what and how to fix it."""

    FIX = ("run '/opt/aws/neuron/bin/neuron-ls --json-output' by hand; if it fails too, update "
           "aws-neuronx-tools and aws-neuronx-dkms to matching versions")

    def __str__(self) -> str:
        return f"{super().__str__()} (to fix: {self.FIX})"


@dataclass(frozen=True)
class NeuronDeviceInfo:
    index: int
    nc_count: int
    core_ids: list[int]
    memory_bytes: int | None = None
    bdf: str | None = None
    cpu_affinity: str | None = None
    numa_node: int | None = None
    connected_to: list[int] = field(default_factory=list)
    logical_nc_config: int = 1
    processes: int = 0
    instance_type: str | None = None


def _int(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str):
        try:
            return int(value.strip())
        except ValueError:
            return None
    return None


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _device(entry: Any, position: int) -> NeuronDeviceInfo:
    if not isinstance(entry, dict):
        raise NeuronLsError(f"entry {position} of the device list is {type(entry).__name__}, not an object")
    index = _int(entry.get("neuron_device"))
    nc_count = _int(entry.get("nc_count"))
    if index is None or index < 0 or nc_count is None or nc_count < 0:
        raise NeuronLsError(f"entry {position} has no usable 'neuron_device' and 'nc_count' "
                            f"(got {entry.get('neuron_device')!r} and {entry.get('nc_count')!r})")
    raw_ids = entry.get("neuroncore_ids")
    if isinstance(raw_ids, list) and all(_int(i) is not None for i in raw_ids) and len(raw_ids) == nc_count:
        core_ids = [int(i) for i in raw_ids]
    else:
        core_ids = list(range(index * nc_count, index * nc_count + nc_count))
    connected = entry.get("connected_to")
    peers = [p for p in (_int(c) for c in connected) if p is not None] if isinstance(connected, list) else []
    numa = _int(entry.get("numa_node"))
    processes = entry.get("neuron_processes")
    return NeuronDeviceInfo(
        index=index, nc_count=nc_count, core_ids=core_ids, memory_bytes=_int(entry.get("memory_size")),
        bdf=_str(entry.get("bdf")), cpu_affinity=_str(entry.get("cpu_affinity")),
        numa_node=numa if numa is not None and numa >= 0 else None, connected_to=peers,
        logical_nc_config=_int(entry.get("logical_neuroncore_config")) or 1,
        processes=len(processes) if isinstance(processes, list) else 0,
        instance_type=_str(entry.get("instance_type")),
    )


def parse_neuron_ls(text: str) -> list[NeuronDeviceInfo]:
    """The devices in neuron-ls JSON. Raises NeuronLsError, never a JSON or key error."""
    if not text.strip():
        return []
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        first = text.strip().splitlines()[0][:60]
        raise NeuronLsError(f"neuron-ls --json-output printed text that is not JSON ({e.msg} at line {e.lineno}; "
                            f"it begins {first!r})") from None
    if not isinstance(data, list):
        raise NeuronLsError(f"neuron-ls --json-output printed a JSON {type(data).__name__}, not a device list")
    devices = [_device(entry, i) for i, entry in enumerate(data) if entry != {}]
    seen: set[int] = set()
    for device in devices:
        if device.index in seen:
            raise NeuronLsError(f"neuron-ls lists neuron_device {device.index} twice")
        seen.add(device.index)
    return sorted(devices, key=lambda d: d.index)
