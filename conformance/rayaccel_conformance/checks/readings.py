"""Scaled readings (RAC223): a device's vendor reading multiplied at the host seam must move the metric it feeds
by exactly that factor, and no other device's.

The SDK cannot parse a vendor's formats, but it can find the numbers in them: a file holding one number, a
number in a library's data (NVML, amd-smi), a number in a command's JSON output. A reading is the device's
own when its path names the device (its PCI address, or a numbered segment equal to its index, ``acme2``)
or its place in library or JSON data is keyed by the device's index (``nvml.devices.'2'.power_usage``). A
metric sample of a device equals one of its own readings times a unit factor (1, 1e-3, 2^20, ...); that
reading is scaled (x2, or /2 where twice would leave the metric's range) and the inventory built again. A
plugin whose metric stays put answers from a cache or a default; one whose metric moves by another factor
clamps or offsets it; one that moves another device's metric reads the wrong device. Each helper is pure.
"""

from __future__ import annotations

import json
import math
import pickle
import re
from collections import OrderedDict
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from rayaccel.records import Device, FamilyInventory, MetricSample
from rayaccel_conformance.registry import NotApplicable

_BYTES = (1.0, 2.0**10, 2.0**20, 2.0**30, 1e3, 1e6, 1e9)
#: The factors by which each metric's standard unit can differ from a vendor's reading: bytes from KiB, MiB,
#: GiB, kB, MB, GB; watts from mW, uW; degrees from millidegrees; percent from a ratio; counters as they are.
UNIT_FACTORS: dict[str, tuple[float, ...]] = {
    "memory_used": _BYTES, "memory_total": _BYTES, "power": (1.0, 1e-3, 1e-6), "temperature": (1.0, 1e-3),
    "utilization": (1.0, 100.0), "ecc_errors_corrected": (1.0,), "ecc_errors_uncorrected": (1.0,)}
#: How close a sample must be to a reading times a factor to be taken as fed by it (a MiB truncation is less).
MATCH_TOLERANCE = 1e-4
#: Readings tried per sample, most specific first: more candidates than this is not an attribution.
MAX_CANDIDATES = 3
#: The highest value each scaled metric may take before twice the reading would leave its unit's range.
METRIC_CEILINGS = {"utilization": 100.0, "temperature": 150.0, "power": 5000.0}
_NUMBER = re.compile(r"^\s*(-?\d+(?:\.\d+)?)\s*$")
#: A cell of a tool's CSV output holding a number and perhaps its unit (``96 W``, ``672 MiB``, ``0 %``).
_CELL = re.compile(r"^\s*(-?\d+(?:\.\d+)?)(?:\s*[A-Za-z%]{1,4})?\s*$")
_NUMBERED = re.compile(r"[A-Za-z][A-Za-z_-]*?(\d+)")
#: The metrics a single reading feeds linearly (sizes, watts, degrees, percentages, counters).
SCALED_METRICS = tuple(UNIT_FACTORS)


@dataclass(frozen=True)
class Reading:
    """One number on the host: in a file, in a library's data, or in a command's JSON output."""

    where: str  # "file", "library", "command" (JSON output) or "table" (a row of a command's CSV output)
    key: str  # the file's path, the library's name, the command line
    path: tuple[str | int, ...]  # inside the library's data or the JSON output; (line, field) of a table
    value: float
    row: str = ""  # a table's line: the device it is about is named in it (id or PCI address)

    # What owned_by asks of a reading, worked out once (a check asks it of every reading for every device).
    @cached_property
    def _first_index(self) -> int | None:
        """The first index on the way to a library's or JSON number (the device it is keyed by)."""
        return next((int(p) for p in self.path if isinstance(p, int) or str(p).isdigit()), None)

    @cached_property
    def _lower_key(self) -> str:
        return self.key.lower()

    @cached_property
    def _path_index(self) -> int | None:
        return _path_index(self.key.strip("/").split("/")[:-1])

    @cached_property
    def _row_cells(self) -> frozenset[str]:
        return frozenset(c.strip().lower().removeprefix("0000:") for c in self.row.split(","))

    def describe(self) -> str:
        inner = ".".join(str(p) for p in self.path)
        if self.where == "table":
            return f"`{self.key}` output line {self.path[0]} field {self.path[1]}"
        return {"file": f"file {self.key}", "library": f"library {self.key} {inner}",
                "command": f"`{self.key}` output {inner}"}[self.where]


def number_leaves(data: Any, path: tuple[str | int, ...] = ()) -> Iterator[tuple[tuple[str | int, ...], float]]:
    """Every number (not a bool) in a JSON-shaped value, with the keys and indexes that lead to it."""
    if isinstance(data, bool):
        return
    if isinstance(data, int | float):
        yield path, float(data)
    elif isinstance(data, dict):
        for key, value in data.items():
            yield from number_leaves(value, (*path, key))
    elif isinstance(data, list):
        for i, value in enumerate(data):
            yield from number_leaves(value, (*path, i))


