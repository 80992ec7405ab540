"""QTS: a day-zero family with six devices per node in two islands of three joined only by PCIe.

Each island is fully linked by QLink and is its own scale-up domain (``<host>-qlink0``, ``-qlink1``): the
node issue 24 was filed about. Placement tests use it; no other test loads it. Layout read::

    /sys/class/qts/qts<N>/{uuid,qlink,fatal_errors}
    /sys/class/qts/qts<N>/links/<peer uuid>   (content: "<kind> <GB/s>", kind qlink or pcie)
"""

from __future__ import annotations

from pathlib import Path

from rayaccel import (
    Device,
    Domain,
    FamilyDeclaration,
    HealthReason,
    HealthReport,
    Host,
    Link,
    QuantityRule,
    Topology,
    hookimpl,
)

SYSFS = "/sys/class/qts"
HERE = Path(__file__).parent
_KINDS = {"qlink": "other", "pcie": "pcie"}


@hookimpl
def rayaccel_family() -> FamilyDeclaration:
    return FamilyDeclaration(name="qts", vendor="QTS Labs", resource_name="QTS",
                             visible_devices_env_var="QTS_VISIBLE_DEVICES",
                             quantity_rule=QuantityRule(kind="whole"), spec_version="1.0")


@hookimpl
def rayaccel_fixture_dirs() -> list[str]:
    return [str(HERE / "qts_fixtures")]


def _read(host: Host, path: str) -> str:
    return host.read_text(path).strip()


@hookimpl
def rayaccel_discover(host: Host) -> list[Device]:
    if not host.is_dir(SYSFS):
        return []
    devices = [Device(index=int(path.rsplit("qts", 1)[1]), id=_read(host, f"{path}/uuid"), product_name="QTS Q1")
               for path in host.glob(f"{SYSFS}/qts*")]
    return sorted(devices, key=lambda d: d.index)


@hookimpl
def rayaccel_topology(host: Host, devices: list[Device]) -> Topology:
    by_uuid = {d.id: d for d in devices}
    links = []
    domains: dict[str, list[str]] = {}
    for device in devices:
        base = f"{SYSFS}/qts{device.index}"
        domains.setdefault(f"{host.name}-{_read(host, f'{base}/qlink')}", []).append(device.id)
        for peer in host.list_dir(f"{base}/links"):
            if peer in by_uuid and device.id < peer:
                kind, gbps = _read(host, f"{base}/links/{peer}").split()
                links.append(Link(a=device.id, b=peer, kind=_KINDS[kind], bandwidth_gbps=float(gbps)))
    return Topology(links=links, domains=[Domain(kind="other", id=domain, size=len(members), members=members)
                                          for domain, members in sorted(domains.items())])


@hookimpl
def rayaccel_health(host: Host, devices: list[Device]) -> list[HealthReport]:
    reports = []
    for device in devices:
        fatal = int(_read(host, f"{SYSFS}/qts{device.index}/fatal_errors"))
        reasons = [HealthReason(code="qts-fatal", message=f"{fatal} fatal errors", fatal=True)] if fatal else []
        reports.append(HealthReport(device=device.id, state="unhealthy" if fatal else "healthy", reasons=reasons))
    return reports
