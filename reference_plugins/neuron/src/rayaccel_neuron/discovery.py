"""Neuron devices -> rayaccel Device records: what neuron-ls listed (:mod:`rayaccel_neuron.probe`), plus each
device's serial (its id), device name and PCI device id from the driver's sysfs. The schedulable units are
the device's global NeuronCore ids, the ids ``NEURON_RT_VISIBLE_CORES`` takes.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import partial
from typing import Any

from rayaccel import ID_FALLBACK, Device, Host, malformed, record_or_report
from rayaccel_neuron import instance, neuronls, sysfs

#: Device names by instance family, for hosts whose driver does not publish info/architecture.
PRODUCT_BY_FAMILY = {"trn1": "Trainium1", "trn1n": "Trainium1", "trn2": "Trainium2", "trn2u": "Trainium2",
                     "inf1": "Inferentia", "inf2": "Inferentia2"}


#: A serial the driver publishes (16 hex digits on Trainium and Inferentia2); anything else is not an id.
_SERIAL = re.compile(r"[0-9A-Za-z]{1,64}")


def _product_name(host: Host, index: int, instance_type: str | None) -> str:
    name = sysfs.read(host, f"{sysfs.device_dir(index, host)}/info/architecture/device_name")
    if name:
        return name
    family = instance_type.split(".")[0] if instance_type else ""
    return PRODUCT_BY_FAMILY.get(family, "AWS Neuron device")


def _pci_device_id(host: Host, bdf: str | None) -> str | None:
    if not bdf:
        return None
    full = bdf if bdf.count(":") == 2 else f"0000:{bdf}"
    raw = sysfs.read(host, f"/sys/bus/pci/devices/{full}/device")
    if raw and not re.fullmatch(r"0x[0-9a-fA-F]{4}", raw):
        malformed(f"/sys/bus/pci/devices/{full}/device", raw, "a PCI device id like 0x7164")
        return None
    return raw.lower() if raw else None


def devices_of(host: Host, infos: Sequence[neuronls.NeuronDeviceInfo]) -> list[Device]:
    """The devices neuron-ls (or the sysfs fallback) listed, with their serial, name and PCI id from sysfs."""
    if not infos:
        return []
    instance_type = instance.instance_type(host) or next((i.instance_type for i in infos if i.instance_type), None)
    driver = sysfs.read(host, sysfs.DRIVER_VERSION)
    devices = []
    for info in infos:
        serial_file = f"{sysfs.device_dir(info.index, host)}/info/serial_number"
        serial = sysfs.read(host, serial_file)
        if serial and not _SERIAL.fullmatch(serial):
            malformed(serial_file, serial, "the device's serial number (hex digits, e.g. 1c3e7a5b000005d9)",
                      where=f"Neuron device {info.index}")
            serial = None
        attributes: dict[str, str | int | float | bool] = {
            "nc_count": info.nc_count, "logical_nc_config": info.logical_nc_config,
            "physical_cores": info.nc_count * info.logical_nc_config, "processes": info.processes,
        }
        if not serial:  # named by index and PCI address: an id that can change when devices move
            attributes[ID_FALLBACK] = (f"{serial_file} is missing or holds no serial number: the device is named "
                                       "by its index and PCI address")
        if info.cpu_affinity:
            attributes["cpu_affinity"] = info.cpu_affinity
        if info.connected_to:
            attributes["connected_to"] = ",".join(str(p) for p in info.connected_to)
        if instance_type:
            attributes["instance_type"] = instance_type
        fields: dict[str, Any] = {
            "index": info.index,
            "id": f"neuron-{serial}" if serial else f"neuron{info.index}-{info.bdf or 'nobdf'}",
            "product_name": _product_name(host, info.index, instance_type),
            "pci_device_id": _pci_device_id(host, info.bdf), "pci_bus_id": info.bdf,
            "memory_mib": info.memory_bytes // 2**20 if info.memory_bytes else None,
            "numa_node": info.numa_node, "driver_version": driver,
            "units": [str(c) for c in info.core_ids], "attributes": attributes,
        }
        device = record_or_report(f"device {info.index} ({info.bdf or 'no PCI address'})",
                                  partial(Device, **fields))
        if device is not None:  # one device's garbage costs that device, never the others
            devices.append(device)
    return devices
