"""The TPU plugin's hooks: thin, each one calls the module that owns the concept."""

from __future__ import annotations

import rayaccel
from rayaccel import hookimpl
from rayaccel_tpu import discovery, health, metrics, podtype, probe, sku_fixture, slice_info, topology, visibility

RAY_TPU_LABELS = {"name": "ray.io/tpu-slice-name", "worker": "ray.io/tpu-worker-id",
                  "topology": "ray.io/tpu-topology", "pod_type": "ray.io/tpu-pod-type"}


@hookimpl
def rayaccel_family() -> rayaccel.FamilyDeclaration:
    return rayaccel.FamilyDeclaration(
        name="tpu", vendor="Google", resource_name="TPU", visible_devices_env_var=visibility.VISIBLE_CHIPS,
        quantity_rule=rayaccel.QuantityRule(kind="choices", choices=[1, 2, 4, 8]), spec_version="1.0", unit="chip",
        support=rayaccel.SupportInfo(maintainers=["rayaccel maintainers", "rayaccel TPU reviewers"],
                                     contact="https://github.com/rayaccel/rayaccel/issues", license="Apache-2.0",
                                     tested_ray_versions=["2.60.0"]),
        ray_labels=list(RAY_TPU_LABELS.values()),  # the slice labels Ray's own TPU manager sets
        # the sub-host bounds Ray's TPU manager writes beside TPU_VISIBLE_CHIPS for one or two chips
        visible_env_companions=[visibility.CHIPS_PER_HOST_BOUNDS, visibility.HOST_BOUNDS],
        # GKE's TPU resource; the TPU VM's chips are /dev/accel<N>
        schedulers=rayaccel.SchedulerNames(kubernetes_resource="google.com/tpu", dra_driver="tpu.google.com",
                                           slurm_gres="tpu", device_files=["/dev/accel{index}"]),
        health_reasons=rayaccel.ReasonCode.table(health.REASONS),
    )


rayaccel_discover = hookimpl(discovery.devices_of)


@hookimpl
def rayaccel_topology(host: rayaccel.Host, devices: list[rayaccel.Device]) -> rayaccel.Topology:
    domain = topology.slice_domain(slice_info.read_slice_info(host), devices)
    return rayaccel.Topology(links=topology.ici_links(devices), domains=[domain] if domain else [])


rayaccel_health = hookimpl(health.health_of)
rayaccel_metrics = hookimpl(metrics.sample_metrics)


@hookimpl
def rayaccel_resources(host: rayaccel.Host, devices: list[rayaccel.Device],
                       topology: rayaccel.Topology) -> rayaccel.ResourceContribution:
    info = slice_info.read_slice_info(host, report=True)
    extra: dict[str, float] = {}
    if info.complete and devices:
        assert info.name is not None and info.pod_type is not None
        extra[info.name] = 1.0
        if info.worker_id == 0:
            extra[podtype.head_resource(info.pod_type)] = 1.0
    accel_type = podtype.accelerator_type(info.pod_type) if info.pod_type else None
    if accel_type is None and devices:
        generation = next((g for g in (probe.PCI_DEVICE_GENERATIONS.get(d.pci_device_id or "") for d in devices)
                           if g), None)
        accel_type = podtype.accelerator_type(generation + "-1") if generation else None
    if accel_type is None:
        # No valid pod type and no PCI id naming the generation: Ray reports no accelerator type here, and
        # so does the plugin (rather than a made-up one from the product name).
        return rayaccel.ResourceContribution(no_accelerator_type=True, extra=extra)
    return rayaccel.ResourceContribution(accelerator_type=accel_type, extra=extra)


@hookimpl
def rayaccel_labels(host: rayaccel.Host, inventory: rayaccel.FamilyInventory) -> dict[str, str]:
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


# No rayaccel_transports (its default, none, is the answer): ICI carries XLA collectives inside a JAX/PyTorch-XLA
# program. Ray 2.60 has no tensor transport for TPU memory and no TensorTransportManager moves XLA buffers between
# actors, so none is declared.


rayaccel_fixture_for_sku = hookimpl(sku_fixture.rewrite_fixture)
