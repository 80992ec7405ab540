"""TPU chips on this host, found where Ray 2.60 looks, plus the PCI facts sysfs adds.

Chips are character devices ``/dev/accel<N>`` (a *directory* ``/dev/accel`` is NVIDIA's, not a TPU),
or, on VFIO-based images (v5e, v5p, v6e and TPU7x VMs), ``/dev/vfio/<group>`` whose IOMMU group holds a
device of Google's PCI vendor id 0x1ae0 (``/sys/kernel/iommu_groups/<group>/devices/<bdf>/vendor``). The
PCI device id names the generation (0x005e v4, 0x0063 v5e, 0x0062 v5p, 0x006f v6e, 0x0076 v7x, as Google's
tpu-info reads it).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from rayaccel import Host
from rayaccel.reporting import plain_int

GOOGLE_PCI_VENDOR = "0x1ae0"
PCI_DEVICE_GENERATIONS = {"0x005e": "v4", "0x0063": "v5litepod", "0x0062": "v5p", "0x006f": "v6e", "0x0076": "v7x"}

_ACCEL = re.compile(r"^/dev/accel(\d+)$")


@dataclass(frozen=True)
class Chip:
    index: int
    node: str
    pci_bus_id: str | None = None
    pci_device_id: str | None = None


def _read(host: Host, path: str) -> str | None:
    try:
        return str(host.read_text(path)).strip()
    except (OSError, UnicodeDecodeError):
        return None


def parse_uevent(text: str) -> dict[str, str]:
    """``KEY=value`` lines of a sysfs uevent file."""
    fields = {}
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if sep:
            fields[key.strip()] = value.strip()
    return fields


def pci_device_id_from_uevent(fields: dict[str, str]) -> str | None:
    """``PCI_ID=1AE0:0062`` -> ``0x0062`` (only for Google's vendor id)."""
    vendor, _, device = fields.get("PCI_ID", "").partition(":")
    if vendor.lower() != GOOGLE_PCI_VENDOR[2:] or not re.fullmatch(r"[0-9a-fA-F]{4}", device):
        return None
    return "0x" + device.lower()


def _hex_id(raw: str | None) -> str | None:
    if raw and re.fullmatch(r"0x[0-9a-fA-F]{4}", raw):
        return raw.lower()
    return None


def _accel_chips(host: Host) -> list[Chip]:
    chips: list[Chip] = []
    for path in host.glob("/dev/accel*"):
        match = _ACCEL.match(path)
        if host.is_dir(path) or not match:
            continue  # /dev/accel/ is NVIDIA's DRM accel directory on 570+ drivers
        index = int(match.group(1))
        uevent = _read(host, f"/sys/class/accel/accel{index}/device/uevent")
        fields = parse_uevent(uevent) if uevent else {}
        chips.append(Chip(index=index, node=path, pci_bus_id=fields.get("PCI_SLOT_NAME"),
                          pci_device_id=pci_device_id_from_uevent(fields)))
    return sorted(chips, key=lambda c: c.index)


def _vfio_tpu_function(host: Host, group: str) -> tuple[str, str | None] | None:
    """(bdf, PCI device id) of the Google function in an IOMMU group, or None when it holds none."""
    root = f"/sys/kernel/iommu_groups/{group}/devices"
    try:
        functions = host.list_dir(root)
    except (FileNotFoundError, NotADirectoryError):
        return None
    for bdf in functions:
        vendor = _read(host, f"{root}/{bdf}/vendor")
        if vendor and vendor.lower() == GOOGLE_PCI_VENDOR:
            return bdf, _hex_id(_read(host, f"{root}/{bdf}/device"))
    return None


def _vfio_chips(host: Host) -> list[Chip]:
    try:
        groups = sorted((g for g in host.list_dir("/dev/vfio") if plain_int(g) is not None), key=int)
    except (FileNotFoundError, NotADirectoryError):
        return []
    chips: list[Chip] = []
    for group in groups:
        found = _vfio_tpu_function(host, group)
        if found is not None:
            # TPU_VISIBLE_CHIPS counts chips 0..n-1, not IOMMU group numbers.
            chips.append(Chip(index=len(chips), node=f"/dev/vfio/{group}", pci_bus_id=found[0],
                              pci_device_id=found[1]))
    return chips


def find_chips(host: Host) -> list[Chip]:
    """``/dev/accel*`` when any, else the TPU-backed VFIO groups (Ray's order of preference)."""
    return _accel_chips(host) or _vfio_chips(host)


def chip_generation(chip: Chip) -> str | None:
    return PCI_DEVICE_GENERATIONS.get(chip.pci_device_id or "")


def chip_id(chip: Chip) -> str:
    """Stable on the host: the PCI address when sysfs gives it, else the chip number."""
    return f"tpu-{chip.pci_bus_id}" if chip.pci_bus_id else f"tpu-chip{chip.index}"
