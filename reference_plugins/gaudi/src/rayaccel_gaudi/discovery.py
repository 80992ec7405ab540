"""Gaudi devices -> rayaccel Device records. The schedulable unit of a device is its MODULE id.

``HABANA_VISIBLE_MODULES`` selects devices by module id (the OAM slot on the baseboard), which is not the
hl-smi index (the PCI enumeration order). So each device's ``units`` is ``[str(module_id)]``.
"""

from __future__ import annotations

from functools import partial
from typing import Any

from rayaccel import DEVICE_FILE, Device, record_or_report
from rayaccel_gaudi.readings import Snapshot


def devices_of(snapshot: Snapshot | None) -> list[Device]:
    if snapshot is None:
        return []
    devices = []
    for d in snapshot.devices:
        aip = d.aip
        attributes: dict[str, str | int | float | bool] = {"module_id": aip.module_id}
        if aip.serial:
            attributes["serial"] = aip.serial
        if d.accel:  # the device file of this module, not the pattern's guess from hl-smi's index
            attributes[DEVICE_FILE] = f"/dev/accel/{d.accel}"
        if d.port_types:
            attributes["scale_up_ports"] = len(d.ports("internal"))
            attributes["scale_out_ports"] = len(d.ports("external"))
            attributes["scale_out_ports_up"] = len(d.ports("external", "up"))
        fields: dict[str, Any] = {
            "index": aip.index, "id": aip.uuid, "product_name": aip.name, "memory_mib": aip.memory_total_mib,
            "pci_bus_id": aip.bus_id, "numa_node": d.numa_node, "driver_version": aip.driver_version,
            "units": [str(aip.module_id)], "attributes": attributes,
        }
        device = record_or_report(f"device {aip.index} ({aip.bus_id})", partial(Device, **fields))
        if device is not None:  # one device's garbage costs that device, never the others
            devices.append(device)
    return devices
