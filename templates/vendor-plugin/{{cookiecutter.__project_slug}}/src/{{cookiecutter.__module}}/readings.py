"""What a probe reads, whatever the vendor interface: the records every other module works on, and the checks
every value from the vendor goes through (a malformed one is reported, never trusted). The interface itself is
read in :mod:`probe`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, TypeVar

from rayaccel import malformed, report_problem, vendor_int


class ProbeError(Exception):
    """The vendor interface answered, but with something this plugin cannot read."""


@dataclass(frozen=True)
class DeviceInfo:
    index: int
    uuid: str
    product: str
    pci_device_id: str | None
    memory_mib: int | None
    pci_bus_id: str | None
    numa_node: int | None


@dataclass(frozen=True)
class DeviceHealth:
    uuid: str
    fatal_errors: int
    corrected_errors: int


@dataclass(frozen=True)
class DeviceStats:
    """A device's readings; None where the vendor answers that it does not measure one (not supported, N/A):
    unknown, never 0, and no reason to doubt the device or its other readings."""
    uuid: str
    utilization_percent: float | None
    temperature_c: float | None
    power_w: float | None
    memory_used_mib: int | None


@dataclass(frozen=True)
class PeerLink:
    a: str
    b: str
    #: Unidirectional GB/s (gigabytes, not gigabits: a tool printing Gbit/s is divided by 8), all lanes.
    gbytes_per_s: float


def whole_number(value: Any, what: str) -> int:
    text = str(value).strip()
    if not (text.isascii() and text.isdigit() and len(text) <= 15):  # a count or size: 0 .. 10**15
        raise ProbeError(f"{what}: expected a whole number, got {value!r:.60}")
    return int(text)


def reading(value: Any, what: str) -> float:
    try:
        number = float(str(value).strip())
    except ValueError:
        raise ProbeError(f"{what}: expected a number, got {value!r:.60}") from None
    if not 0 <= number <= 1e6:  # also NaN and infinities: no reading of a device is outside this
        raise ProbeError(f"{what}: {value!r:.60} is not a plausible reading")
    return number


# VENDOR: how your tool or library says a device does not measure a reading (nvidia-smi prints [N/A], amd-smi
# N/A; a library leaves the field out or answers a NOT_SUPPORTED status; a sysfs attribute is absent).
NOT_SUPPORTED = frozenset({"n/a", "[n/a]", "not supported", "[not supported]"})


def not_supported(value: Any) -> bool:
    return value is None or str(value).strip().lower() in NOT_SUPPORTED


def reading_if_supported(value: Any, what: str) -> float | None:
    """A reading, or None where the vendor answers it is not measured; anything else malformed is refused."""
    return None if not_supported(value) else reading(value, what)


def whole_number_if_supported(value: Any, what: str) -> int | None:
    return None if not_supported(value) else whole_number(value, what)


# VENDOR: the physical limits of your hardware. A value beyond them is a broken answer: reported, not used.
MAX_DEVICES = 1024
MAX_MEMORY_MIB = 2**24

T = TypeVar("T")


def optional_int(value: Any, what: str) -> int | None:
    """An optional number (NUMA node): "-1"/N/A mean none; anything malformed is reported and unknown."""
    text = "" if value is None else str(value).strip()
    if text in ("", "-1", "[N/A]", "N/A"):
        return None
    return vendor_int(value, what, maximum=4095)


def device_index(value: Any) -> int:
    """A device's index: without a usable one the device cannot be reported (ProbeError skips it)."""
    number = vendor_int(value, "index", maximum=MAX_DEVICES - 1)
    if number is None:
        raise ProbeError(f"index {value!r:.40} is not a device index; this device is not reported")
    return number


def memory_size(value: Any, what: str) -> int | None:
    return vendor_int(value, what, maximum=MAX_MEMORY_MIB)


def text_value(value: Any, what: str) -> str | None:
    """Text a device reports; another type, or bytes that are not text, is reported and ignored."""
    if value is None or value == "":
        return None
    if isinstance(value, str) and value.isprintable() and "\ufffd" not in value and len(value) <= 256:
        return value
    malformed(what, value, "text")
    return None


def pci_id(value: Any) -> str | None:
    text = "" if value is None else str(value).strip().lower()
    if not text:
        return None
    if not (text.startswith("0x") and len(text) == 6 and all(c in "0123456789abcdef" for c in text[2:])):
        malformed("pci_device_id", value, "a PCI device id like 0x0a01")
        return None
    return text


def each_record(rows: Iterable[Any], build: Callable[[Any], T], what: str) -> list[T]:
    """Build one record per row; a row that cannot be read is reported and skipped, the others are kept."""
    built = []
    for number, row in enumerate(rows, start=1):
        if number > MAX_DEVICES:
            report_problem("too-many-rows", f"{what}: more than {MAX_DEVICES} entries; the rest are ignored")
            break
        try:
            built.append(build(row))
        except (ProbeError, KeyError, TypeError, ValueError) as e:
            report_problem("malformed-output", f"{what}: entry {number} cannot be read ({type(e).__name__}: {e}); "
                           "it is ignored", severity="error")
    return built


def version_text(value: Any) -> str | None:
    text = "" if value is None else str(value).strip()
    if not text:
        return None
    if len(text) > 64 or not all(c.isalnum() or c in ".-_+~" for c in text):
        malformed("driver version", text, "a version like 1.0.0")
        return None
    return text


