"""The Neuron plugin's hooks: thin, each one calls the module that owns the concept."""

from __future__ import annotations

import rayaccel
from rayaccel import hookimpl
from rayaccel_neuron import discovery, health, instance, metrics, probe, sku_fixture, topology, visibility


@hookimpl
def rayaccel_family() -> rayaccel.FamilyDeclaration:
    return rayaccel.FamilyDeclaration(
        name="neuron", vendor="AWS", resource_name="neuron_cores",
        visible_devices_env_var=visibility.VISIBLE_CORES, quantity_rule=rayaccel.QuantityRule(kind="whole"),
        spec_version="1.0", unit="core",
        support=rayaccel.SupportInfo(maintainers=["rayaccel maintainers", "rayaccel Neuron reviewers"],
                                     contact="https://github.com/rayaccel/rayaccel/issues", license="Apache-2.0",
                                     tested_ray_versions=["2.60.0"]),
        # the Neuron device plugin's per-core resource (the unit is a NeuronCore); /dev/neuron<N> per device
        schedulers=rayaccel.SchedulerNames(kubernetes_resource="aws.amazon.com/neuroncore", dra_driver="neuron.aws.com",
                                           slurm_gres="neuron", device_files=["/dev/neuron{index}"]),
        health_reasons=rayaccel.ReasonCode.table(health.REASONS),
    )


@hookimpl
def rayaccel_discover(host: rayaccel.Host) -> list[rayaccel.Device]:
    return discovery.devices_of(host, probe.read_neuron_ls(host))


@hookimpl
def rayaccel_topology(host: rayaccel.Host, devices: list[rayaccel.Device]) -> rayaccel.Topology:
    return topology.topology_of(devices, instance.ultraserver_place(host, instance.instance_type(host)))


rayaccel_health = hookimpl(health.health_of)
rayaccel_metrics = hookimpl(metrics.metrics_of)


@hookimpl
def rayaccel_resources(host: rayaccel.Host, devices: list[rayaccel.Device],
                       topology: rayaccel.Topology) -> rayaccel.ResourceContribution:
    return rayaccel.ResourceContribution(accelerator_type="aws-neuron-core")  # Ray's, and instance-types.yaml's


@hookimpl
def rayaccel_labels(host: rayaccel.Host, inventory: rayaccel.FamilyInventory) -> dict[str, str]:
    labels = {}
    first = inventory.devices[0] if inventory.devices else None
    if first is not None:
        if "instance_type" in first.attributes:
            labels["aws.amazon.com/neuron.instance-type"] = str(first.attributes["instance_type"])
        labels["aws.amazon.com/neuron.logical-nc-config"] = str(first.attributes.get("logical_nc_config", 1))
    return labels


rayaccel_parse_visible = hookimpl(visibility.parse_visible_cores)


@hookimpl
def rayaccel_transports() -> list[rayaccel.TransportSpec]:
    # NeuronLink has no Ray tensor transport. EFA does, for host-staged tensors: Ray's built-in NIXL,
    # whose libfabric backend runs over EFA. Neuron device memory itself is not registered with it.
    return [rayaccel.TransportSpec(name="NIXL", devices=["cpu"], link_kinds=["efa"], one_sided=True,
                                   manager_class="ray.experimental.rdt.nixl_tensor_transport:NixlTensorTransport",
                                   builtin_in_ray=True)]


rayaccel_fixture_for_sku = hookimpl(sku_fixture.rewrite_fixture)
