"""Parse what ``hl-smi`` prints: the ``-Q ... -f csv,noheader`` query, and ``-n link`` / ``-n ports``.

Pure functions of the text. Values carry units as hl-smi prints them (``98304 MiB``, ``26 C``, ``95 W``,
``0 %``); ``N/A`` means the device did not answer that field. Anything that is not the documented layout
raises :class:`HlSmiParseError` naming the command and the line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

#: The fields queried, in order (names as ``hl-smi -h`` lists them for ``--query-aip``).
QUERY_FIELDS = (
    "index", "module_id", "name", "uuid", "serial", "bus_id", "memory.total", "memory.used", "driver_version",
    "temperature.aip", "power.draw", "utilization.aip", "ecc.errors.uncorrected.aggregate.total",
    "ecc.errors.corrected.aggregate.total", "ecc.errors.uncorrected.volatile.total",
    "ecc.errors.corrected.volatile.total",
)
QUERY_ARGV = ("hl-smi", "-Q", ",".join(QUERY_FIELDS), "-f", "csv,noheader")

_PORT_LINE = re.compile(r"^\s*port\s+(\d+)\s*:\s*(\S+)\s*$", re.IGNORECASE)
_BUS_ID = re.compile(r"^[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]$")


class HlSmiParseError(ValueError):
    """hl-smi printed something other than the layout it documents."""


@dataclass
class AipRecord:
    """One Gaudi device (an "AIP") as the query reports it."""

    index: int
    module_id: int
    name: str
    uuid: str
    serial: str | None
    bus_id: str
    memory_total_mib: int | None
    memory_used_mib: int | None
    driver_version: str | None
    temperature_c: float | None
    power_w: float | None
    utilization: float | None
    #: ECC errors since the driver loaded (``ecc.errors.*.volatile.total``): what health and metrics use. When
    #: hl-smi answers N/A for the volatile counters, the lifetime ones stand in.
    ecc_uncorrected: int | None
    ecc_corrected: int | None
    #: ECC errors over the device's lifetime (``ecc.errors.*.aggregate.total``): history, never cleared.
    ecc_uncorrected_lifetime: int | None = None
    ecc_corrected_lifetime: int | None = None
    #: Fields that answered N/A: a device that stopped responding answers N/A to everything live.
    missing: list[str] = field(default_factory=list)


def _number(value: str, unit: str | None, field_name: str, line_no: int) -> float | None:
    text = value.strip()
    if text.upper() in ("N/A", "[N/A]", ""):
        return None
    match = re.fullmatch(r"(-?\d+(?:\.\d+)?)\s*([A-Za-z%]*)", text)
    if not match or (unit is not None and match.group(2) and match.group(2).lower() != unit.lower()):
        raise HlSmiParseError(f"`hl-smi -Q`: line {line_no}: {field_name} is {value.strip()!r}, expected a number"
                              + (f" in {unit}" if unit else ""))
    return float(match.group(1))


def _text(value: str) -> str | None:
    text = value.strip()
    return None if text.upper() in ("N/A", "[N/A]", "") else text


def parse_query(text: str) -> list[AipRecord]:
    """``hl-smi -Q <QUERY_FIELDS> -f csv,noheader`` -> one record per device, in index order."""
    records = []
    for line_no, line in enumerate(str(text).splitlines(), 1):
        if not line.strip():
            continue
        values = [v.strip() for v in line.split(",")]
        if len(values) != len(QUERY_FIELDS):
            shown = line.strip()[:60]
            raise HlSmiParseError(f"`hl-smi -Q`: line {line_no} has {len(values)} fields, expected "
                                  f"{len(QUERY_FIELDS)} ({', '.join(QUERY_FIELDS)}): {shown!r}")
        row = dict(zip(QUERY_FIELDS, values, strict=True))
        for key in ("index", "module_id"):
            if not re.fullmatch(r"[0-9]+", row[key]):
                raise HlSmiParseError(f"`hl-smi -Q`: line {line_no}: {key} is {row[key]!r}, expected a number")
        if not _BUS_ID.match(row["bus_id"]):
            raise HlSmiParseError(f"`hl-smi -Q`: line {line_no}: bus_id {row['bus_id']!r} is not a PCI address")
        name, uuid = _text(row["name"]), _text(row["uuid"])
        if name is None or uuid is None:
            raise HlSmiParseError(f"`hl-smi -Q`: line {line_no}: the device has no name or uuid")

        def num(key: str, unit: str | None, row: dict[str, str] = row, line_no: int = line_no) -> float | None:
            return _number(row[key], unit, key, line_no)

        live = {"memory.used": num("memory.used", "MiB"), "temperature.aip": num("temperature.aip", "C"),
                "power.draw": num("power.draw", "W"), "utilization.aip": num("utilization.aip", "%")}
        total = num("memory.total", "MiB")
        lifetime_unc = num("ecc.errors.uncorrected.aggregate.total", None)
        lifetime_cor = num("ecc.errors.corrected.aggregate.total", None)
        uncorrected = num("ecc.errors.uncorrected.volatile.total", None)
        corrected = num("ecc.errors.corrected.volatile.total", None)
        uncorrected = lifetime_unc if uncorrected is None else uncorrected
        corrected = lifetime_cor if corrected is None else corrected
        records.append(AipRecord(
            index=int(row["index"]), module_id=int(row["module_id"]), name=name, uuid=uuid,
            serial=_text(row["serial"]), bus_id=row["bus_id"].lower(),
            memory_total_mib=int(total) if total is not None else None,
            memory_used_mib=int(live["memory.used"]) if live["memory.used"] is not None else None,
            driver_version=_text(row["driver_version"]), temperature_c=live["temperature.aip"],
            power_w=live["power.draw"], utilization=live["utilization.aip"],
            ecc_uncorrected=int(uncorrected) if uncorrected is not None else None,
            ecc_corrected=int(corrected) if corrected is not None else None,
            ecc_uncorrected_lifetime=int(lifetime_unc) if lifetime_unc is not None else None,
            ecc_corrected_lifetime=int(lifetime_cor) if lifetime_cor is not None else None,
            missing=[k for k, v in live.items() if v is None],
        ))
    indices = [r.index for r in records]
    if len(set(indices)) != len(indices) or len({r.module_id for r in records}) != len(records):
        raise HlSmiParseError("`hl-smi -Q`: two lines report the same index or module_id")
    return sorted(records, key=lambda r: r.index)


def parse_ports(text: str, command: str) -> dict[int, str]:
    """``hl-smi -n link -i <bus>`` (port -> UP/DOWN) or ``-n ports`` (port -> internal/external)."""
    ports: dict[int, str] = {}
    for line_no, line in enumerate(str(text).splitlines(), 1):
        if not line.strip():
            continue
        match = _PORT_LINE.match(line)
        if not match:
            raise HlSmiParseError(f"`{command}`: line {line_no} is not 'port <n>: <state>': {line.strip()[:60]!r}")
        ports[int(match.group(1))] = match.group(2).lower()
    return ports
