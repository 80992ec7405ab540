"""rayaccel hooks for NVIDIA GPUs. Thin: the work is in the modules named for each concept."""

from __future__ import annotations

from collections.abc import Sequence

import rayaccel
from rayaccel import hookimpl
from rayaccel_nvidia import discovery, health, metrics, mig_files, naming, sku_fixture, topology, transport, visibility
from rayaccel_nvidia.probe import NvmlTimeout, bounded, open_nvml, open_nvml_or_why


@hookimpl
def rayaccel_family() -> rayaccel.FamilyDeclaration:
    return rayaccel.FamilyDeclaration(
        name="nvidia", vendor="NVIDIA", resource_name="GPU", visible_devices_env_var="CUDA_VISIBLE_DEVICES",
        quantity_rule=rayaccel.QuantityRule(kind="fractional"), spec_version="1.0", unit="device",
        support=rayaccel.SupportInfo(maintainers=["rayaccel maintainers", "rayaccel NVIDIA plugin team"],
                                     contact="https://github.com/rayaccel/rayaccel/issues", license="Apache-2.0",
                                     tested_ray_versions=["2.60.0"]),
        # NVIDIA's device plugin, DRA driver and Slurm's gres.conf (AutoDetect=nvml) names
        schedulers=rayaccel.SchedulerNames(kubernetes_resource="nvidia.com/gpu", dra_driver="gpu.nvidia.com",
                                           slurm_gres="gpu", device_files=["/dev/nvidia{index}"],
                                           # NVIDIA's k8s-device-plugin, mig-strategy=mixed: nvidia.com/mig-1g.10gb
                                           kubernetes_partition_resource="nvidia.com/mig-{profile}"),
        health_reasons=rayaccel.ReasonCode.table(health.REASONS),
    )


@hookimpl
def rayaccel_discover(host: rayaccel.Host) -> list[rayaccel.Device]:
    def probe() -> list[rayaccel.Device]:
        nvml, unavailable = open_nvml_or_why(host)
        devices = [] if nvml is None else mig_files.with_device_files(host, nvml, discovery.discover(nvml))
        if not devices:
            discovery.unseen_gpus_problem(host, unavailable)
        return devices

    return bounded(probe, "discovering GPUs")


@hookimpl
def rayaccel_topology(host: rayaccel.Host, devices: Sequence[rayaccel.Device]) -> rayaccel.Topology:
    def probe() -> rayaccel.Topology:
        nvml = open_nvml(host)
        return rayaccel.Topology() if nvml is None else topology.topology(nvml, devices, host.name)

    return bounded(probe, "reading NVLink topology")


@hookimpl
def rayaccel_health(host: rayaccel.Host, devices: Sequence[rayaccel.Device]) -> list[rayaccel.HealthReport]:
    def probe() -> list[rayaccel.HealthReport]:
        nvml = open_nvml(host)
        if nvml is None:
            return [rayaccel.HealthReport(device=d.id, state="unknown", reasons=[rayaccel.HealthReason(
                code="nvml-unavailable", message="NVML is no longer available")]) for d in devices]
        return health.health(nvml, devices)

    try:
        return bounded(probe, "checking GPU health")
    except NvmlTimeout as e:
        # A hung driver: nothing is known about the GPUs, so they stay schedulable but flagged.
        return [rayaccel.HealthReport(device=d.id, state="unknown",
                                      reasons=[rayaccel.HealthReason(code="nvml-timeout", message=str(e))])
                for d in devices]


@hookimpl
def rayaccel_metrics(host: rayaccel.Host, devices: Sequence[rayaccel.Device]) -> list[rayaccel.MetricSample]:
    def probe() -> list[rayaccel.MetricSample]:
        nvml = open_nvml(host)
        return [] if nvml is None else metrics.metrics(nvml, devices)

    return bounded(probe, "sampling GPU metrics")


@hookimpl
def rayaccel_resources(host: rayaccel.Host, devices: Sequence[rayaccel.Device],
                       topology: rayaccel.Topology) -> rayaccel.ResourceContribution:
    readable = [d for d in devices if discovery.UNREADABLE not in d.attributes]
    derived = naming.accelerator_type(readable[0].product_name) if readable else None
    return rayaccel.ResourceContribution(accelerator_type=derived)


@hookimpl
def rayaccel_labels(host: rayaccel.Host, inventory: rayaccel.FamilyInventory) -> dict[str, str]:
    from rayaccel import to_label_value

    labels: dict[str, str] = {}
    cliques = [d for d in inventory.topology.domains if d.kind == "nvlink-clique"]
    if cliques:
        labels["nvidia.com/gpu.clique"] = cliques[0].id
    readable = [d for d in inventory.devices if discovery.UNREADABLE not in d.attributes]
    if readable:
        first = readable[0]
        labels["nvidia.com/gpu.product"] = to_label_value(first.product_name)
        if first.memory_mib is not None:
            labels["nvidia.com/gpu.memory"] = str(first.memory_mib)
        cc = str(first.attributes.get("compute_capability", ""))
        if "." in cc:
            labels["nvidia.com/gpu.compute.major"], labels["nvidia.com/gpu.compute.minor"] = cc.split(".", 1)
        if "mig_mode" in first.attributes:
            labels["nvidia.com/mig.capable"] = "true"
    return labels


rayaccel_parse_visible = hookimpl(visibility.parse_visible)
rayaccel_transports = hookimpl(transport.transports)
rayaccel_fixture_for_sku = hookimpl(sku_fixture.fixture_for_sku)