def host_readings(host: dict[str, Any], zeros: bool = False) -> list[Reading]:
    """Every non-zero number of a host state (``HostState.model_dump(mode='json')``); with ``zeros``, every
    number."""
    every = _every_reading(host)
    return list(every) if zeros else [r for r in every if r.value != 0]


#: How many host states' numbers :func:`host_readings` keeps: a run asks again and again about the fixture as
#: recorded and under each fault (a state's numbers are 3-10 ms of a walk on an 8-GPU machine's data).
KEPT_STATES = 64
_kept: OrderedDict[bytes, tuple[Reading, ...]] = OrderedDict()


def _every_reading(host: dict[str, Any]) -> tuple[Reading, ...]:
    """Every number of ``host``, kept by the state's whole content (its pickle tells key order, an int from a
    float and a number from its text: the same bytes are the same state, so the same readings); a tuple of frozen
    readings, which no caller can change."""
    try:
        content = pickle.dumps(host, pickle.HIGHEST_PROTOCOL)
    except (pickle.PicklingError, TypeError, AttributeError):  # not JSON-shaped data: read it, keep nothing
        return _read_every_number(host)
    found = _kept.get(content)
    if found is None:
        found = _kept[content] = _read_every_number(host)
        if len(_kept) > KEPT_STATES:
            _kept.popitem(last=False)
    else:
        _kept.move_to_end(content)
    return found


def _read_every_number(host: dict[str, Any]) -> tuple[Reading, ...]:
    found = []
    for path, text in (host.get("files") or {}).items():
        match = _NUMBER.match(text or "")
        if match:
            found.append(Reading("file", path, (), float(match.group(1))))
    for name, data in (host.get("libraries") or {}).items():
        found += [Reading("library", name, p, v) for p, v in number_leaves(data) if math.isfinite(v)]
    for line, answer in (host.get("commands") or {}).items():
        try:
            data = json.loads((answer or {}).get("stdout") or "")
        except (ValueError, TypeError):
            found += _table_readings(line, (answer or {}).get("stdout") or "", zeros=True)
            continue
        found += [Reading("command", line, p, v) for p, v in number_leaves(data) if math.isfinite(v)]
    return tuple(found)


def _table_readings(command: str, stdout: str, zeros: bool = False) -> list[Reading]:
    """The numbers of a command's CSV output (``96 W``, ``672 MiB``), each with its line."""
    found = []
    for n, row in enumerate(stdout.splitlines()):
        for i, cell in enumerate(row.split(",")):
            match = _CELL.match(cell)
            if match and (zeros or float(match.group(1)) != 0):
                found.append(Reading("table", command, (n, i), float(match.group(1)), row))
    return found


def _path_index(segments: list[str]) -> int | None:
    """The device index a file's directories name: the first entry that is its parent's name and a number
    (sysfs's ``class/<name>/<name><n>``, ``/dev/accel/accel<n>``) or a word ending in digits (``card0``), so a
    class whose own name ends in a digit (a vendor "F3": ``f3/f31``) is not read as device 3 or 31."""
    for at, segment in enumerate(segments):
        parent = segments[at - 1] if at else ""
        if parent and segment.startswith(parent) and segment[len(parent):].isdigit():
            return int(segment[len(parent):])
        child = segments[at + 1] if at + 1 < len(segments) else ""
        if child.startswith(segment) and child[len(segment):].isdigit():
            continue  # the class a numbered entry extends, not a device
        if match := _NUMBERED.fullmatch(segment):
            return int(match.group(1))
    return None


def owned_by(reading: Reading, device: Device) -> bool:
    """Whether the reading is the device's own: a path naming it, data keyed by its index, a table row naming
    its id or PCI address."""
    if reading.where == "table":
        names = {device.id.lower(), (device.pci_bus_id or "").lower().removeprefix("0000:")} - {""}
        return not reading._row_cells.isdisjoint(names)
    if reading.where == "file":
        if device.pci_bus_id and device.pci_bus_id.lower().removeprefix("0000:") in reading._lower_key:
            return True
        index = reading._path_index
        return index is not None and index == device.index
    index = reading._first_index
    return index is not None and index == device.index


def names_peer(reading: Reading, device: Device) -> bool:
    """Whether the reading's place names ``device`` besides its owner: its id or PCI address in the path, or its
    index as a key of the library's or JSON data."""
    if reading.where == "file":
        key = reading.key.lower()
        return device.id.lower() in key or bool(device.pci_bus_id and device.pci_bus_id.lower().removeprefix(
            "0000:") in key)
    if reading.where == "table":
        return False
    keys = [int(p) for p in reading.path if isinstance(p, int) or str(p).isdigit()]
    return len(keys) >= 2 and device.index in keys[1:]


