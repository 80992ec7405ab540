"""The ``dra`` format: Kubernetes Dynamic Resource Allocation ``resource.k8s.io/v1`` ResourceSlices.

One pool per node and family (pool name: the node name; the family's declared DRA driver tells the pools
apart), one device per schedulable unit (a GPU, a TPU chip, a NeuronCore), named ``<unit kind>-<unit id>``.
Each device has typed attributes (product, SKU, accelerator type, architecture, driver and runtime
versions, UUID, index, the standard ``resource.kubernetes.io/pciBusID`` and, where the plugin reports
one, ``resource.kubernetes.io/pcieRoot``, NUMA node, scale-up domain, health, then the plugin's own device
attributes) and its memory as capacity. An unhealthy device stays in the pool with a taint
(``rayaccel.io/unhealthy``, effect ``NoSchedule``, the reason as its value) so claims stop landing on it;
eviction of running pods is left to an admin's ``DeviceTaintRule`` (as NVIDIA's DRA driver does). A device the
operator's health policy degrades (``degrade``, or a ``drain-after`` still counting) keeps scheduling with a
taint of effect ``None`` (Kubernetes 1.35 and later) saying why. Device taints are alpha in Kubernetes 1.34 (the
``DRADeviceTaints`` feature gate).

A partitioned device (MIG instances, AMD compute partitions) is published as DRA's partitionable devices
(the ``DRAPartitionableDevices`` feature gate): the physical device is a counter set
(``sharedCounters``: its ``memory``, and its ``compute-slices`` and ``memory-slices`` when the plugin reports
its partition capacity) and each partition a device of its own that consumes its share of that set
(``consumesCounters``), with the partition's id as ``unitId``, its ``profile`` and ``partitionKind``, and
the parent's uuid. The physical device itself is no device: rayaccel offers a partitioned device only as its
partitions (reconfiguring it is out of scope, docs/partitions.md). Counter sets go in ResourceSlices of their
own, at most :data:`MAX_COUNTER_SETS` each (Kubernetes 1.35 and later refuse a slice with both devices and
counter sets), and a slice holding devices that consume counters holds at most 64 of them.

The API's limits are kept by splitting, never by dropping silently: at most :data:`MAX_DEVICES` devices per
slice (:data:`MAX_DEVICES_WITH_TAINTS` in a slice where a device has taints), so a pool may take several
slices (``pool.resourceSliceCount`` says how many); at most :data:`MAX_ATTRIBUTES` attributes and
capacities per device (what does not fit is named in a warning); names are DNS labels and subdomains;
string and version values at most :data:`MAX_VALUE_LENGTH` characters.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import yaml

from rayaccel.labels import to_label_value
from rayaccel.outputs.exporters import (
    Exported,
    ExportError,
    ExportOptions,
    families_with_devices,
    node_name,
    scheduler_name,
)
from rayaccel.records import DEVICE_FILE, Device, FamilyInventory, HealthReport, NodeInventory
from rayaccel.support.safe_text import control_characters, device_path_problem, excerpt

API_VERSION = "resource.k8s.io/v1"
#: ResourceSliceSpec.devices: "Must not have more than 128 entries. If any device uses taints or consumes
#: counters the limit is 64."
MAX_DEVICES = 128
MAX_DEVICES_WITH_TAINTS = 64
#: Device.attributes + Device.capacity: "The maximum number of attributes and capacities combined is 32."
MAX_ATTRIBUTES = 32
#: Device.taints: "The maximum number of taints is 4."
MAX_TAINTS = 4
#: ResourceSliceSpec.sharedCounters: "The maximum number of counter sets is 8" (and 32 counters in all sets).
MAX_COUNTER_SETS = 8
#: DeviceAttribute string and version values: at most 64 characters.
MAX_VALUE_LENGTH = 64
#: A qualified name's identifier part: a C identifier of at most 32 characters.
C_IDENTIFIER_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,31}$")
STANDARD_PREFIX = "resource.kubernetes.io/"
TAINT_KEY = "rayaccel.io/unhealthy"
_SEMVER_RE = re.compile(r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$")
_PCI_RE = re.compile(r"^([0-9a-fA-F]{4,8}):([0-9a-fA-F]{2}):([0-9a-fA-F]{2})\.([0-7])$")
_PCIE_ROOT_RE = re.compile(r"^pci[0-9a-f]{4}:[0-9a-f]{2}$")


def export(inventory: NodeInventory, options: ExportOptions) -> Exported:
    node = node_name(inventory, options)
    slices: list[dict[str, Any]] = []
    warnings: list[str] = []
    for family in families_with_devices(inventory, "dra"):
        driver = scheduler_name(family, "dra_driver", "dra")
        devices = list(_devices(family, warnings))
        counter_sets = [counter_set(family, d) for d in family.devices if d.partitions]
        chunks: list[tuple[str, list[dict[str, Any]]]] = [("devices", chunk) for chunk in split(devices)]
        chunks += [("sharedCounters", counter_sets[i:i + MAX_COUNTER_SETS])
                   for i in range(0, len(counter_sets), MAX_COUNTER_SETS)]
        for number, (field, chunk) in enumerate(chunks):
            slices.append({
                "apiVersion": API_VERSION, "kind": "ResourceSlice",
                "metadata": {"name": f"{node}-{driver}-{number}"},
                "spec": {"driver": driver, "nodeName": node,
                         "pool": {"name": node, "generation": options.generation,
                                  "resourceSliceCount": len(chunks)},
                         field: chunk},
            })
    text = yaml.safe_dump_all(slices, sort_keys=False, default_flow_style=False)
    return Exported(text=text, data={"apiVersion": "v1", "kind": "List", "items": slices},
                    warnings=tuple(warnings))


def split(devices: list[dict[str, Any]]) -> Iterator[list[dict[str, Any]]]:
    """The devices in order, in slices the API takes: a slice ends before it would pass 128 devices, or
    64 once one of its devices has taints."""
    chunk: list[dict[str, Any]] = []
    tainted = False
    for device in devices:
        limited = "taints" in device or "consumesCounters" in device
        limit = MAX_DEVICES_WITH_TAINTS if tainted or limited else MAX_DEVICES
        if len(chunk) + 1 > limit:
            yield chunk
            chunk, tainted = [], False
        chunk.append(device)
        tainted = tainted or limited
    if chunk:
        yield chunk


def device_name(kind: str, unit: str) -> str:
    """A DNS label for a unit: ``<unit kind>-<unit id>``, lower-cased, other characters as '-'."""
    text = re.sub(r"[^a-z0-9-]+", "-", f"{kind}-{unit}".lower()).strip("-")
    return re.sub(r"-{2,}", "-", text)[:63].rstrip("-")


def counter_set_name(family: FamilyInventory, device: Device) -> str:
    """The counter set of a partitioned device: ``<unit kind>-<index>-counters``, a DNS label."""
    return device_name(family.family.unit, f"{device.index}-counters")


def _counters(memory_mib: int | None, compute: int | None, memory_slices: int | None) -> dict[str, Any]:
    counters: dict[str, Any] = {}
    if memory_mib is not None:
        counters["memory"] = {"value": f"{memory_mib}Mi"}
    if compute is not None:
        counters["compute-slices"] = {"value": str(compute)}
    if memory_slices is not None:
        counters["memory-slices"] = {"value": str(memory_slices)}
    return counters


def counter_set(family: FamilyInventory, device: Device) -> dict[str, Any]:
    """What a partitioned device has to share out among its partitions."""
    capacity = device.partition_capacity
    memory = device.memory_mib
    if memory is None and all(p.memory_mib is not None for p in device.partitions):
        memory = sum(device.partition_memory_mib())
    counters = _counters(memory, capacity.compute_slices if capacity else None,
                         capacity.memory_slices if capacity else None)
    return {"name": counter_set_name(family, device), "counters": counters or {"partitions": {
        "value": str(len(device.partitions))}}}


def _consumes(family: FamilyInventory, device: Device, position: int) -> dict[str, Any]:
    """What one partition takes of its device's counter set (the same counters the set has). Memory it shares with
    others (a compute instance's, its GPU instance's) is none of its own: taken per partition, the set would run
    out before every partition the device has is allocated."""
    partition = device.partitions[position]
    offered = counter_set(family, device)["counters"]
    memory = None if partition.shared_memory is not None else partition.memory_mib
    wanted = _counters(memory, partition.compute_slices, partition.memory_slices)
    counters = {k: v for k, v in wanted.items() if k in offered} or {"partitions": {"value": "1"}}
    return {"counterSet": counter_set_name(family, device), "counters": counters}


def _partition_devices(family: FamilyInventory, device: Device, health: dict[str, HealthReport],
                       names: set[str], warnings: list[str]) -> Iterator[dict[str, Any]]:
    for position, partition in enumerate(device.partitions):
        name = device_name(family.family.unit, f"{device.index}-{partition.kind}-{position}")
        if name in names:
            raise ExportError(f"--format dra: family {family.family.name!r} has two devices named {name!r}; "
                              "device indexes must be unique on the node")
        names.add(name)
        # The parent's fault drains every partition; a partition's own fault drains only it.
        report = health.get(device.id)
        own = health.get(partition.id)
        if own is not None and (report is None or report.state != "unhealthy"):
            report = own
        attributes, capacity = _attributes(family, device, partition.id, report, warnings, name,
                                           partition=position)
        entry: dict[str, Any] = {"name": name, "attributes": attributes}
        if capacity:
            entry["capacity"] = capacity
        entry["consumesCounters"] = [_consumes(family, device, position)]
        taint = _taint(report, bool({partition.id, device.id} & _degraded_by_policy(family)))
        if taint:
            entry["taints"] = [taint][:MAX_TAINTS]
        yield entry


def _devices(family: FamilyInventory, warnings: list[str]) -> Iterator[dict[str, Any]]:
    health = {h.device: h for h in family.health}
    names: set[str] = set()
    for device in family.devices:
        if device.partitions:
            yield from _partition_devices(family, device, health, names, warnings)
            continue
        units = device.unit_ids
        for position, unit in enumerate(units):
            name = device_name(family.family.unit, unit)
            if not name or name in names:  # a unit id that sanitises to a name already taken
                name = device_name(family.family.unit, f"{device.index}-{position}")
            if name in names:
                raise ExportError(f"--format dra: family {family.family.name!r} has two units named {name!r}; "
                                  "unit ids must be unique on the node")
            names.add(name)
            entry: dict[str, Any] = {"name": name}
            attributes, capacity = _attributes(family, device, unit, health.get(device.id), warnings, name)
            entry["attributes"] = attributes
            if capacity:
                entry["capacity"] = capacity
            taint = _taint(health.get(device.id), device.id in _degraded_by_policy(family))
            if taint:
                entry["taints"] = [taint][:MAX_TAINTS]
            yield entry


def _degraded_by_policy(family: FamilyInventory) -> set[str]:
    """Devices (and partitions) the operator's health policy keeps scheduling although a reason degrades them."""
    return {d.device for d in family.decisions if d.action in ("degrade", "count")}


