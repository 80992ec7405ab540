"""Reads the devices from the vendor's command-line tool, which prints CSV (like ``nvidia-smi
--format=csv,noheader``). The one module that touches the vendor interface: every other module works on
the records in :mod:`readings`.

Commands run (always without a shell and with a timeout): ``{{ cookiecutter.__tool }} --query-<table>=<columns>
--format=csv,noheader`` for the tables device, health, link and stats, and ``--query-driver=version``.
"""

from __future__ import annotations

import csv
import io
import shlex
from collections.abc import Sequence

from rayaccel import CommandNotFound, Device, Host, HostError, report_problem, vendor_int

from {{ cookiecutter.__module }}.readings import (
    MAX_DEVICES,
    DeviceHealth,
    DeviceInfo,
    DeviceStats,
    PeerLink,
    ProbeError,
    device_index,
    each_record,
    memory_size,
    optional_int,
    pci_id,
    reading,
    reading_if_supported,
    text_value,
    version_text,
    whole_number_if_supported,
)

# VENDOR: your tool's name, and the query syntax and column names it understands.
TOOL = "{{ cookiecutter.__tool }}"
DEVICE_COLUMNS = ("index", "uuid", "product", "pci_device_id", "memory_mib", "pci_bus_id", "numa_node")
HEALTH_COLUMNS = ("uuid", "fatal_errors", "corrected_errors")
LINK_COLUMNS = ("a", "b", "gbytes_per_s")
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
    uuid, product = text_value(r["uuid"], "uuid"), text_value(r["product"], "product")
    if not uuid or not product:
        raise ProbeError("the device has no readable uuid or product")
    return DeviceInfo(
        index=device_index(r["index"]), uuid=uuid, product=product, pci_device_id=pci_id(r["pci_device_id"]),
        memory_mib=memory_size(r["memory_mib"], "memory_mib"), pci_bus_id=text_value(r["pci_bus_id"], "pci_bus_id"),
        numa_node=optional_int(r["numa_node"], "numa_node"),
    )


def parse_devices(text: str) -> list[DeviceInfo]:
    return sorted(each_record(parse_rows(text, DEVICE_COLUMNS), _device, "device table"), key=lambda d: d.index)


def parse_links(text: str) -> list[PeerLink]:
    return each_record(parse_rows(text, LINK_COLUMNS),
                       lambda r: PeerLink(r["a"], r["b"], reading(r["gbytes_per_s"], "gbytes_per_s")),
                       "link table")


def _health(r: dict[str, str]) -> DeviceHealth:
    fatal, corrected = vendor_int(r["fatal_errors"], "fatal_errors"), vendor_int(r["corrected_errors"],
                                                                               "corrected_errors")
    uuid = text_value(r["uuid"], "uuid")
    if uuid is None or fatal is None or corrected is None:
        raise ProbeError("the entry has no readable uuid, fatal_errors and corrected_errors")
    return DeviceHealth(uuid, fatal, corrected)


def parse_health(text: str) -> dict[str, DeviceHealth]:
    return {h.uuid: h for h in each_record(parse_rows(text, HEALTH_COLUMNS), _health, "health table")}


def parse_stats(text: str) -> dict[str, DeviceStats]:
    def build(r: dict[str, str]) -> DeviceStats:
        return DeviceStats(r["uuid"], reading_if_supported(r["utilization"], "utilization"),
                           reading_if_supported(r["temperature"], "temperature"),
                           reading_if_supported(r["power"], "power"),
                           whole_number_if_supported(r["memory_used_mib"], "memory_used_mib"))

    return {s.uuid: s for s in each_record(parse_rows(text, STATS_COLUMNS), build, "stats table")}


def driver_version(host: Host) -> str | None:
    text = run_csv(host, query("driver", ("version",)))
    if text is not None and not text.strip():
        report_problem("missing-value", f"{TOOL} --query-driver=version printed nothing; the driver version is "
                       "unknown")
    return None if text is None else version_text(text)


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
