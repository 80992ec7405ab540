"""Ray's AMD product table (``ray/_private/accelerators/amd_gpu.py``), with its lookup defect fixed.

Ray keys ``0x679A`` and ``0x679B`` in upper-case hex but looks up ``hex(device_id)``, which Python writes
in lower case, so those two boards never get a type in Ray. Here every key is normalised to lower case.
The table is the fallback for devices the SKU catalog does not know; catalog types agree with it.
"""

from __future__ import annotations

#: As in Ray 2.60, keys exactly as Ray writes them (the test compares this copy with Ray's own table).
RAY_PRODUCT_TABLE: dict[str, str] = {
    "0x66a1": "AMD-Instinct-MI50",
    "0x738c": "AMD-Instinct-MI100",
    "0x7408": "AMD-Instinct-MI250X",
    "0x740c": "AMD-Instinct-MI250X-MI250",
    "0x740f": "AMD-Instinct-MI210",
    "0x74a0": "AMD-Instinct-MI300A",
    "0x74a1": "AMD-Instinct-MI300X-OAM",
    "0x74a2": "AMD-Instinct-MI308X-OAM",
    "0x74a9": "AMD-Instinct-MI300X-HF",
    "0x74a5": "AMD-Instinct-MI325X-OAM",
    "0x75a0": "AMD-Instinct-MI350X-OAM",
    "0x75a3": "AMD-Instinct-MI355X-OAM",
    "0x6798": "AMD-Radeon-R9-200-HD-7900",
    "0x6799": "AMD-Radeon-HD-7900",
    "0x679A": "AMD-Radeon-HD-7900",
    "0x679B": "AMD-Radeon-HD-7900",
}

PRODUCT_TABLE: dict[str, str] = {key.lower(): value for key, value in RAY_PRODUCT_TABLE.items()}


def pci_device_id(device_id: int | str | None) -> str | None:
    """``0x74a1`` from 29857, ``"0x74A1"`` or ``"74a1"``; None when it is not a 16-bit id."""
    if device_id is None:
        return None
    try:
        value = device_id if isinstance(device_id, int) else int(str(device_id).strip(), 16)
    except ValueError:
        return None
    return f"0x{value:04x}" if 0 <= value <= 0xFFFF else None


def accelerator_type_for(device_id: int | str | None) -> str | None:
    key = pci_device_id(device_id)
    return PRODUCT_TABLE.get(key) if key else None
