"""Reads the devices through the vendor's Python library, behind a small adapter. The one module that
touches the vendor interface: every other module works on the records in :mod:`readings`.

The plugin hands its adapter to rayaccel (``host.library(ADAPTER)``), as the NVIDIA plugin does with NVML: on a
real machine the host calls :func:`open_real`, on a simulated host :func:`open_simulated` with the fixture's
``host.libraries["{{ cookiecutter.__family }}-lib"]`` data.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rayaccel import Device, Host, LibraryAdapter, LibraryUnavailable, collect_problems, vendor_int

from {{ cookiecutter.__module }}.readings import (
    MAX_DEVICES,
    DeviceHealth,
    DeviceInfo,
    DeviceStats,
    PeerLink,
    ProbeError,
    each_record,
    memory_size,
    optional_int,
    pci_id,
    reading,
    reading_if_supported,
    text_value,
    whole_number_if_supported,
)

LIBRARY = "{{ cookiecutter.__family }}-lib"


class SimulatedLibrary:
    """The vendor library's answers, from a fixture. The real adapter must offer the same methods."""

    def __init__(self, data: dict[str, Any]) -> None:
        self._data = data
        # A vendor library numbers the devices it finds 0..count-1, one that lost a card the rest on without a gap
        # (as NVML and amdsmi do): the fixture's keys give the order, the position the index.
        listed = sorted(((int(k), v) for k, v in (data.get("devices") or {}).items()), key=lambda kv: kv[0])
        self._devices = [v for _, v in listed]

    def driver_version(self) -> str | None:
        version = self._data.get("driver_version")
        return None if version is None else str(version)

    def device_count(self) -> int:
        return len(self._devices)

    def device_info(self, index: int) -> dict[str, Any]:
        return {k: v for k, v in self._devices[index].items() if k not in ("links",)}

    def device_links(self, index: int) -> dict[str, float]:
        return dict(self._devices[index].get("links") or {})


def open_simulated(data: dict[str, Any]) -> SimulatedLibrary:
    return SimulatedLibrary(data)


def open_real() -> SimulatedLibrary:
    # VENDOR: return an adapter with SimulatedLibrary's methods, backed by your bindings, e.g.
    #     import acmeml                      # your library; raise LibraryUnavailable if it is missing
    #     acmeml.init()                      # raise LibraryUnavailable if the driver is not loaded
    #     return RealLibrary(acmeml)         # device_info(i) -> {"uuid": ..., "product": ..., ...}
    # Until then this plugin finds no devices on a real machine, which is what it must do without a driver.
    raise LibraryUnavailable(f"{LIBRARY}: the vendor library is not wired in yet (see VENDOR in {__name__})")


#: What this plugin hands to ``host.library(...)``: LIBRARY names the library's data in a fixture.
ADAPTER = LibraryAdapter(LIBRARY, open_real, open_simulated)


def _library(host: Host) -> SimulatedLibrary | None:
    try:
        return host.library(ADAPTER)  # type: ignore[no-any-return]
    except LibraryUnavailable:
        return None  # no library or no driver: no devices, not an error


def _field(info: dict[str, Any], key: str, index: int) -> Any:
    if key not in info:
        raise ProbeError(f"device {index}: the library reports no {key!r}")
    return info[key]


def _listed(lib: SimulatedLibrary) -> dict[str, int]:
    """uuid -> the device's index in the library now. A library numbers what it finds 0..count-1, so once a card
    is lost a device's index from discovery may be another device's: every later read finds its device by uuid
    (as NVML's nvmlDeviceGetHandleByUUID does), never by the index discovery saw."""
    count = vendor_int(lib.device_count(), "device count", maximum=MAX_DEVICES) or 0
    where: dict[str, int] = {}
    with collect_problems():  # what is wrong with the listing itself, discovery reports
        for index in range(count):
            try:
                uuid = text_value(lib.device_info(index).get("uuid"), "uuid")
            except (KeyError, TypeError, ValueError, ProbeError):
                continue
            if uuid:
                where.setdefault(uuid, index)
    return where


def _index_now(where: dict[str, int], device: Device) -> int:
    if device.id not in where:
        raise ProbeError(f"device {device.index} ({device.id}) is no longer listed by the library")
    return where[device.id]


def driver_version(host: Host) -> str | None:
    lib = _library(host)
    return None if lib is None else lib.driver_version()


def read_devices(host: Host) -> list[DeviceInfo]:
    lib = _library(host)
    if lib is None:
        return []
    count = vendor_int(lib.device_count(), "device count", maximum=MAX_DEVICES) or 0

    def build(index: int) -> DeviceInfo:
        info = lib.device_info(index)
        uuid = text_value(_field(info, "uuid", index), "uuid")
        product = text_value(_field(info, "product", index), "product")
        if not uuid or not product:
            raise ProbeError(f"device {index}: no readable uuid or product")
        return DeviceInfo(
            index=index, uuid=uuid, product=product, pci_device_id=pci_id(info.get("pci_device_id")),
            memory_mib=memory_size(info.get("memory_mib"), "memory_mib"),
            pci_bus_id=text_value(info.get("pci_bus_id"), "pci_bus_id"),
            numa_node=optional_int(info.get("numa_node"), "numa_node"),
        )

    return each_record(range(count), build, LIBRARY)


def read_links(host: Host, devices: Sequence[Device]) -> list[PeerLink]:
    lib = _library(host)
    if lib is None:
        return []
    where = _listed(lib)  # a device no longer listed has no links
    pairs = [(d.id, peer, gbps) for d in devices if d.id in where
             for peer, gbps in sorted(lib.device_links(where[d.id]).items())]
    return each_record(pairs, lambda p: PeerLink(p[0], str(p[1]), reading(p[2], "gbytes_per_s")), f"{LIBRARY} links")


def read_health(host: Host, devices: Sequence[Device]) -> dict[str, DeviceHealth]:
    lib = _library(host)
    if lib is None:
        return {}

    where = _listed(lib)

    def build(d: Device) -> DeviceHealth:
        info = lib.device_info(_index_now(where, d))
        fatal = vendor_int(_field(info, "fatal_errors", d.index), "fatal_errors")
        corrected = vendor_int(_field(info, "corrected_errors", d.index), "corrected_errors")
        if fatal is None or corrected is None:
            raise ProbeError(f"device {d.index}: the error counters cannot be read")
        return DeviceHealth(d.id, fatal, corrected)

    return {h.uuid: h for h in each_record(devices, build, f"{LIBRARY} error counters")}


def read_stats(host: Host, devices: Sequence[Device]) -> dict[str, DeviceStats]:
    lib = _library(host)
    if lib is None:
        return {}

    where = _listed(lib)

    def build(d: Device) -> DeviceStats:
        info = lib.device_info(_index_now(where, d))
        # A field the library leaves out (its NOT_SUPPORTED answer) is a reading it does not measure: unknown.
        return DeviceStats(d.id, reading_if_supported(info.get("utilization"), "utilization"),
                           reading_if_supported(info.get("temperature"), "temperature"),
                           reading_if_supported(info.get("power"), "power"),
                           whole_number_if_supported(info.get("memory_used_mib"), "memory_used_mib"))

    return {s.uuid: s for s in each_record(devices, build, f"{LIBRARY} readings")}
