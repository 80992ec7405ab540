{% set kind = cookiecutter.probe_kind %}
{% if kind == "sysfs" %}
"""Reads the devices from sysfs, as the kernel driver exposes them. The one module that touches the vendor
interface: every other module works on the records defined here.

Layout read::

    /sys/class/{{ cookiecutter.__sysfs_class }}/{{ cookiecutter.__sysfs_class }}<N>/{uuid,product,device,memory_mib,pci_bus_id,numa_node}
    /sys/class/{{ cookiecutter.__sysfs_class }}/{{ cookiecutter.__sysfs_class }}<N>/{fatal_errors,corrected_errors}
    /sys/class/{{ cookiecutter.__sysfs_class }}/{{ cookiecutter.__sysfs_class }}<N>/{utilization,temperature,power,memory_used_mib}
    /sys/class/{{ cookiecutter.__sysfs_class }}/{{ cookiecutter.__sysfs_class }}<N>/links/<peer uuid>   (content: GB/s)
    /sys/module/{{ cookiecutter.__sysfs_class }}/version
"""
{% elif kind == "command-json" %}
"""Reads the devices from the vendor's command-line tool, which prints JSON. The one module that touches
the vendor interface: every other module works on the records defined here.

Commands run (always without a shell and with a timeout)::

    {{ cookiecutter.__tool }} list --json     {"driver_version": ..., "devices": [...], "links": [...]}
    {{ cookiecutter.__tool }} health --json   {"devices": [{"uuid", "fatal_errors", "corrected_errors"}]}
    {{ cookiecutter.__tool }} stats --json    {"devices": [{"uuid", "utilization", "temperature", "power", "memory_used_mib"}]}
"""
{% elif kind == "command-csv" %}
"""Reads the devices from the vendor's command-line tool, which prints CSV (like ``nvidia-smi
--format=csv,noheader``). The one module that touches the vendor interface: every other module works on
the records defined here.

Commands run (always without a shell and with a timeout): ``{{ cookiecutter.__tool }} --query-<table>=<columns>
--format=csv,noheader`` for the tables device, health, link and stats, and ``--query-driver=version``.
"""
{% else %}
"""Reads the devices through the vendor's Python library, behind a small adapter. The one module that
touches the vendor interface: every other module works on the records defined here.

The adapter is registered with rayaccel as library ``{{ cookiecutter.__family }}-lib``: on a real machine
``host.library(...)`` calls :func:`open_real`, on a simulated host :func:`open_simulated` with the
fixture's ``host.libraries["{{ cookiecutter.__family }}-lib"]`` data.
"""
{% endif %}

from __future__ import annotations

{% if kind == "command-csv" %}
import csv
import io
{% endif %}
{% if kind == "command-json" %}
import json
{% endif %}
{% if kind in ("command-json", "command-csv") %}
import shlex
{% endif %}
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

{% if kind in ("command-json", "command-csv") %}
from rayaccel import CommandNotFound, Device, Host, HostError, report_problem
{% elif kind == "python-library" %}
from rayaccel import Device, Host, LibraryUnavailable, report_problem
from rayaccel.host import register_library_adapter
{% else %}
from rayaccel import Device, Host, report_problem
{% endif %}
from rayaccel.reporting import malformed, vendor_int


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
    uuid: str
    utilization_percent: float
    temperature_c: float
    power_w: float
    memory_used_mib: int


@dataclass(frozen=True)
class PeerLink:
    a: str
    b: str
    gbps: float


def _int(value: Any, what: str) -> int:
    text = str(value).strip()
    if not (text.isascii() and text.isdigit() and len(text) <= 15):  # a count or size: 0 .. 10**15
        raise ProbeError(f"{what}: expected a whole number, got {value!r:.60}")
    return int(text)


def _float(value: Any, what: str) -> float:
    try:
        number = float(str(value).strip())
    except ValueError:
        raise ProbeError(f"{what}: expected a number, got {value!r:.60}") from None
    if not 0 <= number <= 1e6:  # also NaN and infinities: no reading of a device is outside this
        raise ProbeError(f"{what}: {value!r:.60} is not a plausible reading")
    return number


# VENDOR: the physical limits of your hardware. A value beyond them is a broken answer: reported, not used.
MAX_DEVICES = 1024
MAX_MEMORY_MIB = 2**24

T = TypeVar("T")