def candidates(sample: MetricSample, device: Device, readings: list[Reading]) -> list[tuple[Reading, float]]:
    """The device's own readings that give the sample times a unit factor: (reading, factor)."""
    found = []
    for reading in readings:
        if not owned_by(reading, device):
            continue
        factor = next((f for f in UNIT_FACTORS.get(sample.name, ())
                       if abs(reading.value * f - sample.value) <= MATCH_TOLERANCE * abs(sample.value)), None)
        if factor is not None:
            found.append((reading, factor))
    return found


def scale_of(sample: MetricSample, reading: Reading) -> float | None:
    """x2, or /2 where twice would leave the metric's range; None when neither keeps the reading's kind (an
    integer stays an integer, so a plugin parsing ``int()`` reads it)."""
    ceiling = METRIC_CEILINGS.get(sample.name, math.inf)
    if sample.value * 2 <= ceiling:
        return 2.0
    if not reading.value.is_integer() or reading.value % 2 == 0:
        return 0.5
    return None


def _number_text(old: str, value: float) -> str:
    return str(int(value)) if value.is_integer() and "." not in old else repr(value)


def with_reading(host: dict[str, Any], reading: Reading, text: Callable[[str], str],
                 value: Callable[[Any], Any]) -> dict[str, Any]:
    """The host state with one reading rewritten where the vendor wrote it: in a file or a CSV cell the number's
    text becomes ``text(old text)``, in a library's data or a command's JSON the value becomes ``value(old)``.

    ``host`` is not changed. Only the containers on the way to the reading are new; the rest of the state is
    ``host``'s own, shared (a JSON round trip of the whole state per reading was most of the CPU of the checks
    that rewrite one reading after another). Neither this nor a caller changes a state in place: each is
    validated into a :class:`~rayaccel.hosts.fixtures.HostState`, which a simulated host dumps afresh."""
    section = {"file": "files", "library": "libraries"}.get(reading.where, "commands")
    entries = dict(host[section])
    state = {**host, section: entries}
    if reading.where == "file":
        old = entries[reading.key]
        number = _NUMBER.match(old)
        assert number is not None
        entries[reading.key] = old.replace(number.group(1), text(number.group(1)), 1)
        return state
    if reading.where == "library":
        data = entries[reading.key] = _shallow_copy(entries[reading.key])
        inner = data
        for step in reading.path[:-1]:
            inner[step] = _shallow_copy(inner[step])
            inner = inner[step]
        inner[reading.path[-1]] = value(inner[reading.path[-1]])
        return state
    command = entries[reading.key] = dict(entries[reading.key])
    if reading.where == "table":
        lines = command["stdout"].split("\n")
        cells = lines[int(reading.path[0])].split(",")
        cell = cells[int(reading.path[1])]
        number = _CELL.match(cell)
        assert number is not None
        cells[int(reading.path[1])] = cell.replace(number.group(1), text(number.group(1)), 1)
        lines[int(reading.path[0])] = ",".join(cells)
        command["stdout"] = "\n".join(lines)
        return state
    parsed = json.loads(command["stdout"])
    inner = parsed
    for step in reading.path[:-1]:
        inner = inner[step]
    inner[reading.path[-1]] = value(inner[reading.path[-1]])
    command["stdout"] = json.dumps(parsed)
    return state


def _shallow_copy(container: Any) -> Any:
    """A new list or dict holding the same items (JSON data holds no other container)."""
    return list(container) if isinstance(container, list) else dict(container)


def scaled_host(host: dict[str, Any], reading: Reading, k: float) -> dict[str, Any]:
    """The host state with one reading multiplied by ``k``, written as the vendor wrote it."""
    scaled = reading.value * k
    return with_reading(host, reading, lambda old: _number_text(old, scaled),
                        lambda old: int(scaled) if isinstance(old, int) and scaled.is_integer() else scaled)


def samples_by_device(family: FamilyInventory | None) -> dict[tuple[str, str], float]:
    return {(s.device, s.name): s.value for s in (family.metrics if family else [])}


def verdict(sample: MetricSample, k: float, before: dict[tuple[str, str], float],
            after: dict[tuple[str, str], float]) -> tuple[str, list[str]]:
    """("moved", others changed) when the sample moved by exactly k, ("stayed", ...) when it did not move,
    ("other", ...) when it moved by another factor; the second item names other devices' samples that moved."""
    others = [f"{name} of {dev} from {value:g} to {after.get((dev, name), float('nan')):g}"
              for (dev, name), value in before.items() if dev != sample.device and name == sample.name
              and not math.isclose(after.get((dev, name), math.nan), value, rel_tol=MATCH_TOLERANCE)]
    now = after.get((sample.device, sample.name))
    if now is not None and math.isclose(now, sample.value * k, rel_tol=MATCH_TOLERANCE):
        return "moved", others
    if now is not None and math.isclose(now, sample.value, rel_tol=MATCH_TOLERANCE):
        return "stayed", others
    return "other", others


