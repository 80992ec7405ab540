"""The TPU plugin's hooks: thin, each one calls the module that owns the concept."""

from __future__ import annotations

import copy
import re
from typing import Any

from rayaccel import (
    CloudHint,
    Device,
    FamilyDeclaration,
    FamilyInventory,
    HealthReason,
    HealthReport,
    Host,
    MetricSample,
    QuantityRule,
    ResourceContribution,
    SkuRecord,
    SupportInfo,
    Topology,
    TransportSpec,
    hookimpl,
)
from rayaccel_tpu import chips, cloud, ici, metrics, podtype, slice_info, visibility

RAY_TPU_LABELS = {"name": "ray.io/tpu-slice-name", "worker": "ray.io/tpu-worker-id",
                  "topology": "ray.io/tpu-topology", "pod_type": "ray.io/tpu-pod-type"}


@hookimpl
def rayaccel_family() -> FamilyDeclaration:
    return FamilyDeclaration(
        name="tpu", vendor="Google", resource_name="TPU", visible_devices_env_var=visibility.VISIBLE_CHIPS,
        quantity_rule=QuantityRule(kind="choices", choices=[1, 2, 4, 8]), spec_version="1.0", unit="chip",
        support=SupportInfo(maintainers=["rayaccel maintainers", "rayaccel TPU reviewers"],
                            contact="https://github.com/rayaccel/rayaccel/issues", license="Apache-2.0",
                            tested_ray_versions=["2.60.0"]),
        ray_labels=list(RAY_TPU_LABELS.values()),  # the slice labels Ray's own TPU manager sets
    )


@hookimpl
def rayaccel_discover(host: Host) -> list[Device]:
    found = chips.find_chips(host)
    if not found:
        return []  # no TPU here: do not even ask the metadata server
    fallback = None
    if any(chips.chip_generation(c) is None for c in found):
        pod_type = slice_info.read_slice_info(host).pod_type
        fallback = podtype.generation(pod_type) if pod_type else None
    # One Ray TPU unit per chip, or Ray's RAY_TPU_RESOURCE_PER_CHIP units (one per chiplet on TPU7x with 2).
    # A Ray setting, not a fact of the machine: read from this process's env, as Ray and the other hooks do.
    per_chip = visibility.resource_per_chip(report=True)
    # Chips of one host are alike: one with fewer PCI functions than another has lost a chiplet, even where
    # the generation is not in the table (a new SKU).
    widest = max(len(c.nodes) for c in found)
    devices = []
    for chip in found:
        generation = chips.chip_generation(chip) or fallback
        attributes: dict[str, str | int | float | bool] = {"node": chip.node}
        chiplets = max(chips.expected_chiplets(generation), widest)
        if chiplets > 1:
            # Health checks every chiplet's VFIO group, and flags a chip found with fewer than a whole one has.
            attributes |= {"chiplet_nodes": ",".join(chip.nodes), "chiplets": chiplets}
        devices.append(Device(
            index=chip.index, id=chips.chip_id(chip),
            product_name=podtype.product_name(generation) if generation else "Google TPU",
            pci_device_id=chip.pci_device_id, pci_bus_id=chip.pci_bus_id,
            units=visibility.chip_units(chip.index, per_chip) if per_chip > 1 else [],
            attributes=attributes,
        ))
    return devices


@hookimpl
def rayaccel_topology(host: Host, devices: list[Device]) -> Topology:
    domain = ici.slice_domain(slice_info.read_slice_info(host), devices)
    return Topology(links=ici.ici_links(devices), domains=[domain] if domain else [])


@hookimpl
def rayaccel_health(host: Host, devices: list[Device]) -> list[HealthReport]:
    # Chip presence is the one health signal the host exposes without the TPU runtime (libtpu's own
    # health and metrics are a gRPC service inside the workload, not something a node agent can read).
    reports = []
    for device in devices:
        # Every chiplet's device node (two VFIO groups for a TPU7x chip), and how many a whole chip has.
        nodes = [n for n in str(device.attributes.get("chiplet_nodes") or device.attributes.get("node", "")).split(",")
                 if n]
        chiplets = device.attributes.get("chiplets")
        whole = chiplets if isinstance(chiplets, int) and not isinstance(chiplets, bool) else len(nodes)
        lost = [n for n in nodes if not host.exists(n)]
        if lost and len(lost) == len(nodes):
            reports.append(HealthReport(device=device.id, state="unhealthy", reasons=[HealthReason(
                code="tpu-chip-lost", fatal=True, message=f"chip {device.index} ({', '.join(nodes)}) is gone: "
                "the TPU fell off the bus or its driver unbound")]))
        elif lost or len(nodes) < whole:
            # Half a TPU7x chip is no chip the runtime can use: the whole chip is out.
            missing = ", ".join(lost) if lost else f"{whole - len(nodes)} of its {whole} PCI functions"
            reports.append(HealthReport(device=device.id, state="unhealthy", reasons=[HealthReason(
                code="tpu-chiplet-lost", fatal=True, message=f"chip {device.index} has lost a chiplet ({missing}): "
                "one of its PCI functions fell off the bus or its VFIO group is gone")]))
        else:
            reports.append(HealthReport(device=device.id, state="healthy"))
    return reports


