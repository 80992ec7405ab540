"""rayaccel hooks for Intel Gaudi (HPU). Thin: each hook probes the host once and hands off to a module."""

from __future__ import annotations

from typing import Any

import rayaccel
from rayaccel import hookimpl
from rayaccel_gaudi import sku_fixture
from rayaccel_gaudi.discovery import devices_of
from rayaccel_gaudi.health import REASONS, health_of
from rayaccel_gaudi.metrics import metrics_of
from rayaccel_gaudi.probe import probe
from rayaccel_gaudi.topology import topology_of


def quiet_probe(host: rayaccel.Host, **kwargs: Any) -> Any:
    """The probe for hooks after discovery: what is wrong with the tool's output was reported by discovery."""
    with rayaccel.collect_problems():
        return probe(host, **kwargs)


@hookimpl
def rayaccel_family() -> rayaccel.FamilyDeclaration:
    return rayaccel.FamilyDeclaration(
        name="gaudi", vendor="Intel", resource_name="HPU", visible_devices_env_var="HABANA_VISIBLE_MODULES",
        quantity_rule=rayaccel.QuantityRule(kind="whole"), spec_version="1.0", unit="device",
        support=rayaccel.SupportInfo(maintainers=["rayaccel maintainers", "rayaccel Gaudi plugin team"],
                                     contact="https://github.com/rayaccel/rayaccel/issues", license="Apache-2.0",
                                     tested_ray_versions=["2.60.0"]),
        # the Habana device plugin's resource; Slurm's gres.conf names Gaudi 'gpu' with /dev/accel/accel<N>
        schedulers=rayaccel.SchedulerNames(kubernetes_resource="habana.ai/gaudi", dra_driver="gaudi.habana.ai",
                                           slurm_gres="gpu", device_files=["/dev/accel/accel{index}"]),
        health_reasons=rayaccel.ReasonCode.table(REASONS),
    )


@hookimpl
def rayaccel_discover(host: rayaccel.Host) -> list[rayaccel.Device]:
    return devices_of(probe(host, port_types=True, port_states=True))


@hookimpl
def rayaccel_topology(host: rayaccel.Host, devices: list[rayaccel.Device]) -> rayaccel.Topology:
    return topology_of(quiet_probe(host, port_types=True, port_states=True), devices, host.name)


@hookimpl
def rayaccel_health(host: rayaccel.Host, devices: list[rayaccel.Device]) -> list[rayaccel.HealthReport]:
    # A DOWN port matters when it is internal (scale-up): health needs both port listings.
    return health_of(quiet_probe(host, port_types=True, port_states=True), devices)


@hookimpl
def rayaccel_metrics(host: rayaccel.Host, devices: list[rayaccel.Device]) -> list[rayaccel.MetricSample]:
    return metrics_of(quiet_probe(host), devices)


@hookimpl
def rayaccel_resources(host: rayaccel.Host, devices: list[rayaccel.Device],
                       topology: rayaccel.Topology) -> rayaccel.ResourceContribution:
    # Ray names the type "Intel-" + the runtime's device name (GAUDI2), known only once the HPU runtime is
    # initialised; catalogued SKUs map hl-smi's name (HL-225) to it. For others: "Intel-" + hl-smi's name.
    first = devices[0] if devices else None
    # The prefix goes inside the conversion: a long name stays a valid (<= 63 character) label value.
    accelerator_type = rayaccel.to_label_value(f"Intel-{first.product_name}") if first else None
    return rayaccel.ResourceContribution(accelerator_type=accelerator_type)


@hookimpl
def rayaccel_labels(host: rayaccel.Host, inventory: rayaccel.FamilyInventory) -> dict[str, str]:
    first = inventory.devices[0]
    labels = {}
    up = first.attributes.get("scale_out_ports_up")
    if isinstance(up, int):
        labels["habana.ai/scale-out-ports-up"] = str(up)
    return labels


# No rayaccel_transports (its default, none, is the answer): HCCL is not offered, as Ray 2.60's collective library
# (which its collective tensor transports use) has only NCCL and GLOO backends, so there is no HCCL communicator a
# TensorTransportManager could drive.


rayaccel_fixture_for_sku = hookimpl(sku_fixture.rewrite_fixture)
