"""Devices as rayaccel records, from what the probe read."""

from __future__ import annotations

from functools import partial

from rayaccel import Device, record_or_report

from {{ cookiecutter.__module }}.readings import DeviceInfo


def to_devices(infos: list[DeviceInfo], driver_version: str | None) -> list[Device]:
    # The SDK fills sku, architecture and missing memory from the catalog; report what the device says.
    # One device's garbage that the readings' checks let through costs that device (with a problem naming it,
    # the field and the value), never the others.
    built = (record_or_report(f"device {i.index} ({i.uuid})", partial(
        Device, index=i.index, id=i.uuid, product_name=i.product, pci_device_id=i.pci_device_id,
        memory_mib=i.memory_mib, pci_bus_id=i.pci_bus_id, numa_node=i.numa_node, driver_version=driver_version))
        for i in infos)
    return [device for device in built if device is not None]
