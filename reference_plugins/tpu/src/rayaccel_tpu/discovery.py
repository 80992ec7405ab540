"""TPU chips -> rayaccel Device records: what the probe found in /dev and sysfs, with the generation from the
PCI id (or the pod type), the product name, and the units Ray schedules."""

from __future__ import annotations

from functools import partial
from typing import Any

from rayaccel import DEVICE_FILE, Device, Host, record_or_report
from rayaccel_tpu import podtype, probe, slice_info, visibility


def devices_of(host: Host) -> list[Device]:
    """The chips the probe found, as Device records: one Ray TPU unit per chip, or Ray's
    ``RAY_TPU_RESOURCE_PER_CHIP`` units."""
    found = probe.find_chips(host)
    if not found:
        return []  # no TPU here: do not even ask the metadata server
    fallback = None
    if any(probe.chip_generation(c) is None for c in found):
        pod_type = slice_info.read_slice_info(host).pod_type
        fallback = podtype.generation(pod_type) if pod_type else None
    # One Ray TPU unit per chip, or Ray's RAY_TPU_RESOURCE_PER_CHIP units (one per chiplet on TPU7x with 2).
    # A Ray setting, not a fact of the machine: read from this process's env, as Ray and the other hooks do.
    per_chip = visibility.resource_per_chip(report=True)
    # Chips of one host are alike: one with fewer PCI functions than another has lost a chiplet, even where
    # the generation is not in the table (a new SKU).
    widest = max(len(c.nodes) for c in found)
    devices = []
    for chip in found:
        generation = probe.chip_generation(chip) or fallback
        attributes: dict[str, str | int | float | bool] = {DEVICE_FILE: chip.node}
        chiplets = max(probe.expected_nodes(chip, generation), widest)
        if chiplets > 1:
            # Health checks every chiplet's VFIO group, and flags a chip found with fewer than a whole one has.
            attributes |= {"chiplet_nodes": ",".join(chip.nodes), "chiplets": chiplets}
        fields: dict[str, Any] = {
            "index": chip.index, "id": probe.chip_id(chip),
            "product_name": podtype.product_name(generation) if generation else "Google TPU",
            "pci_device_id": chip.pci_device_id, "pci_bus_id": chip.pci_bus_id,
            "units": visibility.chip_units(chip.index, per_chip) if per_chip > 1 else [],
            "attributes": attributes,
        }
        device = record_or_report(f"chip {chip.index} ({chip.node})", partial(Device, **fields))
        if device is not None:  # one chip's garbage costs that chip, never the others
            devices.append(device)
    return devices
