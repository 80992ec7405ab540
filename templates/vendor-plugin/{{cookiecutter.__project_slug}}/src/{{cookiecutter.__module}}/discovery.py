"""Devices as rayaccel records, from what the probe read."""

from __future__ import annotations

from rayaccel import Device

from {{ cookiecutter.__module }}.readings import DeviceInfo


def to_devices(infos: list[DeviceInfo], driver_version: str | None) -> list[Device]:
    # The SDK fills sku, architecture and missing memory from the catalog; report what the device says.
    return [Device(index=i.index, id=i.uuid, product_name=i.product, pci_device_id=i.pci_device_id,
                   memory_mib=i.memory_mib, pci_bus_id=i.pci_bus_id, numa_node=i.numa_node,
                   driver_version=driver_version)
            for i in infos]
