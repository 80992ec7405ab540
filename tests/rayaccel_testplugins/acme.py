"""ACME: a family Ray does not know, probed through sysfs like many young accelerator drivers.

Layout read (as an out-of-tree kernel driver would expose it)::

    /sys/class/acme/acme<N>/{uuid,product,memory_mib,pci_bus_id,numa_node,state,fatal_errors}
    /sys/class/acme/acme<N>/links/<peer uuid>   (content: bandwidth in GB/s)
    /sys/module/acme/version
"""

from __future__ import annotations

from pathlib import Path

from rayaccel import (
    Affinity,
    Device,
    FamilyDeclaration,
    HealthReason,
    HealthReport,
    Host,
    Link,
    MetricSample,
    QuantityRule,
    ResourceContribution,
    SchedulerNames,
    SupportInfo,
    Topology,
    hookimpl,
    report_problem,
)
from rayaccel.catalog import load_catalog
from rayaccel.labels import to_label_value

SYSFS = "/sys/class/acme"
HERE = Path(__file__).parent


@hookimpl
def rayaccel_family() -> FamilyDeclaration:
    return FamilyDeclaration(
        name="acme", vendor="ACME Corp", resource_name="ACME", visible_devices_env_var="ACME_VISIBLE_DEVICES",
        quantity_rule=QuantityRule(kind="whole"), spec_version="1.0",
        support=SupportInfo(maintainers=["Wile E. Coyote", "Road Runner"], contact="https://acme.example/support",
                            license="Apache-2.0", tested_ray_versions=["2.60.0"]),
        schedulers=SchedulerNames(kubernetes_resource="acme.example/acme", dra_driver="acme.acme.example",
                                  slurm_gres="acme", device_files=["/dev/acme{index}"]),
    )


@hookimpl
def rayaccel_fixture_dirs() -> list[str]:
    return [str(HERE / "acme_fixtures")]


def _read(host: Host, path: str) -> str:
    return host.read_text(path).strip()


def _number(host: Host, path: str) -> int | None:
    """An integer attribute; None (reported) when the driver left it missing or unreadable."""
    try:
        value = int(_read(host, path))
        if abs(value) < 2**63:  # the driver's attributes are 64-bit: more digits are no value it wrote
            return value
    except (FileNotFoundError, IsADirectoryError, ValueError):
        pass
    report_problem("unreadable-attribute", f"{path} is missing or not a number; read as unknown")
    return None


@hookimpl
def rayaccel_discover(host: Host) -> list[Device]:
    if not host.is_dir(SYSFS):
        return []
    driver = _read(host, "/sys/module/acme/version") if host.exists("/sys/module/acme/version") else None
    devices = []
    for path in host.glob(f"{SYSFS}/acme*"):
        index = int(path.rsplit("acme", 1)[1])
        try:
            if host.exists(f"{path}/state") and _read(host, f"{path}/state") == "lost":
                continue  # a lost device disappears from the bus, as it would on real hardware
            devices.append(Device(
                index=index, id=_read(host, f"{path}/uuid"),
                # Some drivers print no product name: the catalog then tells SKUs apart by match.fields.
                product_name=_read(host, f"{path}/product") if host.exists(f"{path}/product") else "",
                memory_mib=_number(host, f"{path}/memory_mib"), pci_bus_id=_read(host, f"{path}/pci_bus_id") or None,
                numa_node=_number(host, f"{path}/numa_node"), driver_version=driver,
            ))
        except (FileNotFoundError, IsADirectoryError, ValueError) as e:  # ValueError: pydantic's, an empty id
            report_problem("unreadable-device", f"{path} cannot be read ({type(e).__name__}); it is left out")
    return sorted(devices, key=lambda d: d.index)


@hookimpl
def rayaccel_topology(host: Host, devices: list[Device]) -> Topology:
    by_uuid = {d.id: d for d in devices}
    links = []
    for device in devices:
        base = f"{SYSFS}/acme{device.index}/links"
        for peer in host.list_dir(base) if host.is_dir(base) else []:
            bandwidth = _number(host, f"{base}/{peer}") if peer in by_uuid and device.id < peer else None
            if bandwidth is not None:
                links.append(Link(a=device.id, b=peer, kind="other", bandwidth_gbps=float(bandwidth)))
    # Each card's place, as discovery read it: the topology is where consumers look for NUMA nodes (RAC258).
    affinities = [Affinity(device=d.id, numa_node=d.numa_node) for d in devices if d.numa_node is not None]
    return Topology(links=links, affinities=affinities)


def health_from_count(device: str, fatal: int | None) -> HealthReport:
    """A card's health from its fatal-error count: unknown where the counter cannot be read (None), unhealthy
    from the first error."""
    if fatal is None:
        return HealthReport(device=device, state="unknown", reasons=[
            HealthReason(code="acme-counters-unreadable", message="the fatal-error counter cannot be read")])
    if fatal:
        return HealthReport(device=device, state="unhealthy", reasons=[
            HealthReason(code="acme-fatal", message=f"{fatal} fatal errors", fatal=True)])
    return HealthReport(device=device, state="healthy")


@hookimpl
def rayaccel_health(host: Host, devices: list[Device]) -> list[HealthReport]:
    reports = []
    for device in devices:
        path = f"{SYSFS}/acme{device.index}"
        fatal = _number(host, f"{path}/fatal_errors")
        if host.exists(f"{path}/state") and _read(host, f"{path}/state") == "lost":  # lost since discovery
            reports.append(HealthReport(device=device.id, state="unhealthy", reasons=[
                HealthReason(code="acme-lost", message="the card fell off the bus", fatal=True)]))
        else:
            reports.append(health_from_count(device.id, fatal))
    return reports


@hookimpl
def rayaccel_metrics(host: Host, devices: list[Device]) -> list[MetricSample]:
    return [MetricSample(device=d.id, name="memory_total", unit="bytes", value=(d.memory_mib or 0) * 2**20)
            for d in devices]


@hookimpl
def rayaccel_resources(host: Host, devices: list[Device], topology: Topology) -> ResourceContribution:
    # The model is the product name's last word; as a label value, whatever the driver prints ("R1 (rev B)").
    name = devices[0].product_name if devices else None
    return ResourceContribution(accelerator_type=to_label_value(name.split()[-1]) or None if name else None)


@hookimpl
def rayaccel_sku_catalog():  # type: ignore[no-untyped-def]
    return load_catalog(HERE / "acme-skus.yaml")