def _taint(report: HealthReport | None, degraded_by_policy: bool = False) -> dict[str, str] | None:
    """An unhealthy device's taint, ``NoSchedule`` (eviction is the admin's: a DeviceTaintRule with NoExecute),
    its first fatal reason as the value; a device the health policy degrades, effect ``None`` (Kubernetes 1.35
    and later): claims still land on it, and the taint says why it is degraded."""
    if report is None or report.state == "healthy":
        return None
    if report.state == "unhealthy":
        reason = next((r.code for r in report.reasons if r.fatal), None) or next(
            (r.code for r in report.reasons), "unhealthy")
        return {"key": TAINT_KEY, "value": to_label_value(reason) or "unhealthy", "effect": "NoSchedule"}
    if degraded_by_policy and report.state == "degraded":
        reason = next((r.code for r in report.reasons), "degraded")
        return {"key": TAINT_KEY, "value": to_label_value(reason) or "degraded", "effect": "None"}
    return None


def _typed(value: object) -> dict[str, Any]:
    if isinstance(value, bool):
        return {"bool": value}
    if isinstance(value, int):
        return {"int": value}
    return {"string": str(value)}


def _version(value: str) -> dict[str, Any]:
    """A semantic version as DRA's version type (comparable in CEL), anything else as a string."""
    return {"version": value} if _SEMVER_RE.fullmatch(value) else {"string": value}