@hookimpl
def rayaccel_metrics(host: Host, devices: list[Device]) -> list[MetricSample]:
    return metrics.sample_metrics(host, devices)


@hookimpl
def rayaccel_resources(host: Host, devices: list[Device], topology: Topology) -> ResourceContribution:
    info = slice_info.read_slice_info(host, report=True)
    extra: dict[str, float] = {}
    if info.complete and devices:
        assert info.name is not None and info.pod_type is not None
        extra[info.name] = 1.0
        if info.worker_id == 0:
            extra[podtype.head_resource(info.pod_type)] = 1.0
    accel_type = podtype.accelerator_type(info.pod_type) if info.pod_type else None
    if accel_type is None and devices:
        generation = next((g for g in (chips.PCI_DEVICE_GENERATIONS.get(d.pci_device_id or "") for d in devices)
                           if g), None)
        accel_type = podtype.accelerator_type(generation + "-1") if generation else None
    if accel_type is None:
        # No valid pod type and no PCI id naming the generation: Ray reports no accelerator type here, and
        # so does the plugin (rather than a made-up one from the product name).
        return ResourceContribution(no_accelerator_type=True, extra=extra)
    return ResourceContribution(accelerator_type=accel_type, extra=extra)


@hookimpl
def rayaccel_labels(host: Host, inventory: FamilyInventory) -> dict[str, str]:
    info = slice_info.read_slice_info(host)
    values = {"name": info.name, "worker": None if info.worker_id is None else str(info.worker_id),
              "topology": info.topology, "pod_type": info.pod_type}
    return {RAY_TPU_LABELS[k]: v for k, v in values.items() if v}


@hookimpl
def rayaccel_parse_visible(value: str) -> list[str]:
    return visibility.parse_visible(value)


@hookimpl
def rayaccel_visible_env(unit_ids: list[str]) -> dict[str, str]:
    return visibility.visible_env(unit_ids)


@hookimpl
def rayaccel_transports() -> list[TransportSpec]:
    # ICI carries XLA collectives inside a JAX/PyTorch-XLA program. Ray 2.60 has no tensor transport for
    # TPU memory and no TensorTransportManager moves XLA buffers between actors, so none is declared.
    return []


@hookimpl
def rayaccel_cloud_hints(provider: str, instance_type: str) -> CloudHint | None:
    return cloud.cloud_hint(provider, instance_type)


_UEVENT_PCI_ID = re.compile(r"(?m)^PCI_ID=1AE0:[0-9A-Fa-f]{4}$")


@hookimpl
def rayaccel_fixture_for_sku(fixture: dict[str, Any], sku: SkuRecord) -> dict[str, Any]:
    """Point the fixture's chips at the SKU: PCI device ids in sysfs, and the generation in the pod type."""
    data = copy.deepcopy(fixture)
    host = data.setdefault("host", {})
    files: dict[str, str] = host.setdefault("files", {})
    pci_id = sku.match.pci_device_ids[0].lower() if sku.match.pci_device_ids else None
    for path in list(files):
        if path.endswith("/uevent") and path.startswith("/sys/class/accel/"):
            if pci_id:
                files[path] = _UEVENT_PCI_ID.sub(f"PCI_ID=1AE0:{pci_id[2:].upper()}", files[path])
            else:
                files[path] = _UEVENT_PCI_ID.sub("", files[path])
        elif path.startswith("/sys/kernel/iommu_groups/") and path.endswith("/vendor"):
            if files[path].strip().lower() != chips.GOOGLE_PCI_VENDOR:
                continue
            device_file = path.removesuffix("/vendor") + "/device"
            if pci_id:
                files[device_file] = pci_id + "\n"
            else:
                files.pop(device_file, None)
    generation = sku.accelerator_type.removeprefix("TPU-").lower()
    if sku.accelerator_type.startswith("TPU-") and generation:
        env: dict[str, str] = host.setdefault("env", {})
        if slice_info.ENV_POD_TYPE in env:
            env[slice_info.ENV_POD_TYPE] = _with_generation(env[slice_info.ENV_POD_TYPE], generation)
        for url, answer in host.get("http", {}).items():
            if url.endswith("/" + slice_info.KEY_POD_TYPE) and isinstance(answer, dict) and "body" in answer:
                answer["body"] = _with_generation(answer["body"], generation)
    return data


def _with_generation(pod_type: str, generation: str) -> str:
    size = pod_type.rsplit("-", 1)[-1]
    return f"{generation}-{size}" if size.isdigit() else pod_type
