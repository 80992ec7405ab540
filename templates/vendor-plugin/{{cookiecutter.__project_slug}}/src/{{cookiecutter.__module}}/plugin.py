{% from "quote.jinja" import q %}
"""rayaccel hooks for the {{ cookiecutter.__family }} family. Thin: the work is in the modules named for
each concept (probe, discovery, topology, health, metrics, sku_fixture)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rayaccel import (
    Device,
    FamilyDeclaration,
    FamilyInventory,
    HealthReason,
    HealthReport,
    Host,
    MetricSample,
    QuantityRule,
    ReasonCode,
    SchedulerNames,
    SkuRecord,
    SupportInfo,
    Topology,
    collect_problems,
    hookimpl,
    report_problem,
    to_label_value,
)

from {{ cookiecutter.__module }} import discovery, health, metrics, probe, sku_fixture, topology
from {{ cookiecutter.__module }}.readings import ProbeError

VENDOR = {{ q(cookiecutter.vendor_name) }}
MAINTAINERS = [
{% for maintainer in cookiecutter.maintainers.split(",") if maintainer.strip() %}
    {{ q(maintainer.strip()) }},
{% endfor %}
]
#: The plugin's own node labels live under the vendor's DNS prefix; rayaccel.io/ and ray.io/ are not ours.
LABEL_PREFIX = "{{ cookiecutter.__label_prefix }}"
# fixtures/ and skus.yaml beside this module are the plugin's simulated hosts and SKU catalog by convention:
# rayaccel finds them without a hook (implement rayaccel_fixture_dirs / rayaccel_sku_catalog to differ).


@hookimpl
def rayaccel_family() -> FamilyDeclaration:
    return FamilyDeclaration(
        name="{{ cookiecutter.__family }}", vendor=VENDOR, resource_name="{{ cookiecutter.resource_name }}",
        visible_devices_env_var="{{ cookiecutter.visible_devices_env_var }}",
        # VENDOR: "fractional" if several tasks may share one device, "choices" for fixed slice sizes.
        quantity_rule=QuantityRule(kind="whole"), spec_version="1.0", unit="device",
        # VENDOR: the Ray versions you test with; the certified tier (RAC302) needs 2+ maintainers.
        support=SupportInfo(maintainers=MAINTAINERS, license="Apache-2.0", tested_ray_versions=["2.60.0"],
                            contact={{ q(cookiecutter.support_contact) }}),
        # What Kubernetes, DRA and Slurm call the devices (rayaccel export). VENDOR: device_files are the
        # character devices of one device; {index} is Device.index, {index+N} that index plus N.
        schedulers=SchedulerNames(kubernetes_resource={{ q(cookiecutter.kubernetes_resource) }},
                                  dra_driver={{ q(cookiecutter.dra_driver) }},
                                  slurm_gres={{ q(cookiecutter.slurm_gres) }},
                                  device_files=["/dev/{{ cookiecutter.__sysfs_class }}{index}"]),
        # The reason codes health reports and how it classifies them (operators' health policies name them).
        health_reasons=ReasonCode.table(health.REASONS),
    )


@hookimpl
def rayaccel_discover(host: Host) -> list[Device]:
    infos = probe.read_devices(host)
    return discovery.to_devices(infos, probe.driver_version(host) if infos else None)


@hookimpl
def rayaccel_topology(host: Host, devices: Sequence[Device]) -> Topology:
    return topology.to_topology(devices, probe.read_links(host, devices))


def _gone(host: Host, devices: Sequence[Device]) -> set[str]:
    """Devices discovery saw that the vendor interface no longer lists (fell off the bus, driver unbound)."""
    with collect_problems():  # what is wrong with the listing itself, discovery reports
        try:
            listed = {info.uuid for info in probe.read_devices(host)}
        except ProbeError:
            return set()  # the listing failed: presence is unknown, not "gone"
    return {d.id for d in devices if d.id not in listed} if listed else set()


@hookimpl
def rayaccel_health(host: Host, devices: Sequence[Device]) -> list[HealthReport]:
    gone = _gone(host, devices)
    try:
        counters = probe.read_health(host, devices)
    except ProbeError as e:
        # Nothing is known: the devices stay schedulable but say why.
        report_problem("health-unavailable", f"{e}; the health of every device is unknown", severity="error")
        reports = [HealthReport(device=d.id, state="unknown", reasons=[HealthReason(code="probe-error",
                                                                                      message=str(e))])
                   for d in devices]
    else:
        reports = health.to_reports(devices, counters)
    # A device that vanished since discovery is not counted, and the node is drained.
    return [HealthReport(device=r.device, state="unhealthy", reasons=[HealthReason(
        code="device-lost", fatal=True, message="the device is no longer listed by the vendor interface")])
        if r.device in gone else r for r in reports]


@hookimpl
def rayaccel_metrics(host: Host, devices: Sequence[Device]) -> list[MetricSample]:
    # Each read on its own: a health query that fails costs the error counters this time, not every reading
    # (best effort, but never silent).
    try:
        stats = probe.read_stats(host, devices)
    except ProbeError as e:
        report_problem("metrics-unavailable", f"{e}; no utilization, temperature, power or memory readings this time")
        stats = {}
    try:
        counters = probe.read_health(host, devices)
    except ProbeError as e:
        report_problem("metrics-unavailable", f"{e}; no error counters this time")
        counters = {}
    return metrics.to_samples(devices, stats, counters)


@hookimpl
def rayaccel_labels(host: Host, inventory: FamilyInventory) -> dict[str, str]:
    product = to_label_value(inventory.devices[0].product_name) if inventory.devices else ""
    return {f"{LABEL_PREFIX}/product": product} if product else {}


@hookimpl
def rayaccel_fixture_for_sku(fixture: dict[str, Any], sku: SkuRecord) -> dict[str, Any]:
    return sku_fixture.fixture_for_sku(fixture, sku)
