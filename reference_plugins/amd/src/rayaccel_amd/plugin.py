"""rayaccel hooks for AMD Instinct GPUs. Thin: each hook probes the host once and hands off to a module."""

from __future__ import annotations

import rayaccel
from rayaccel import hookimpl
from rayaccel_amd import products, sku_fixture, visibility
from rayaccel_amd.discovery import devices_of, unseen_gpus_problem
from rayaccel_amd.health import REASONS, health_of
from rayaccel_amd.metrics import metrics_of
from rayaccel_amd.probe import probe
from rayaccel_amd.topology import topology_of


@hookimpl
def rayaccel_family() -> rayaccel.FamilyDeclaration:
    return rayaccel.FamilyDeclaration(
        name="amd", vendor="AMD", resource_name="GPU", visible_devices_env_var=visibility.HIP_VISIBLE_DEVICES,
        quantity_rule=rayaccel.QuantityRule(kind="fractional"), spec_version="1.0", unit="device",
        support=rayaccel.SupportInfo(maintainers=["rayaccel maintainers", "rayaccel AMD plugin team"],
                                     contact="https://github.com/rayaccel/rayaccel/issues", license="Apache-2.0",
                                     tested_ray_versions=["2.60.0"]),
        # AMD's device plugin and DRA driver; Slurm (AutoDetect=rsmi) gives render nodes, renderD128 = GPU 0
        schedulers=rayaccel.SchedulerNames(kubernetes_resource="amd.com/gpu", dra_driver="gpu.amd.com",
                                           slurm_gres="gpu", device_files=["/dev/dri/renderD{index+128}"],
                                           # AMD's k8s-device-plugin, resource_naming_strategy=mixed: amd.com/cpx_nps4,
                                           # the modes only (the profile also carries the partition's size)
                                           kubernetes_partition_resource="amd.com/{compute_partition}_"
                                                                         "{memory_partition}"),
        health_reasons=rayaccel.ReasonCode.table(REASONS),
    )


@hookimpl
def rayaccel_discover(host: rayaccel.Host) -> list[rayaccel.Device]:
    visibility.check_visible_env(host.environ())
    snapshot = probe(host, parts=("static", "version"))
    unseen_gpus_problem(host, snapshot)
    return devices_of(snapshot)


@hookimpl
def rayaccel_topology(host: rayaccel.Host, devices: list[rayaccel.Device]) -> rayaccel.Topology:
    return topology_of(probe(host, parts=("topology",)), devices, host.name)


@hookimpl
def rayaccel_health(host: rayaccel.Host, devices: list[rayaccel.Device]) -> list[rayaccel.HealthReport]:
    return health_of(probe(host, parts=("metric",)), devices)


@hookimpl
def rayaccel_metrics(host: rayaccel.Host, devices: list[rayaccel.Device]) -> list[rayaccel.MetricSample]:
    return metrics_of(probe(host, parts=("metric",)), devices)


@hookimpl
def rayaccel_resources(host: rayaccel.Host, devices: list[rayaccel.Device],
                       topology: rayaccel.Topology) -> rayaccel.ResourceContribution:
    # For SKUs missing from the catalog: Ray's product table by PCI device id (lower-case keys, Ray's defect
    # fixed); when that fails too, the SDK derives the type from the market name.
    first = devices[0] if devices else None
    accelerator_type = products.accelerator_type_for(first.pci_device_id) if first else None
    return rayaccel.ResourceContribution(accelerator_type=accelerator_type)


@hookimpl
def rayaccel_labels(host: rayaccel.Host, inventory: rayaccel.FamilyInventory) -> dict[str, str]:
    labels = {}
    first = inventory.devices[0]
    for key, label in (("compute_partition", "amd.com/gpu.compute-partition"),
                       ("memory_partition", "amd.com/gpu.memory-partition"),
                       ("gfx_target", "amd.com/gpu.gfx-target")):
        value = first.attributes.get(key)
        if isinstance(value, str) and value:
            labels[label] = value
    return labels


rayaccel_parse_visible = hookimpl(visibility.parse_visible)


@hookimpl
def rayaccel_transports() -> list[rayaccel.TransportSpec]:
    return [
        # What Ray ships: on ROCm its NCCL transport runs over RCCL (torch calls ROCm devices "cuda").
        rayaccel.TransportSpec(name="NCCL", devices=["cuda"], link_kinds=["xgmi", "pcie"], one_sided=False,
                               manager_class="ray.experimental.rdt.collective_tensor_transport:NCCLTensorTransport",
                               builtin_in_ray=True),
        rayaccel.TransportSpec(name="RCCL", devices=["cuda"], link_kinds=["xgmi", "pcie"], one_sided=False,
                               manager_class="rayaccel_amd.transport:RCCLTensorTransport", builtin_in_ray=False),
    ]


rayaccel_fixture_for_sku = hookimpl(sku_fixture.rewrite_fixture)
