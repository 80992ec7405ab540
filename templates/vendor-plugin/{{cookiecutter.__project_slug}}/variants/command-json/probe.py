"""Reads the devices from the vendor's command-line tool, which prints JSON. The one module that touches
the vendor interface: every other module works on the records in :mod:`readings`.

Commands run (always without a shell and with a timeout)::

    {{ cookiecutter.__tool }} list --json     {"driver_version": ..., "devices": [...], "links": [...]}
    {{ cookiecutter.__tool }} health --json   {"devices": [{"uuid", "fatal_errors", "corrected_errors"}]}
    {{ cookiecutter.__tool }} stats --json    {"devices": [{"uuid", "utilization", "temperature", "power", "memory_used_mib"}]}
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Sequence
from typing import Any

from rayaccel import CommandNotFound, Device, Host, HostError, report_problem
from rayaccel.reporting import vendor_int

from {{ cookiecutter.__module }}.readings import (
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
    text_value,
    version_text,
    whole_number,
)

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
    uuid, product = text_value(row.get("uuid"), "uuid"), text_value(row.get("product"), "product")
    if not uuid or not product:
        raise ProbeError("the device has no readable uuid or product")
    return DeviceInfo(
        index=device_index(row.get("index")), uuid=uuid, product=product,
        pci_device_id=pci_id(row.get("pci_device_id")), memory_mib=memory_size(row.get("memory_mib"), "memory_mib"),
        pci_bus_id=text_value(row.get("pci_bus_id"), "pci_bus_id"),
        numa_node=optional_int(row.get("numa_node"), "numa_node"),
    )


def parse_devices(doc: Any) -> list[DeviceInfo]:
    return sorted(each_record(_rows(doc, "devices"), _device, shlex.join(LIST)), key=lambda d: d.index)


def parse_links(doc: Any) -> list[PeerLink]:
    def build(r: dict[str, Any]) -> PeerLink:
        return PeerLink(str(text_value(r["a"], "a")), str(text_value(r["b"], "b")), reading(r["gbps"], "gbps"))

    return each_record(_rows(doc, "links"), build, "links")


def _health(row: dict[str, Any]) -> DeviceHealth:
    uuid = text_value(row.get("uuid"), "uuid")
    fatal, corrected = vendor_int(row.get("fatal_errors"), "fatal_errors"), vendor_int(row.get("corrected_errors"),
                                                                                     "corrected_errors")
    if uuid is None or fatal is None or corrected is None:
        raise ProbeError("the entry has no readable uuid, fatal_errors and corrected_errors")
    return DeviceHealth(uuid, fatal, corrected)


def parse_health(doc: Any) -> dict[str, DeviceHealth]:
    return {h.uuid: h for h in each_record(_rows(doc, "devices"), _health, shlex.join(HEALTH))}


def parse_stats(doc: Any) -> dict[str, DeviceStats]:
    def build(r: dict[str, Any]) -> DeviceStats:
        uuid = text_value(r["uuid"], "uuid")
        if uuid is None:
            raise ProbeError("the entry has no readable uuid")
        return DeviceStats(uuid, reading(r["utilization"], "utilization"), reading(r["temperature"], "temperature"),
                           reading(r["power"], "power"), whole_number(r["memory_used_mib"], "memory_used_mib"))

    return {s.uuid: s for s in each_record(_rows(doc, "devices"), build, shlex.join(STATS))}


def driver_version(host: Host) -> str | None:
    doc = run_json(host, LIST)
    return version_text(doc.get("driver_version")) if isinstance(doc, dict) else None


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
