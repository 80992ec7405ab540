"""Reads the devices from the vendor's command-line tool, which prints JSON. The one module that touches
the vendor interface: every other module works on the records in :mod:`readings`.

The plugin asks three questions, and :data:`QUERIES` is the one place that says how the tool answers each:
the command line (run without a shell and with a timeout) and where the answer sits in the JSON it prints.
As generated, each question is a command of its own::

    {{ cookiecutter.__tool }} list --json     {"driver_version": ..., "devices": [...], "links": [...]}
    {{ cookiecutter.__tool }} health --json   {"devices": [{"uuid", "fatal_errors", "corrected_errors"}]}
    {{ cookiecutter.__tool }} stats --json    {"devices": [{"uuid", "utilization", "temperature", "power", "memory_used_mib"}]}

A tool with ONE JSON command printing everything changes only :data:`QUERIES`, giving each question the same
command and the key its part sits under, e.g. for ``{{ cookiecutter.__tool }} --json`` printing
``{"driver_version": ..., "devices": [...], "links": [...], "health": {"devices": [...]}, "stats": {...}}``::

    EVERYTHING = (TOOL, "--json")
    QUERIES = {"devices": Query(EVERYTHING), "health": Query(EVERYTHING, ("health",)),
               "stats": Query(EVERYTHING, ("stats",))}

The parsers below then read the same records as before. Only where the records themselves differ (other
field names) does a parser change.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from rayaccel import CommandNotFound, Device, Host, HostError, report_problem, vendor_int

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
    reading_if_supported,
    text_value,
    version_text,
    whole_number_if_supported,
)


@dataclass(frozen=True)
class Query:
    """How the tool answers one question: the command line, and the keys leading to the answer in its JSON."""

    argv: tuple[str, ...]
    path: tuple[str, ...] = ()


# VENDOR: your tool's name, and for each question the command that answers it and where (see the docstring).
TOOL = "{{ cookiecutter.__tool }}"
QUERIES: dict[str, Query] = {
    "devices": Query((TOOL, "list", "--json")),  # {"driver_version", "devices": [...], "links": [...]}
    "health": Query((TOOL, "health", "--json")),  # {"devices": [{"uuid", "fatal_errors", "corrected_errors"}]}
    "stats": Query((TOOL, "stats", "--json")),  # {"devices": [{"uuid", "utilization", ...}]}
}
#: A wedged driver makes management tools hang; never wait longer than this.
TIMEOUT = 5.0


def _checked(argv: list[str], text: str) -> str:
    """The output, after reporting what shows it is damaged: undecodable bytes."""
    if "\ufffd" in text:
        report_problem("non-utf-8-output", f"{shlex.join(argv)} printed bytes that are not UTF-8; values holding "
                       "them are ignored")
    return text


def query(host: Host, question: str) -> Any | None:
    """The part of the tool's JSON answer that answers ``question`` (a key of :data:`QUERIES`); None when the
    tool is not installed (no driver: no devices)."""
    asked = QUERIES[question]
    answer = run_json(host, list(asked.argv))
    return None if answer is None else select(answer, asked)


def select(answer: Any, asked: Query) -> Any:
    """The part of a parsed answer ``asked.path`` leads to."""
    for key in asked.path:
        if not isinstance(answer, dict) or key not in answer:
            raise ProbeError(f"{shlex.join(asked.argv)} printed no {key!r} object")
        answer = answer[key]
    return answer


def run_json(host: Host, argv: list[str]) -> Any | None:
    """The tool's parsed answer; None when the tool is not installed (no driver: no devices)."""
    if host.which(argv[0]) is None:
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
    return sorted(each_record(_rows(doc, "devices"), _device, shlex.join(QUERIES["devices"].argv)),
                  key=lambda d: d.index)


def parse_links(doc: Any) -> list[PeerLink]:
    def build(r: dict[str, Any]) -> PeerLink:
        return PeerLink(str(text_value(r["a"], "a")), str(text_value(r["b"], "b")),
                        reading(r["gbytes_per_s"], "gbytes_per_s"))

    return each_record(_rows(doc, "links"), build, "links")


def _health(row: dict[str, Any]) -> DeviceHealth:
    uuid = text_value(row.get("uuid"), "uuid")
    fatal, corrected = vendor_int(row.get("fatal_errors"), "fatal_errors"), vendor_int(row.get("corrected_errors"),
                                                                                     "corrected_errors")
    if uuid is None or fatal is None or corrected is None:
        raise ProbeError("the entry has no readable uuid, fatal_errors and corrected_errors")
    return DeviceHealth(uuid, fatal, corrected)


def parse_health(doc: Any) -> dict[str, DeviceHealth]:
    return {h.uuid: h for h in each_record(_rows(doc, "devices"), _health, shlex.join(QUERIES["health"].argv))}


def parse_stats(doc: Any) -> dict[str, DeviceStats]:
    def build(r: dict[str, Any]) -> DeviceStats:
        uuid = text_value(r["uuid"], "uuid")
        if uuid is None:
            raise ProbeError("the entry has no readable uuid")
        # A key left out or "N/A": a reading the tool does not measure on this device, unknown.
        return DeviceStats(uuid, reading_if_supported(r.get("utilization"), "utilization"),
                           reading_if_supported(r.get("temperature"), "temperature"),
                           reading_if_supported(r.get("power"), "power"),
                           whole_number_if_supported(r.get("memory_used_mib"), "memory_used_mib"))

    return {s.uuid: s for s in each_record(_rows(doc, "devices"), build, shlex.join(QUERIES["stats"].argv))}


def driver_version(host: Host) -> str | None:
    doc = query(host, "devices")
    return version_text(doc.get("driver_version")) if isinstance(doc, dict) else None


def read_devices(host: Host) -> list[DeviceInfo]:
    doc = query(host, "devices")
    return [] if doc is None else parse_devices(doc)


def read_links(host: Host, devices: Sequence[Device]) -> list[PeerLink]:
    doc = query(host, "devices")
    return [] if not isinstance(doc, dict) or "links" not in doc else parse_links(doc)


def read_health(host: Host, devices: Sequence[Device]) -> dict[str, DeviceHealth]:
    doc = query(host, "health")
    return {} if doc is None else parse_health(doc)


def read_stats(host: Host, devices: Sequence[Device]) -> dict[str, DeviceStats]:
    doc = query(host, "stats")
    return {} if doc is None else parse_stats(doc)