def chosen_device(family: FamilyInventory) -> Device | None:
    """The device the readings are scaled on: the middle one (not the first: a plugin reading every device's
    metric from the first device's entry moves them all)."""
    devices = [d for d in family.devices if any(s.device == d.id for s in family.metrics)]
    return devices[len(devices) // 2] if devices else None


def device_with_samples(ref: str, family: FamilyInventory | None) -> tuple[FamilyInventory, Device]:
    """``family`` (the plugin's, built from fixture ``ref``) and its :func:`chosen_device`; a check of one device's
    readings is not applicable where there is none."""
    device = chosen_device(family) if family is not None else None
    if family is None or device is None:
        raise NotApplicable(f"{ref}: no device with metric samples")
    return family, device


# A device's name padded as tools pad it (RAC225) ---------------------------------------------------------------


@dataclass(frozen=True)
class TextReading:
    """Where a device's product name is written on the host: a file holding it alone, or a cell of a CSV row."""

    where: str  # "file" or "table"
    key: str  # the file's path, the command line
    cell: tuple[int, int] = (0, 0)  # (line, field) of a table

    def describe(self) -> str:
        if self.where == "table":
            return f"`{self.key}` output line {self.cell[0]} field {self.cell[1]}"
        return f"file {self.key}"


def name_readings(host: dict[str, Any], device: Device) -> list[TextReading]:
    """The device's own files and CSV cells whose text is its product name (tools write names as text: a
    library's or JSON's strings are data, not padded by anyone)."""
    if not device.product_name:
        return []
    found = []
    for path, text in (host.get("files") or {}).items():
        if (text or "").strip() == device.product_name and owned_by(Reading("file", path, (), 0.0), device):
            found.append(TextReading("file", path))
    for line, answer in (host.get("commands") or {}).items():
        for n, row in enumerate(((answer or {}).get("stdout") or "").splitlines()):
            if not owned_by(Reading("table", line, (), 0.0, row), device):
                continue
            found += [TextReading("table", line, (n, i)) for i, cell in enumerate(row.split(","))
                      if cell.strip() == device.product_name]
    return found


def padded_host(host: dict[str, Any], reading: TextReading, before: str, after: str) -> dict[str, Any]:
    """The host with the name at ``reading`` written with ``before`` and ``after`` around it."""
    state: dict[str, Any] = json.loads(json.dumps(host))
    if reading.where == "file":
        text = state["files"][reading.key]
        name = text.strip()
        state["files"][reading.key] = text.replace(name, f"{before}{name}{after}", 1)
        return state
    lines = state["commands"][reading.key]["stdout"].split("\n")
    cells = lines[reading.cell[0]].split(",")
    name = cells[reading.cell[1]].strip()
    cells[reading.cell[1]] = cells[reading.cell[1]].replace(name, f"{before}{name}{after}", 1)
    lines[reading.cell[0]] = ",".join(cells)
    state["commands"][reading.key]["stdout"] = "\n".join(lines)
    return state


#: What a quoted cell adds to the name: a comma, as a maker's revision or variant suffix is written; the same
#: words without the comma are the name the quoted cell is compared with (neither is a catalog's name).
COMMA_SUFFIX, PLAIN_SUFFIX = ", rev B", " rev B"


def quotes_cells(command: str) -> bool:
    """A command asking for CSV in the query syntax the template's tool documents (``--format=csv``, as
    nvidia-smi's): a cell holding a comma is written quoted (RFC 4180), so a name may arrive so."""
    return any(word == "--format=csv" or word.startswith("--format=csv,") for word in command.split())


def quoted_host(host: dict[str, Any], reading: TextReading, text: str, quote: bool = True) -> dict[str, Any]:
    """The host with the CSV cell at ``reading`` holding ``text``, quoted as RFC 4180 quotes a cell holding a
    comma (the padding before it kept: tools print ``, "..."``); written plain with ``quote`` False."""
    state: dict[str, Any] = json.loads(json.dumps(host))
    lines = state["commands"][reading.key]["stdout"].split("\n")
    cells = lines[reading.cell[0]].split(",")
    old = cells[reading.cell[1]]
    quoted = '"' + text.replace('"', '""') + '"' if quote else text
    cells[reading.cell[1]] = old[: len(old) - len(old.lstrip())] + quoted
    lines[reading.cell[0]] = ",".join(cells)
    state["commands"][reading.key]["stdout"] = "\n".join(lines)
    return state
