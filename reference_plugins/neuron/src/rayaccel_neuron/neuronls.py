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

From Neuron 2.34, ``--json-output`` is gone: ``--output-format json`` prints an object whose top level
carries what applies to more than one device (instance and UltraServer details) next to the device list.
AWS announced the change without publishing the full layout; this parser takes the device list from
``neuron_devices`` (or ``devices``), each entry with the fields above, and fills ``instance_type`` and
``logical_neuroncore_config`` from the top level where an entry lacks them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from rayaccel import CpuListError, canonical_cpu_list, malformed, report_problem, vendor_int

#: Physical maxima, with room: Trn1/Trn2/Inf1 instances carry at most 16 devices, a Trainium2 device 8
#: NeuronCores. A count above them is a broken tool's answer: that entry is reported and skipped, never used
#: to build ids (``nc_count: 10**9`` would be a billion of them).
MAX_DEVICES = 128
MAX_CORES_PER_DEVICE = 64
MAX_MEMORY_BYTES = 2**40

NEURON_LS = "/opt/aws/neuron/bin/neuron-ls"
#: Neuron 2.34 and later (tried first).
NEURON_LS_NEW_ARGS = ("--output-format", "json")
#: Neuron before 2.34 (the fallback when the new flag is refused).
NEURON_LS_ARGS = ("--json-output",)
#: Top-level keys of the 2.34+ object that may hold the device list.
DEVICE_LIST_KEYS = ("neuron_devices", "devices")


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


def _str(value: Any, name: str = "", where: str = "") -> str | None:
    """Text; with ``name``, a value of another type (or with undecodable bytes) is reported and ignored."""
    if value is None or value == "":
        return None
    if isinstance(value, str) and value.isprintable() and "\ufffd" not in value and len(value) <= 256:
        return value
    if name:
        malformed(name, value, "text", where=where)
    return None


def _cpu_list(value: Any, where: str) -> str | None:
    """A Linux CPU list in any form the kernel's parser takes (``0-3,8``, ``0,1,2,3,8``), written as the kernel
    writes it (``0-3,8``): consumers compare affinities as text. Anything else is reported and ignored."""
    if value is None or value == "":
        return None
    try:
        return canonical_cpu_list(value)
    except CpuListError:
        malformed("cpu_affinity", value, "a CPU list such as 0-47,96-143", where=where)
        return None


def _list(value: Any, name: str, where: str) -> list[Any] | None:
    if value is None:
        return None
    if isinstance(value, list) and len(value) <= MAX_DEVICES * MAX_CORES_PER_DEVICE:
        return value
    malformed(name, value, "a list", where=where)
    return None


def _device(entry: Any, position: int) -> NeuronDeviceInfo | None:
    """One device entry; None (and a report naming the field and value) when it cannot be used."""
    where = f"neuron-ls entry {position}"
    if not isinstance(entry, dict):
        malformed("entry", entry, "an object", where="neuron-ls device list")
        return None
    index = vendor_int(entry.get("neuron_device"), "neuron_device", where=where, maximum=MAX_DEVICES - 1)
    nc_count = vendor_int(entry.get("nc_count"), "nc_count", where=where, maximum=MAX_CORES_PER_DEVICE)
    if index is None or nc_count is None:
        report_problem("unusable-device-entry", f"{where}: no usable neuron_device and nc_count (got "
                       f"{entry.get('neuron_device')!r:.40} and {entry.get('nc_count')!r:.40}); the device is not "
                       "reported", severity="error", fix=NeuronLsError.FIX)
        return None
    where = f"neuron-ls device {index}"
    raw_ids = _list(entry.get("neuroncore_ids"), "neuroncore_ids", where)
    ids = [vendor_int(i, "neuroncore_ids[]", where=where, maximum=MAX_DEVICES * MAX_CORES_PER_DEVICE - 1)
           for i in raw_ids or []]
    if raw_ids is not None and len(ids) == nc_count and all(i is not None for i in ids):
        core_ids = [int(i) for i in ids if i is not None]
    else:
        if raw_ids is not None and raw_ids:
            malformed("neuroncore_ids", raw_ids, f"{nc_count} core ids", where=where)
        core_ids = list(range(index * nc_count, index * nc_count + nc_count))
    connected = _list(entry.get("connected_to"), "connected_to", where) or []
    peers = [p for p in (vendor_int(c, "connected_to[]", where=where, maximum=MAX_DEVICES - 1) for c in connected)
             if p is not None]
    numa = vendor_int(entry.get("numa_node"), "numa_node", where=where, minimum=-1, maximum=1023)
    processes = _list(entry.get("neuron_processes"), "neuron_processes", where)
    return NeuronDeviceInfo(
        index=index, nc_count=nc_count, core_ids=core_ids,
        memory_bytes=vendor_int(entry.get("memory_size"), "memory_size", where=where, maximum=MAX_MEMORY_BYTES),
        bdf=_str(entry.get("bdf"), "bdf", where), cpu_affinity=_cpu_list(entry.get("cpu_affinity"), where),
        numa_node=numa if numa is not None and numa >= 0 else None, connected_to=peers,
        logical_nc_config=vendor_int(entry.get("logical_neuroncore_config"), "logical_neuroncore_config",
                                     where=where, minimum=1, maximum=MAX_CORES_PER_DEVICE) or 1,
        processes=len(processes) if processes is not None else 0,
        instance_type=_str(entry.get("instance_type"), "instance_type", where),
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
    if isinstance(data, dict):
        data = _devices_of_document(data)
    if not isinstance(data, list):
        raise NeuronLsError(f"neuron-ls --json-output printed a JSON {type(data).__name__}, not a device list")
    if len(data) > MAX_DEVICES:
        malformed("device list", f"{len(data)} entries", f"at most {MAX_DEVICES} devices",
                  where="neuron-ls --json-output")
        data = data[:MAX_DEVICES]
    devices: dict[int, NeuronDeviceInfo] = {}
    for position, entry in enumerate(data):
        device = _device(entry, position) if entry != {} else None
        if device is None:
            continue
        if device.index in devices:
            report_problem("duplicate-device", f"neuron-ls lists neuron_device {device.index} twice; the second "
                           "entry is ignored", fix=NeuronLsError.FIX)
            continue
        devices[device.index] = device
    return sorted(devices.values(), key=lambda d: d.index)


def _devices_of_document(document: dict[str, Any]) -> Any:
    """The device list of a 2.34+ ``--output-format json`` object, with its top-level instance facts."""
    key = next((k for k in DEVICE_LIST_KEYS if isinstance(document.get(k), list)), None)
    if key is None:
        raise NeuronLsError("neuron-ls --output-format json printed an object without a device list (looked for "
                            f"{' or '.join(DEVICE_LIST_KEYS)}; keys: {', '.join(sorted(map(str, document))[:8])})")
    shared = {name: document[name] for name in ("instance_type", "logical_neuroncore_config") if name in document}
    return [{**shared, **entry} if isinstance(entry, dict) else entry for entry in document[key]]