def pci_bus_id(value: str | None) -> str | None:
    """``resource.kubernetes.io/pciBusID``'s extended BDF form (``0000:1b:00.0``), or None."""
    match = _PCI_RE.match(value or "")
    if not match:
        return None
    domain, bus, dev, function = match.groups()
    if int(domain, 16) > 0xFFFF:
        return None
    return f"{int(domain, 16):04x}:{bus}:{dev}.{function}".lower()


def _attributes(family: FamilyInventory, device: Device, unit: str, report: HealthReport | None,
                warnings: list[str], name: str, partition: int | None = None) -> tuple[dict[str, Any], dict[str, Any]]:
    """The device's (or its partition's) attributes and capacity, most useful first, within the API's limits."""
    wanted: list[tuple[str, dict[str, Any]]] = [("unitId", {"string": unit}), ("index", {"int": device.index}),
                                                ("uuid", {"string": device.id})]
    if device.product_name:  # a tool may print none
        wanted.append(("productName", {"string": device.product_name}))
    if partition is not None:
        part = device.partitions[partition]
        wanted[2] = ("parentUuid", {"string": device.id})
        wanted += [("partitionKind", {"string": part.kind}), ("profile", {"string": part.profile})]
    if device.sku:
        wanted.append(("sku", {"string": device.sku}))
    if family.accelerator_type:
        wanted.append(("acceleratorType", {"string": family.accelerator_type}))
    if device.architecture:
        wanted.append(("architecture", {"string": device.architecture}))
    if device.driver_version:
        wanted.append(("driverVersion", _version(device.driver_version)))
    if device.runtime_version:
        wanted.append(("runtimeVersion", _version(device.runtime_version)))
    bus_id = pci_bus_id(device.pci_bus_id)
    if bus_id:
        wanted.append((STANDARD_PREFIX + "pciBusID", {"string": bus_id}))
    elif device.pci_bus_id:
        warnings.append(f"dra: device {name}: PCI bus id {device.pci_bus_id!r} is not in extended BDF form; "
                        "resource.kubernetes.io/pciBusID left out")
    root = device.attributes.get("pcie_root")
    if isinstance(root, str) and _PCIE_ROOT_RE.fullmatch(root):
        wanted.append((STANDARD_PREFIX + "pcieRoot", {"string": root}))
    if device.numa_node is not None:
        wanted.append(("numaNode", {"int": device.numa_node}))
    domain = next((d for d in family.topology.domains if device.id in d.members), None)
    if domain is not None:
        wanted += [("scaleUpDomain", {"string": domain.id}), ("scaleUpDomainKind", {"string": domain.kind}),
                   ("scaleUpDomainSize", {"int": domain.size})]
    wanted.append(("health", {"string": report.state if report else "unknown"}))
    taken = {key for key, _ in wanted}
    own = device.partitions[partition].attributes if partition is not None else {}
    for key, value in sorted({**device.attributes, **own}.items()):
        if key == "pcie_root" or (key == DEVICE_FILE and "," in str(value)):
            continue  # pcie_root is published as the standard attribute; a file list is Slurm's, not a DRA value
        if key == DEVICE_FILE and (why := device_path_problem(str(value))):
            raise ExportError(f"--format dra: plugin {family.plugin}, device {excerpt(unit)}: attributes.{key} "
                              f"{excerpt(value)} {why}; the plugin must report the device's file under /dev")
        if not C_IDENTIFIER_RE.fullmatch(key) or key in taken:
            warnings.append(f"dra: device {name}: attribute {key!r} is not a DRA attribute name (a C identifier of "
                            "at most 32 characters, not one rayaccel sets); left out")
            continue
        wanted.append((key, _typed(value)))
    capacity: dict[str, Any] = {}
    memory = _memory_mib(device, unit)
    if memory is not None:
        capacity["memory"] = {"value": f"{memory}Mi"}
    room = MAX_ATTRIBUTES - len(capacity)
    kept: dict[str, Any] = {}
    for key, typed in wanted:
        text = next(iter(typed.values()))
        if isinstance(text, str) and control_characters(text):
            raise ExportError(f"--format dra: plugin {family.plugin}, device {excerpt(unit)}: {key} {excerpt(text)} "
                              "holds control characters, which no DRA attribute value may; fix the plugin's value")
        if isinstance(text, str) and len(text) > MAX_VALUE_LENGTH:
            warnings.append(f"dra: device {name}: attribute {key} is longer than {MAX_VALUE_LENGTH} characters; "
                            "left out")
            continue
        if len(kept) >= room:
            warnings.append(f"dra: device {name}: attribute {key} left out: a device holds at most "
                            f"{MAX_ATTRIBUTES} attributes and capacities")
            continue
        kept[key] = typed
    return kept, capacity


def _memory_mib(device: Device, unit: str) -> int | None:
    """A unit's memory: its partition's, else the device's shared evenly among its units."""
    partition = next((p for p in device.partitions if p.id == unit), None)
    if partition is not None and partition.memory_mib is not None:
        return partition.memory_mib
    if device.memory_mib is None:
        return None
    return device.memory_mib // len(device.unit_ids)