def _optional_int(value: Any, what: str) -> int | None:
    """An optional number (NUMA node): "-1"/N/A mean none; anything malformed is reported and unknown."""
    text = "" if value is None else str(value).strip()
    if text in ("", "-1", "[N/A]", "N/A"):
        return None
    return vendor_int(value, what, maximum=4095)


def _index(value: Any) -> int:
    """A device's index: without a usable one the device cannot be reported (ProbeError skips it)."""
    number = vendor_int(value, "index", maximum=MAX_DEVICES - 1)
    if number is None:
        raise ProbeError(f"index {value!r:.40} is not a device index; this device is not reported")
    return number


def _memory(value: Any, what: str) -> int | None:
    return vendor_int(value, what, maximum=MAX_MEMORY_MIB)


def _text(value: Any, what: str) -> str | None:
    """Text a device reports; another type, or bytes that are not text, is reported and ignored."""
    if value is None or value == "":
        return None
    if isinstance(value, str) and value.isprintable() and "\ufffd" not in value and len(value) <= 256:
        return value
    malformed(what, value, "text")
    return None


def _pci_id(value: Any) -> str | None:
    text = "" if value is None else str(value).strip().lower()
    if not text:
        return None
    if not (text.startswith("0x") and len(text) == 6 and all(c in "0123456789abcdef" for c in text[2:])):
        malformed("pci_device_id", value, "a PCI device id like 0x0a01")
        return None
    return text


def _each(rows: Iterable[Any], build: Callable[[Any], T], what: str) -> list[T]:
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


def _driver_version(value: Any) -> str | None:
    text = "" if value is None else str(value).strip()
    if not text:
        return None
    if len(text) > 64 or not all(c.isalnum() or c in ".-_+~" for c in text):
        malformed("driver version", text, "a version like 1.0.0")
        return None
    return text


{% if kind == "sysfs" %}
# VENDOR: the class and attribute names your kernel driver creates.
CLASS = "{{ cookiecutter.__sysfs_class }}"
SYSFS = f"/sys/class/{CLASS}"
DRIVER_VERSION = f"/sys/module/{CLASS}/version"


def _attr(host: Host, path: str) -> str:
    try:
        return host.read_text(path).strip()
    except (FileNotFoundError, IsADirectoryError):
        raise ProbeError(f"{path} is missing") from None


def _device_dirs(host: Host) -> list[tuple[int, str]]:
    if not host.is_dir(SYSFS):
        return []  # no driver loaded: no devices, not an error
    found = []
    for path in host.glob(f"{SYSFS}/{CLASS}*"):
        suffix = path.rsplit("/", 1)[1][len(CLASS):]
        if suffix.isdigit():
            found.append((int(suffix), path))
    return sorted(found)


def driver_version(host: Host) -> str | None:
    return _driver_version(_attr(host, DRIVER_VERSION)) if host.exists(DRIVER_VERSION) else None


def read_devices(host: Host) -> list[DeviceInfo]:
    def build(found: tuple[int, str]) -> DeviceInfo:
        index, path = found
        uuid, product = _text(_attr(host, f"{path}/uuid"), f"{path}/uuid"), _text(_attr(host, f"{path}/product"),
                                                                                  f"{path}/product")
        if not uuid or not product:
            raise ProbeError(f"{path}: no readable uuid or product")
        return DeviceInfo(
            index=index, uuid=uuid, product=product, pci_device_id=_pci_id(_attr(host, f"{path}/device")),
            memory_mib=_memory(_attr(host, f"{path}/memory_mib"), f"{path}/memory_mib"),
            pci_bus_id=_text(_attr(host, f"{path}/pci_bus_id"), f"{path}/pci_bus_id"),
            numa_node=_optional_int(_attr(host, f"{path}/numa_node"), f"{path}/numa_node"),
        )

    return _each(_device_dirs(host), build, SYSFS)


def read_links(host: Host, devices: Sequence[Device]) -> list[PeerLink]:
    found = [(device.id, f"{SYSFS}/{CLASS}{device.index}/links") for device in devices]
    pairs = [(device, base, peer) for device, base in found for peer in (host.list_dir(base) if host.is_dir(base)
                                                                          else [])]
    return _each(pairs, lambda p: PeerLink(p[0], p[2], _float(_attr(host, f"{p[1]}/{p[2]}"), f"{p[1]}/{p[2]}")),
                 f"{SYSFS} links")


