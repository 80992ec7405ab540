"""Reads the devices from sysfs, as the kernel driver exposes them. The one module that touches the vendor
interface: every other module works on the records in :mod:`readings`.

Layout read::

    /sys/class/{{ cookiecutter.__sysfs_class }}/{{ cookiecutter.__sysfs_class }}<N>/{uuid,product,device,memory_mib,pci_bus_id,numa_node}
    /sys/class/{{ cookiecutter.__sysfs_class }}/{{ cookiecutter.__sysfs_class }}<N>/{fatal_errors,corrected_errors}
    /sys/class/{{ cookiecutter.__sysfs_class }}/{{ cookiecutter.__sysfs_class }}<N>/{utilization,temperature,power,memory_used_mib}
    /sys/class/{{ cookiecutter.__sysfs_class }}/{{ cookiecutter.__sysfs_class }}<N>/links/<peer uuid>   (content: GB/s)
    /sys/module/{{ cookiecutter.__sysfs_class }}/version
"""

from __future__ import annotations

from collections.abc import Sequence

from rayaccel import Device, Host, vendor_int

from {{ cookiecutter.__module }}.readings import (
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
    version_text,
    whole_number_if_supported,
)

# VENDOR: the class and attribute names your kernel driver creates.
CLASS = "{{ cookiecutter.__sysfs_class }}"
SYSFS = f"/sys/class/{CLASS}"
DRIVER_VERSION = f"/sys/module/{CLASS}/version"


def _attr(host: Host, path: str) -> str:
    try:
        return host.read_text(path).strip()
    except (FileNotFoundError, IsADirectoryError):
        raise ProbeError(f"{path} is missing") from None


def _reading_attr(host: Host, path: str) -> str | None:
    """A reading's attribute; None where the driver does not publish it (a reading it does not measure)."""
    return _attr(host, path) if host.exists(path) else None


def _device_dirs(host: Host) -> list[tuple[int, str]]:
    if not host.is_dir(SYSFS):
        return []  # no driver loaded: no devices, not an error
    found = []
    for path in host.glob(f"{SYSFS}/{CLASS}*"):
        suffix = path.rsplit("/", 1)[1][len(CLASS):]
        if suffix.isdigit():
            found.append((int(suffix), path))
    return sorted(found)


def driver_version(host: Host) -> str | None:
    return version_text(_attr(host, DRIVER_VERSION)) if host.exists(DRIVER_VERSION) else None


def read_devices(host: Host) -> list[DeviceInfo]:
    def build(found: tuple[int, str]) -> DeviceInfo:
        index, path = found
        uuid = text_value(_attr(host, f"{path}/uuid"), f"{path}/uuid")
        product = text_value(_attr(host, f"{path}/product"), f"{path}/product")
        if not uuid or not product:
            raise ProbeError(f"{path}: no readable uuid or product")
        return DeviceInfo(
            index=index, uuid=uuid, product=product, pci_device_id=pci_id(_attr(host, f"{path}/device")),
            memory_mib=memory_size(_attr(host, f"{path}/memory_mib"), f"{path}/memory_mib"),
            pci_bus_id=text_value(_attr(host, f"{path}/pci_bus_id"), f"{path}/pci_bus_id"),
            numa_node=optional_int(_attr(host, f"{path}/numa_node"), f"{path}/numa_node"),
        )

    return each_record(_device_dirs(host), build, SYSFS)


def read_links(host: Host, devices: Sequence[Device]) -> list[PeerLink]:
    found = [(device.id, f"{SYSFS}/{CLASS}{device.index}/links") for device in devices]
    pairs = [(device, base, peer) for device, base in found for peer in (host.list_dir(base) if host.is_dir(base)
                                                                          else [])]
    return each_record(pairs, lambda p: PeerLink(p[0], p[2], reading(_attr(host, f"{p[1]}/{p[2]}"), f"{p[1]}/{p[2]}")),
                 f"{SYSFS} links")


def read_health(host: Host, devices: Sequence[Device]) -> dict[str, DeviceHealth]:
    def build(device: Device) -> DeviceHealth:
        path = f"{SYSFS}/{CLASS}{device.index}"
        fatal = vendor_int(_attr(host, f"{path}/fatal_errors"), f"{path}/fatal_errors")
        corrected = vendor_int(_attr(host, f"{path}/corrected_errors"), f"{path}/corrected_errors")
        if fatal is None or corrected is None:
            raise ProbeError(f"{path}: the error counters cannot be read")
        return DeviceHealth(device.id, fatal, corrected)

    return {h.uuid: h for h in each_record(devices, build, f"{SYSFS} error counters")}


def read_stats(host: Host, devices: Sequence[Device]) -> dict[str, DeviceStats]:
    def build(device: Device) -> DeviceStats:
        path = f"{SYSFS}/{CLASS}{device.index}"
        return DeviceStats(
            device.id, reading_if_supported(_reading_attr(host, f"{path}/utilization"), "utilization"),
            reading_if_supported(_reading_attr(host, f"{path}/temperature"), "temperature"),
            reading_if_supported(_reading_attr(host, f"{path}/power"), "power"),
            whole_number_if_supported(_reading_attr(host, f"{path}/memory_used_mib"), "memory_used_mib"))

    return {s.uuid: s for s in each_record(devices, build, f"{SYSFS} readings")}
