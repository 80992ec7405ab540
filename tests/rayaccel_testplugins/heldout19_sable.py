"""Held-out round 19's ``l1`` (issue 46), its part that counts: the python-library bake ``sable`` (the vendor
template's python-library plugin, family ``sable``) reading each device's stats from its library, with the round's
edit in ``read_stats``: ``lib.device_info(d.index)``, the index discovery gave, where the template finds the device
by uuid in the library's listing now (``_listed``/``_index_now``). The library numbers what it finds 0..count-1, anew
once a card is lost (as NVML and amdsmi do). The bake's listing, health (error counters read by uuid, a device no
longer listed lost) and stats are its own; its links, labels and SKU catalog are left out (nothing here reads them).
With ``BY_INDEX = False`` it is the template's reading, the round's control. Its machine: the bake's sable-4 with
its device-3-lost fault, links left out, in heldout19_sable_fixtures/.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rayaccel import (
    Device,
    FamilyDeclaration,
    HealthReason,
    HealthReport,
    Host,
    LibraryAdapter,
    LibraryUnavailable,
    MetricSample,
    QuantityRule,
    SupportInfo,
    hookimpl,
    report_problem,
)

HERE = Path(__file__).resolve().parent
MIB = 2**20
#: l1's edit: stats read at the index discovery gave; False is the template's (the device found by uuid).
BY_INDEX = True


class SimulatedLibrary:
    """The bake's simulated ``sable-lib``: the fixture's keys give the order, the position the index."""

    def __init__(self, data: dict[str, Any]) -> None:
        listed = sorted(((int(k), v) for k, v in (data.get("devices") or {}).items()), key=lambda kv: kv[0])
        self._devices = [v for _, v in listed]

    def device_count(self) -> int:
        return len(self._devices)

    def device_info(self, index: int) -> dict[str, Any]:
        return dict(self._devices[index])


def _no_real_library() -> Any:
    raise LibraryUnavailable("sable-lib: simulated only")


ADAPTER = LibraryAdapter("sable-lib", _no_real_library, SimulatedLibrary)


def _library(host: Host) -> SimulatedLibrary | None:
    try:
        library: SimulatedLibrary = host.library(ADAPTER)
    except LibraryUnavailable:
        return None
    return library


def _listed(lib: SimulatedLibrary) -> dict[str, int]:
    """uuid -> the device's index in the library now (the template's ``_listed``)."""
    return {str(lib.device_info(i).get("uuid")): i for i in range(lib.device_count())}


@hookimpl
def rayaccel_family() -> FamilyDeclaration:
    return FamilyDeclaration(name="sable", vendor="Sable Logic", resource_name="SABLE",
                             visible_devices_env_var="SABLE_VISIBLE_DEVICES", quantity_rule=QuantityRule(kind="whole"),
                             spec_version="1.0", support=SupportInfo(maintainers=["Sable Logic accelerator team"]))


@hookimpl
def rayaccel_fixture_dirs() -> list[str]:
    return [str(HERE / "heldout19_sable_fixtures")]


@hookimpl
def rayaccel_discover(host: Host) -> list[Device]:
    lib = _library(host)
    if lib is None:
        return []
    infos = [lib.device_info(i) for i in range(lib.device_count())]
    return [Device(index=i, id=str(info["uuid"]), product_name=str(info["product"]), memory_mib=info.get("memory_mib"),
                   pci_bus_id=info.get("pci_bus_id")) for i, info in enumerate(infos)]


@hookimpl
def rayaccel_health(host: Host, devices: Sequence[Device]) -> list[HealthReport]:
    lib = _library(host)
    where = _listed(lib) if lib is not None else {}
    reports = []
    for device in devices:
        if device.id not in where:
            reports.append(HealthReport(device=device.id, state="unhealthy", reasons=[HealthReason(
                code="device-lost", fatal=True, message="the device is no longer listed by the vendor interface")]))
            continue
        assert lib is not None
        fatal = lib.device_info(where[device.id]).get("fatal_errors")
        reports.append(HealthReport(device=device.id, state="unhealthy", reasons=[HealthReason(
            code="fatal-error", fatal=True, message=f"{fatal} fatal errors")]) if fatal
            else HealthReport(device=device.id, state="healthy"))
    return reports


@hookimpl
def rayaccel_metrics(host: Host, devices: Sequence[Device]) -> list[MetricSample]:
    lib = _library(host)
    if lib is None:
        return []
    where = _listed(lib)
    samples = []
    for device in devices:
        if BY_INDEX:
            info = lib.device_info(device.index)  # l1's edit: "sablelib_device_get_stats(index) takes the index"
        elif device.id in where:
            info = lib.device_info(where[device.id])
        else:
            report_problem("malformed-output", f"device {device.index} ({device.id}) is no longer listed by the "
                           "library; its readings are left out")
            continue
        used = info.get("memory_used_mib")
        readings = (("utilization", "percent", info.get("utilization")), ("power", "watts", info.get("power")),
                    ("memory_used", "bytes", None if used is None else used * MIB))
        samples += [MetricSample(device=device.id, name=name, unit=unit, value=value)
                    for name, unit, value in readings if value is not None]
    return samples