def read_health(host: Host, devices: Sequence[Device]) -> dict[str, DeviceHealth]:
    def build(device: Device) -> DeviceHealth:
        path = f"{SYSFS}/{CLASS}{device.index}"
        fatal = vendor_int(_attr(host, f"{path}/fatal_errors"), f"{path}/fatal_errors")
        corrected = vendor_int(_attr(host, f"{path}/corrected_errors"), f"{path}/corrected_errors")
        if fatal is None or corrected is None:
            raise ProbeError(f"{path}: the error counters cannot be read")
        return DeviceHealth(device.id, fatal, corrected)

    return {h.uuid: h for h in _each(devices, build, f"{SYSFS} error counters")}


def read_stats(host: Host, devices: Sequence[Device]) -> dict[str, DeviceStats]:
    def build(device: Device) -> DeviceStats:
        path = f"{SYSFS}/{CLASS}{device.index}"
        return DeviceStats(
            device.id, _float(_attr(host, f"{path}/utilization"), "utilization"),
            _float(_attr(host, f"{path}/temperature"), "temperature"), _float(_attr(host, f"{path}/power"), "power"),
            _int(_attr(host, f"{path}/memory_used_mib"), "memory_used_mib"))

    return {s.uuid: s for s in _each(devices, build, f"{SYSFS} readings")}
{% elif kind == "command-json" %}
# VENDOR: your tool's name and the arguments that make it print JSON.
TOOL = "{{ cookiecutter.__tool }}"
LIST = [TOOL, "list", "--json"]
HEALTH = [TOOL, "health", "--json"]
STATS = [TOOL, "stats", "--json"]
#: A wedged driver makes management tools hang; never wait longer than this.
TIMEOUT = 5.0


def _checked(argv: list[str], text: str) -> str:
    """The output, after reporting what shows it is damaged: undecodable bytes."""
    if "\ufffd" in text:
        report_problem("non-utf-8-output", f"{shlex.join(argv)} printed bytes that are not UTF-8; values holding "
                       "them are ignored")
    return text


def run_json(host: Host, argv: list[str]) -> Any | None:
    """The tool's parsed answer; None when the tool is not installed (no driver: no devices)."""
    if host.which(TOOL) is None:
        return None
    try:
        result = host.run(argv, timeout=TIMEOUT)
    except CommandNotFound:
        return None
    except HostError as e:  # hung (timed out), or an answer over the host's size limit
        raise ProbeError(str(e)) from None
    if result.returncode != 0:
        raise ProbeError(f"{shlex.join(argv)} exited with {result.returncode}: {result.stderr.strip()[:200]}")
    try:
        return json.loads(_checked(argv, result.stdout))
    except (json.JSONDecodeError, RecursionError) as e:
        raise ProbeError(f"{shlex.join(argv)} printed invalid JSON: {e}") from None


def _rows(doc: Any, key: str) -> list[dict[str, Any]]:
    rows = doc.get(key) if isinstance(doc, dict) else None
    if not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows):
        raise ProbeError(f"expected a list of objects under {key!r}")
    return rows


def _device(row: dict[str, Any]) -> DeviceInfo:
    uuid, product = _text(row.get("uuid"), "uuid"), _text(row.get("product"), "product")
    if not uuid or not product:
        raise ProbeError("the device has no readable uuid or product")
    return DeviceInfo(
        index=_index(row.get("index")), uuid=uuid, product=product, pci_device_id=_pci_id(row.get("pci_device_id")),
        memory_mib=_memory(row.get("memory_mib"), "memory_mib"), pci_bus_id=_text(row.get("pci_bus_id"), "pci_bus_id"),
        numa_node=_optional_int(row.get("numa_node"), "numa_node"),
    )


def parse_devices(doc: Any) -> list[DeviceInfo]:
    return sorted(_each(_rows(doc, "devices"), _device, shlex.join(LIST)), key=lambda d: d.index)


def parse_links(doc: Any) -> list[PeerLink]:
    return _each(_rows(doc, "links"), lambda r: PeerLink(str(_text(r["a"], "a")), str(_text(r["b"], "b")),
                                                          _float(r["gbps"], "gbps")), "links")


