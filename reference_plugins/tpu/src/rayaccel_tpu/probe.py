"""TPU chips on this host, found where Ray 2.60 looks, plus the PCI facts sysfs adds.

Chips are character devices ``/dev/accel<N>`` (a *directory* ``/dev/accel`` is NVIDIA's, not a TPU),
or, on VFIO-based images (v5e, v5p, v6e and TPU7x VMs), ``/dev/vfio/<group>`` whose IOMMU group holds a
device of Google's PCI vendor id 0x1ae0 (``/sys/kernel/iommu_groups/<group>/devices/<bdf>/vendor``). The
PCI device id names the generation (0x005e v4, 0x0063 v5e, 0x0062 v5p, 0x006f v6e, 0x0076 v7x, as Google's
tpu-info reads it).

A TPU7x chip is two chiplets, which the host sees as two PCI functions of one PCI device (``.0`` and ``.1``),
each in its own IOMMU group: a tpu7x-8 VM has 8 VFIO groups and 4 chips. As tpu-info 0.14 does
(``device.get_chips``), functions are grouped into chips by their domain:bus:device address, and chips are
numbered in the order of their first function's group; ``TPU_VISIBLE_CHIPS`` counts those chips. Ray 2.60
counts VFIO groups instead (one unit per group, 8 here): see the README's differences.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from rayaccel import Host, plain_int, report_problem

GOOGLE_PCI_VENDOR = "0x1ae0"
PCI_DEVICE_GENERATIONS = {"0x005e": "v4", "0x0063": "v5litepod", "0x0062": "v5p", "0x006f": "v6e", "0x0076": "v7x"}
#: A device id v2 and v3 share, told apart by the PCI subsystem device, as tpu-info's TpuChip does.
SHARED_PCI_DEVICE_GENERATIONS = {("0x0027", "0x004e"): "v2", ("0x0027", "0x004f"): "v3"}

_ACCEL = re.compile(r"^/dev/accel(\d+)$")


#: Chiplets (PCI functions, PJRT devices) per chip where there is more than one, as tpu-info's devices_per_chip.
CHIPLETS_PER_CHIP = {"v7x": 2}


@dataclass(frozen=True)
class Chip:
    index: int
    #: The chip's first device node (function 0's VFIO group, or ``/dev/accel<N>``).
    node: str
    pci_bus_id: str | None = None
    pci_device_id: str | None = None
    #: The PCI subsystem device, where the device id alone does not name the generation (v2, v3).
    pci_subsystem_id: str | None = None
    #: Every device node of the chip, one per chiplet (two VFIO groups on TPU7x); default ``(node,)``.
    chiplet_nodes: tuple[str, ...] = ()
    #: The host shows each chiplet (PCI function) as a node of its own: VFIO groups do; ``/dev/accel<N>`` is
    #: one node per chip whatever the chip holds, so a TPU7x chip there is whole with one.
    node_per_chiplet: bool = False

    @property
    def nodes(self) -> tuple[str, ...]:
        return self.chiplet_nodes or (self.node,)


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


def pci_device_id_from_uevent(fields: dict[str, str], key: str = "PCI_ID") -> str | None:
    """``PCI_ID=1AE0:0062`` -> ``0x0062`` (only for Google's vendor id); ``key`` ``PCI_SUBSYS_ID``: the
    subsystem device."""
    vendor, _, device = fields.get(key, "").partition(":")
    if vendor.lower() != GOOGLE_PCI_VENDOR[2:] or not re.fullmatch(r"[0-9a-fA-F]{4}", device):
        return None
    return "0x" + device.lower()


def _hex_id(raw: str | None, where: str) -> str | None:
    if raw and re.fullmatch(r"0x[0-9a-fA-F]{4}", raw):
        return raw.lower()
    if raw:  # garbage is said, never taken for an unknown chip in silence
        report_problem("malformed-value", f"{where}: the PCI device id is {raw[:40]!r}, expected 0x and four hex "
                       "digits; it is ignored (the generation comes from the pod type)")
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
                          pci_device_id=pci_device_id_from_uevent(fields),
                          pci_subsystem_id=pci_device_id_from_uevent(fields, "PCI_SUBSYS_ID")))
    return sorted(chips, key=lambda c: c.index)


def _vfio_tpu_functions(host: Host, group: str) -> list[tuple[str, str | None]]:
    """(bdf, PCI device id) of each Google function in an IOMMU group; empty when it holds none."""
    root = f"/sys/kernel/iommu_groups/{group}/devices"
    try:
        functions = host.list_dir(root)
    except (FileNotFoundError, NotADirectoryError):
        return []
    found = []
    for bdf in functions:
        vendor = _read(host, f"{root}/{bdf}/vendor")
        if vendor and vendor.lower() == GOOGLE_PCI_VENDOR:
            found.append((bdf, _hex_id(_read(host, f"{root}/{bdf}/device"), f"chip function {bdf}")))
    return found


def pci_device_address(bdf: str) -> str:
    """``0000:00:04.1`` -> ``0000:00:04``: the PCI device whose functions are one chip's chiplets."""
    address, dot, function = bdf.rpartition(".")
    return address if dot and function.isdigit() else bdf


def _function_number(bdf: str) -> int:
    function = bdf.rpartition(".")[2]
    return int(function) if function.isdigit() else 0


@dataclass(frozen=True)
class _Function:
    group: int
    bdf: str
    pci_device_id: str | None


def _vfio_chips(host: Host) -> list[Chip]:
    try:
        groups = sorted((g for g in host.list_dir("/dev/vfio") if plain_int(g) is not None), key=int)
    except (FileNotFoundError, NotADirectoryError):
        return []
    by_device: dict[str, list[_Function]] = {}
    for group in groups:
        for bdf, device_id in _vfio_tpu_functions(host, group):
            by_device.setdefault(pci_device_address(bdf), []).append(_Function(int(group), bdf, device_id))
    # tpu-info's order: by the group of each chip's function 0 (else its first function), numerically.
    chiplet_lists = sorted((sorted(fs, key=lambda f: _function_number(f.bdf)) for fs in by_device.values()),
                           key=lambda fs: fs[0].group)
    chips: list[Chip] = []
    for functions in chiplet_lists:
        first = functions[0]
        nodes = tuple(f"/dev/vfio/{f.group}" for f in functions)
        # TPU_VISIBLE_CHIPS counts chips 0..n-1, not IOMMU group numbers nor PCI functions.
        chips.append(Chip(index=len(chips), node=nodes[0], pci_bus_id=first.bdf, pci_device_id=first.pci_device_id,
                          chiplet_nodes=nodes if len(nodes) > 1 else (), node_per_chiplet=True))
    return chips


def find_chips(host: Host) -> list[Chip]:
    """``/dev/accel*`` when any, else the TPU-backed VFIO groups (Ray's order of preference)."""
    return _accel_chips(host) or _vfio_chips(host)


def chip_generation(chip: Chip) -> str | None:
    return PCI_DEVICE_GENERATIONS.get(chip.pci_device_id or "") or SHARED_PCI_DEVICE_GENERATIONS.get(
        (chip.pci_device_id or "", chip.pci_subsystem_id or ""))


def expected_chiplets(generation: str | None) -> int:
    """How many PCI functions a whole chip of this generation shows (1 when unknown)."""
    return CHIPLETS_PER_CHIP.get(generation or "", 1)


def expected_nodes(chip: Chip, generation: str | None) -> int:
    """How many device nodes the host shows for a whole chip of this generation: one per chiplet where each
    chiplet is a node of its own (VFIO), else one."""
    return expected_chiplets(generation) if chip.node_per_chiplet else 1


def chip_id(chip: Chip) -> str:
    """Stable on the host: the PCI address when sysfs gives it, else the chip number."""
    return f"tpu-{chip.pci_bus_id}" if chip.pci_bus_id else f"tpu-chip{chip.index}"
