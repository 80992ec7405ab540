"""Parse what ``hl-smi`` prints: the ``-Q ... -f csv,noheader`` query, and ``-n link`` / ``-n ports``.

Pure functions of the text. Values carry units as hl-smi prints them (``98304 MiB``, ``26 C``, ``95 W``,
``0 %``); ``N/A`` means the device did not answer that field. Anything that is not the documented layout
raises :class:`HlSmiParseError` naming the command and the line.
"""

from __future__ import annotations

import io
import re
from dataclasses import dataclass, field

from rayaccel import malformed, report_problem

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
    match = re.fullmatch(r"(-?\d{1,30}(?:\.\d{1,30})?)\s*([A-Za-z%]*)", text)
    if not match or (unit is not None and match.group(2) and match.group(2).lower() != unit.lower()):
        # One unreadable reading: that field is unknown, the device is still reported.
        malformed(field_name, text, "a number" + (f" in {unit}" if unit else ""), where=f"`hl-smi -Q` line {line_no}",
                  fix=FIX)
        return None
    number = float(match.group(1))
    low = -50.0 if unit == "C" else 0.0
    if not low <= number <= LIMITS.get(unit, LIMITS[None]):
        # A value no device can have: that one field is unknown, the device is still reported.
        malformed(field_name, text, f"a number in [{low:g}, {LIMITS.get(unit, LIMITS[None]):g}]"
                  + (f" {unit}" if unit else ""), where=f"`hl-smi -Q` line {line_no}", fix=FIX)
        return None
    return number


def _text(value: str) -> str | None:
    text = value.strip()
    return None if text.upper() in ("N/A", "[N/A]", "") else text


#: More devices than any Gaudi server has (HLS boards carry 8), and the largest plausible readings: values
#: beyond them are a broken tool's answer, reported and ignored.
MAX_DEVICES = 64
LIMITS = {"MiB": 2.0**24, "C": 250.0, "W": 5000.0, "%": 100.0, None: 2.0**53}
MAX_PORT_LINES = 256
#: What `-n link` (up/down) and `-n ports` (internal/external) print after "port <n>:".
PORT_WORDS = frozenset({"up", "down", "internal", "external"})


def parse_query(text: str) -> list[AipRecord]:
    """``hl-smi -Q <QUERY_FIELDS> -f csv,noheader`` -> one record per device, in index order.

    Lines are read one by one: a line that is cut short or holds a malformed value is reported (naming the
    line, field and value) and skipped, and the other devices are still reported.
    """
    records: list[AipRecord] = []
    for line_no, line in enumerate(io.StringIO(str(text)), 1):
        line = line.rstrip("\r\n")
        if not line.strip():
            continue
        if len(records) >= MAX_DEVICES or line_no > 4 * MAX_DEVICES:
            report_problem("too-many-devices", f"`hl-smi -Q` lists more than {MAX_DEVICES} devices; the rest "
                           "are ignored", severity="error", fix=FIX)
            break
        try:
            record = _parse_line(line, line_no)
        except HlSmiParseError as e:
            report_problem("malformed-output", f"{e}; this device is not reported", severity="error", fix=FIX)
            continue
        if any(r.index == record.index or r.module_id == record.module_id for r in records):
            report_problem("malformed-output", f"`hl-smi -Q`: line {line_no} repeats index {record.index} or "
                           f"module_id {record.module_id}; it is ignored", severity="error", fix=FIX)
            continue
        records.append(record)
    return sorted(records, key=lambda r: r.index)


#: What to do about output hl-smi should not print.
FIX = "run the hl-smi command by hand; update the Intel Gaudi driver and hl-smi to matching versions"


def _parse_line(line: str, line_no: int) -> AipRecord:
    values = [v.strip() for v in line.split(",")]
    if len(values) != len(QUERY_FIELDS):
        shown = line.strip()[:60]
        raise HlSmiParseError(f"`hl-smi -Q`: line {line_no} has {len(values)} fields, expected "
                              f"{len(QUERY_FIELDS)} ({', '.join(QUERY_FIELDS)}): {shown!r}")
    row = dict(zip(QUERY_FIELDS, values, strict=True))
    for key in ("index", "module_id"):
        if not re.fullmatch(r"[0-9]{1,6}", row[key]) or int(row[key]) >= MAX_DEVICES:
            raise HlSmiParseError(f"`hl-smi -Q`: line {line_no}: {key} is {row[key]!r}, expected a number "
                                  f"below {MAX_DEVICES}")
    if not _BUS_ID.match(row["bus_id"]):
        raise HlSmiParseError(f"`hl-smi -Q`: line {line_no}: bus_id {row['bus_id']!r} is not a PCI address")
    name, uuid = _text(row["name"]), _text(row["uuid"])
    if name is None or uuid is None:
        raise HlSmiParseError(f"`hl-smi -Q`: line {line_no}: the device has no name or uuid")
    for key in ("name", "uuid", "serial", "driver_version"):
        if not row[key].isprintable() or "\ufffd" in row[key]:
            raise HlSmiParseError(f"`hl-smi -Q`: line {line_no}: {key} {row[key]!r:.60} holds bytes that are "
                                  "not text")

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
    return AipRecord(
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
    )


def parse_ports(text: str, command: str) -> dict[int, str]:
    """``hl-smi -n link -i <bus>`` (port -> UP/DOWN) or ``-n ports`` (port -> internal/external)."""
    ports: dict[int, str] = {}
    for line_no, line in enumerate(io.StringIO(str(text)), 1):
        if line_no > MAX_PORT_LINES:
            raise HlSmiParseError(f"`{command}`: more than {MAX_PORT_LINES} lines, more ports than a device has")
        if not line.strip():
            continue
        match = _PORT_LINE.match(line)
        if not match or len(match.group(1)) > 4 or match.group(2).lower() not in PORT_WORDS:
            raise HlSmiParseError(f"`{command}`: line {line_no} is not 'port <n>: <state>': {line.strip()[:60]!r}")
        ports[int(match.group(1))] = match.group(2).lower()
    return ports