def _health(row: dict[str, Any]) -> DeviceHealth:
    uuid = _text(row.get("uuid"), "uuid")
    fatal, corrected = vendor_int(row.get("fatal_errors"), "fatal_errors"), vendor_int(row.get("corrected_errors"),
                                                                                     "corrected_errors")
    if uuid is None or fatal is None or corrected is None:
        raise ProbeError("the entry has no readable uuid, fatal_errors and corrected_errors")
    return DeviceHealth(uuid, fatal, corrected)


def parse_health(doc: Any) -> dict[str, DeviceHealth]:
    return {h.uuid: h for h in _each(_rows(doc, "devices"), _health, shlex.join(HEALTH))}


def parse_stats(doc: Any) -> dict[str, DeviceStats]:
    def build(r: dict[str, Any]) -> DeviceStats:
        uuid = _text(r["uuid"], "uuid")
        if uuid is None:
            raise ProbeError("the entry has no readable uuid")
        return DeviceStats(uuid, _float(r["utilization"], "utilization"), _float(r["temperature"], "temperature"),
                           _float(r["power"], "power"), _int(r["memory_used_mib"], "memory_used_mib"))

    return {s.uuid: s for s in _each(_rows(doc, "devices"), build, shlex.join(STATS))}


def driver_version(host: Host) -> str | None:
    doc = run_json(host, LIST)
    return _driver_version(doc.get("driver_version")) if isinstance(doc, dict) else None


def read_devices(host: Host) -> list[DeviceInfo]:
    doc = run_json(host, LIST)
    return [] if doc is None else parse_devices(doc)


def read_links(host: Host, devices: Sequence[Device]) -> list[PeerLink]:
    doc = run_json(host, LIST)
    return [] if doc is None or "links" not in doc else parse_links(doc)


def read_health(host: Host, devices: Sequence[Device]) -> dict[str, DeviceHealth]:
    doc = run_json(host, HEALTH)
    return {} if doc is None else parse_health(doc)


def read_stats(host: Host, devices: Sequence[Device]) -> dict[str, DeviceStats]:
    doc = run_json(host, STATS)
    return {} if doc is None else parse_stats(doc)
{% elif kind == "command-csv" %}
# VENDOR: your tool's name, and the query syntax and column names it understands.
TOOL = "{{ cookiecutter.__tool }}"
DEVICE_COLUMNS = ("index", "uuid", "product", "pci_device_id", "memory_mib", "pci_bus_id", "numa_node")
HEALTH_COLUMNS = ("uuid", "fatal_errors", "corrected_errors")
LINK_COLUMNS = ("a", "b", "gbps")
STATS_COLUMNS = ("uuid", "utilization", "temperature", "power", "memory_used_mib")
#: A wedged driver makes management tools hang; never wait longer than this.
TIMEOUT = 5.0


def query(table: str, columns: tuple[str, ...]) -> list[str]:
    return [TOOL, f"--query-{table}={','.join(columns)}", "--format=csv,noheader"]


def run_csv(host: Host, argv: list[str]) -> str | None:
    """The tool's output; None when the tool is not installed (no driver: no devices)."""
    if host.which(TOOL) is None:
        return None
    try:
        result = host.run(argv, timeout=TIMEOUT)
    except CommandNotFound:
        return None
    except HostError as e:  # hung (timed out), or an answer over the host's size limit
        raise ProbeError(str(e)) from None
    if result.returncode != 0:
        raise ProbeError(f"{shlex.join(argv)} exited with {result.returncode}: {result.stderr.strip()[:200]}")
    text = result.stdout
    if "\ufffd" in text:
        report_problem("non-utf-8-output", f"{shlex.join(argv)} printed bytes that are not UTF-8; values holding "
                       "them are ignored")
    if text and not text.endswith("\n"):
        # Tools end every line with a newline: output that does not was cut short (the last line is dropped).
        report_problem("truncated-output", f"{shlex.join(argv)} printed output that ends mid-line (cut short?); "
                       "its last line is ignored", severity="error")
        text = text[: text.rfind("\n") + 1]
    return text


