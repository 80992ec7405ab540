"""The Neuron plugin's hooks: thin, each one calls the module that owns the concept."""

from __future__ import annotations

from typing import Any

from rayaccel import (
    Device,
    FamilyDeclaration,
    FamilyInventory,
    HealthReport,
    Host,
    MetricSample,
    QuantityRule,
    ResourceContribution,
    SchedulerNames,
    SkuRecord,
    SupportInfo,
    Topology,
    TransportSpec,
    hookimpl,
)
from rayaccel_neuron import discovery, health, instance, metrics, probe, sku_fixture, topology, visibility


@hookimpl
def rayaccel_family() -> FamilyDeclaration:
    return FamilyDeclaration(
        name="neuron", vendor="AWS", resource_name="neuron_cores",
        visible_devices_env_var=visibility.VISIBLE_CORES, quantity_rule=QuantityRule(kind="whole"),
        spec_version="1.0", unit="core",
        support=SupportInfo(maintainers=["rayaccel maintainers", "rayaccel Neuron reviewers"],
                            contact="https://github.com/rayaccel/rayaccel/issues", license="Apache-2.0",
                            tested_ray_versions=["2.60.0"]),
        # the Neuron device plugin's per-core resource (the unit is a NeuronCore); /dev/neuron<N> per device
        schedulers=SchedulerNames(kubernetes_resource="aws.amazon.com/neuroncore", dra_driver="neuron.aws.com",
                                  slurm_gres="neuron", device_files=["/dev/neuron{index}"]),
        health_reasons=health.reason_codes(),
    )


@hookimpl
def rayaccel_discover(host: Host) -> list[Device]:
    return discovery.devices_of(host, probe.read_neuron_ls(host))


@hookimpl
def rayaccel_topology(host: Host, devices: list[Device]) -> Topology:
    return topology.topology_of(devices, instance.ultraserver_place(host, instance.instance_type(host)))


@hookimpl
def rayaccel_health(host: Host, devices: list[Device]) -> list[HealthReport]:
    return health.health_of(host, devices)


@hookimpl
def rayaccel_metrics(host: Host, devices: list[Device]) -> list[MetricSample]:
    return metrics.metrics_of(host, devices)


@hookimpl
def rayaccel_resources(host: Host, devices: list[Device], topology: Topology) -> ResourceContribution:
    return ResourceContribution(accelerator_type="aws-neuron-core")  # Ray's, and instance-types.yaml's


@hookimpl
def rayaccel_labels(host: Host, inventory: FamilyInventory) -> dict[str, str]:
    labels = {}
    first = inventory.devices[0] if inventory.devices else None
    if first is not None:
        if "instance_type" in first.attributes:
            labels["aws.amazon.com/neuron.instance-type"] = str(first.attributes["instance_type"])
        labels["aws.amazon.com/neuron.logical-nc-config"] = str(first.attributes.get("logical_nc_config", 1))
    return labels


@hookimpl
def rayaccel_parse_visible(value: str) -> list[str]:
    return visibility.parse_visible_cores(value)


@hookimpl
def rayaccel_transports() -> list[TransportSpec]:
    # NeuronLink has no Ray tensor transport. EFA does, for host-staged tensors: Ray's built-in NIXL,
    # whose libfabric backend runs over EFA. Neuron device memory itself is not registered with it.
    return [TransportSpec(name="NIXL", devices=["cpu"], link_kinds=["efa"], one_sided=True,
                          manager_class="ray.experimental.rdt.nixl_tensor_transport:NixlTensorTransport",
                          builtin_in_ray=True)]


@hookimpl
def rayaccel_fixture_for_sku(fixture: dict[str, Any], sku: SkuRecord) -> dict[str, Any]:
    """Make the fixture's devices the SKU's: neuron-ls memory_size, sysfs device_name, PCI device id."""
    return sku_fixture.rewrite_fixture(fixture, sku)