def parse_rows(text: str, columns: tuple[str, ...]) -> list[dict[str, str]]:
    """CSV without a header; values may be quoted and padded, as vendor tools print them. A line with the
    wrong number of columns is reported and skipped; the other lines are kept."""
    rows = []
    for number, row in enumerate(csv.reader(io.StringIO(text), skipinitialspace=True), start=1):
        if not row or all(not cell.strip() for cell in row):
            continue
        if number > 4 * MAX_DEVICES:
            report_problem("too-many-rows", f"more than {4 * MAX_DEVICES} lines of {', '.join(columns)}; the rest "
                           "are ignored")
            break
        if len(row) != len(columns):
            report_problem("malformed-output", f"line {number}: expected {len(columns)} columns "
                           f"({', '.join(columns)}), got {len(row)}; the line is ignored", severity="error")
            continue
        rows.append({key: cell.strip() for key, cell in zip(columns, row, strict=True)})
    return rows


def _device(r: dict[str, str]) -> DeviceInfo:
    uuid, product = _text(r["uuid"], "uuid"), _text(r["product"], "product")
    if not uuid or not product:
        raise ProbeError("the device has no readable uuid or product")
    return DeviceInfo(
        index=_index(r["index"]), uuid=uuid, product=product, pci_device_id=_pci_id(r["pci_device_id"]),
        memory_mib=_memory(r["memory_mib"], "memory_mib"), pci_bus_id=_text(r["pci_bus_id"], "pci_bus_id"),
        numa_node=_optional_int(r["numa_node"], "numa_node"),
    )


def parse_devices(text: str) -> list[DeviceInfo]:
    return sorted(_each(parse_rows(text, DEVICE_COLUMNS), _device, "device table"), key=lambda d: d.index)


def parse_links(text: str) -> list[PeerLink]:
    return _each(parse_rows(text, LINK_COLUMNS), lambda r: PeerLink(r["a"], r["b"], _float(r["gbps"], "gbps")),
                 "link table")


def _health(r: dict[str, str]) -> DeviceHealth:
    fatal, corrected = vendor_int(r["fatal_errors"], "fatal_errors"), vendor_int(r["corrected_errors"],
                                                                               "corrected_errors")
    uuid = _text(r["uuid"], "uuid")
    if uuid is None or fatal is None or corrected is None:
        raise ProbeError("the entry has no readable uuid, fatal_errors and corrected_errors")
    return DeviceHealth(uuid, fatal, corrected)


def parse_health(text: str) -> dict[str, DeviceHealth]:
    return {h.uuid: h for h in _each(parse_rows(text, HEALTH_COLUMNS), _health, "health table")}


def parse_stats(text: str) -> dict[str, DeviceStats]:
    def build(r: dict[str, str]) -> DeviceStats:
        return DeviceStats(r["uuid"], _float(r["utilization"], "utilization"), _float(r["temperature"], "temperature"),
                           _float(r["power"], "power"), _int(r["memory_used_mib"], "memory_used_mib"))

    return {s.uuid: s for s in _each(parse_rows(text, STATS_COLUMNS), build, "stats table")}


def driver_version(host: Host) -> str | None:
    text = run_csv(host, query("driver", ("version",)))
    if text is not None and not text.strip():
        report_problem("missing-value", f"{TOOL} --query-driver=version printed nothing; the driver version is "
                       "unknown")
    return None if text is None else _driver_version(text)


def read_devices(host: Host) -> list[DeviceInfo]:
    text = run_csv(host, query("device", DEVICE_COLUMNS))
    return [] if text is None else parse_devices(text)


def read_links(host: Host, devices: Sequence[Device]) -> list[PeerLink]:
    text = run_csv(host, query("link", LINK_COLUMNS))
    return [] if text is None else parse_links(text)


def read_health(host: Host, devices: Sequence[Device]) -> dict[str, DeviceHealth]:
    text = run_csv(host, query("health", HEALTH_COLUMNS))
    return {} if text is None else parse_health(text)


def read_stats(host: Host, devices: Sequence[Device]) -> dict[str, DeviceStats]:
    text = run_csv(host, query("stats", STATS_COLUMNS))
    return {} if text is None else parse_stats(text)
{% else %}
LIBRARY = "{{ cookiecutter.__family }}-lib"


class SimulatedLibrary:
    """The vendor library's answers, from a fixture. The real adapter must offer the same methods."""

    def __init__(self, data: dict[str, Any]) -> None:
        self._data = data
        self._devices = {int(k): v for k, v in (data.get("devices") or {}).items()}

    def driver_version(self) -> str | None:
        version = self._data.get("driver_version")
        return None if version is None else str(version)

    def device_count(self) -> int:
        return len(self._devices)

    def device_info(self, index: int) -> dict[str, Any]:
        return {k: v for k, v in self._devices[index].items() if k not in ("links",)}

    def device_links(self, index: int) -> dict[str, float]:
        return dict(self._devices[index].get("links") or {})


def open_simulated(data: dict[str, Any]) -> SimulatedLibrary:
    return SimulatedLibrary(data)


def open_real() -> SimulatedLibrary:
    # VENDOR: return an adapter with SimulatedLibrary's methods, backed by your bindings, e.g.
    #     import acmeml                      # your library; raise LibraryUnavailable if it is missing
    #     acmeml.init()                      # raise LibraryUnavailable if the driver is not loaded
    #     return RealLibrary(acmeml)         # device_info(i) -> {"uuid": ..., "product": ..., ...}
    # Until then this plugin finds no devices on a real machine, which is what it must do without a driver.
    raise LibraryUnavailable(f"{LIBRARY}: the vendor library is not wired in yet (see VENDOR in {__name__})")


register_library_adapter(LIBRARY, f"{__name__}:open_real", f"{__name__}:open_simulated")


def _library(host: Host) -> SimulatedLibrary | None:
    try:
        return host.library(LIBRARY)  # type: ignore[no-any-return]
    except LibraryUnavailable:
        return None  # no library or no driver: no devices, not an error


def _field(info: dict[str, Any], key: str, index: int) -> Any:
    if key not in info:
        raise ProbeError(f"device {index}: the library reports no {key!r}")
    return info[key]


def driver_version(host: Host) -> str | None:
    lib = _library(host)
    return None if lib is None else lib.driver_version()


def read_devices(host: Host) -> list[DeviceInfo]:
    lib = _library(host)
    if lib is None:
        return []
    count = vendor_int(lib.device_count(), "device count", maximum=MAX_DEVICES) or 0

    def build(index: int) -> DeviceInfo:
        info = lib.device_info(index)
        uuid, product = _text(_field(info, "uuid", index), "uuid"), _text(_field(info, "product", index), "product")
        if not uuid or not product:
            raise ProbeError(f"device {index}: no readable uuid or product")
        return DeviceInfo(
            index=index, uuid=uuid, product=product, pci_device_id=_pci_id(info.get("pci_device_id")),
            memory_mib=_memory(info.get("memory_mib"), "memory_mib"),
            pci_bus_id=_text(info.get("pci_bus_id"), "pci_bus_id"),
            numa_node=_optional_int(info.get("numa_node"), "numa_node"),
        )

    return _each(range(count), build, LIBRARY)


def read_links(host: Host, devices: Sequence[Device]) -> list[PeerLink]:
    lib = _library(host)
    if lib is None:
        return []
    pairs = [(d.id, peer, gbps) for d in devices for peer, gbps in sorted(lib.device_links(d.index).items())]
    return _each(pairs, lambda p: PeerLink(p[0], str(p[1]), _float(p[2], "gbps")), f"{LIBRARY} links")


def read_health(host: Host, devices: Sequence[Device]) -> dict[str, DeviceHealth]:
    lib = _library(host)
    if lib is None:
        return {}

    def build(d: Device) -> DeviceHealth:
        info = lib.device_info(d.index)
        fatal = vendor_int(_field(info, "fatal_errors", d.index), "fatal_errors")
        corrected = vendor_int(_field(info, "corrected_errors", d.index), "corrected_errors")
        if fatal is None or corrected is None:
            raise ProbeError(f"device {d.index}: the error counters cannot be read")
        return DeviceHealth(d.id, fatal, corrected)

    return {h.uuid: h for h in _each(devices, build, f"{LIBRARY} error counters")}


def read_stats(host: Host, devices: Sequence[Device]) -> dict[str, DeviceStats]:
    lib = _library(host)
    if lib is None:
        return {}

    def build(d: Device) -> DeviceStats:
        info = lib.device_info(d.index)
        return DeviceStats(d.id, _float(info.get("utilization", 0), "utilization"),
                           _float(info.get("temperature", 0), "temperature"), _float(info.get("power", 0), "power"),
                           _int(info.get("memory_used_mib", 0), "memory_used_mib"))

    return {s.uuid: s for s in _each(devices, build, f"{LIBRARY} readings")}
{% endif %}
