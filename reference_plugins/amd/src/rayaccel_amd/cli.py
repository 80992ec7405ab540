"""Read the GPUs through the ``amd-smi`` command line (its ``--json`` output), when amdsmi is not importable.

The parsers are pure functions of the text the tool printed. They accept both JSON layouts amd-smi has
shipped: a bare list of per-GPU objects (ROCm 6.0-6.2) and ``{"gpu_data": [...]}`` (ROCm 6.3+), and both
value styles: ``{"value": 196592, "unit": "MB"}`` and ``"196592 MB"``. Anything else raises
:class:`AmdSmiParseError` naming the command and what was wrong.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Collection, Mapping
from typing import Any

from rayaccel import CommandNotFound, CommandTimeout, Host
from rayaccel_amd.products import pci_device_id
from rayaccel_amd.snapshot import EccCounts, GpuRecord, PeerLink, Snapshot

AMD_SMI = "amd-smi"
#: amd-smi starts a Python interpreter and initialises every GPU: a few seconds on a busy 8-GPU node.
CLI_TIMEOUT = 6.0

_LINK_KINDS = {"XGMI": "xgmi", "PCIE": "pcie"}
_MIB_PER_UNIT = {"B": 1 / 2**20, "KB": 1 / 1024, "KIB": 1 / 1024, "MB": 1, "MIB": 1, "GB": 1024, "GIB": 1024}


class AmdSmiParseError(ValueError):
    """amd-smi printed something that is not the JSON it documents."""


class AmdSmiToolError(RuntimeError):
    """amd-smi hung or failed."""


# Parsing (pure) ------------------------------------------------------------------------------------


def parse_json(text: str, command: str) -> Any:
    try:
        return json.loads(text)
    except (json.JSONDecodeError, TypeError, RecursionError):
        flat = " ".join(str(text).split())
        shown = flat[:60] + ("..." if len(flat) > 60 else "")
        raise AmdSmiParseError(f"`{command}` printed output that is not JSON ({shown!r}); check that "
                               "amd-smi works on this node (`amd-smi list`) and matches the installed driver") from None


def gpu_entries(data: Any, command: str) -> list[dict[str, Any]]:
    """The per-GPU objects, each with an integer ``gpu`` index."""
    if isinstance(data, Mapping) and isinstance(data.get("gpu_data"), list):
        data = data["gpu_data"]
    if not isinstance(data, list):
        raise AmdSmiParseError(f"`{command}`: expected a list of GPUs or {{\"gpu_data\": [...]}}, got "
                               f"{type(data).__name__}")
    entries = []
    for item in data:
        if not isinstance(item, Mapping) or isinstance(item.get("gpu"), bool) or not isinstance(item.get("gpu"), int):
            raise AmdSmiParseError(f"`{command}`: every GPU entry needs an integer \"gpu\" index; got {_short(item)}")
        entries.append(dict(item))
    return entries


def value_of(field: Any) -> Any:
    """The bare value of ``{"value": v, "unit": u}``, ``"v unit"`` or ``v``; None for N/A."""
    if isinstance(field, Mapping):
        field = field.get("value")
    if isinstance(field, str):
        text = field.strip()
        if not text or text.upper().startswith("N/A"):
            return None
        match = re.fullmatch(r"(-?\d+(?:\.\d+)?)\s*[A-Za-z%/]*", text)
        if match:
            number = float(match.group(1))
            return int(number) if number.is_integer() else number
        return text
    if isinstance(field, bool):
        return None
    return field


def number_of(field: Any) -> float | None:
    value = value_of(field)
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def mib_of(field: Any) -> int | None:
    """Memory sizes in MiB; amd-smi's "MB" is MiB (it divides bytes by 1024*1024)."""
    unit = "MB"
    if isinstance(field, Mapping):
        unit = str(field.get("unit") or "MB")
    elif isinstance(field, str) and re.fullmatch(r"\s*\d+(\.\d+)?\s*[A-Za-z]+\s*", field):
        unit = re.sub(r"[\d.\s]", "", field)
    number = number_of(field)
    factor = _MIB_PER_UNIT.get(unit.upper())
    if number is None or factor is None or number < 0:
        return None
    return int(number * factor)


def _text(field: Any) -> str | None:
    value = value_of(field)
    return str(value).strip() if value is not None and str(value).strip() else None


def _dict(entry: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    value = entry.get(key)
    return value if isinstance(value, Mapping) else {}


def parse_static(text: str) -> dict[int, dict[str, Any]]:
    """``amd-smi static --json`` -> GPU index -> identity facts."""
    command = "amd-smi static --json"
    found: dict[int, dict[str, Any]] = {}
    for entry in gpu_entries(parse_json(text, command), command):
        asic, bus, driver = _dict(entry, "asic"), _dict(entry, "bus"), _dict(entry, "driver")
        vram, numa, partition = _dict(entry, "vram"), _dict(entry, "numa"), _dict(entry, "partition")
        name = _text(asic.get("market_name"))
        if name is None:
            raise AmdSmiParseError(f"`{command}`: GPU {entry['gpu']} has no asic.market_name; run amd-smi static "
                                   "with no section flags so the asic section is printed")
        numa_node = value_of(numa.get("node"))
        device_id = pci_device_id(_text(asic.get("device_id")))
        found[entry["gpu"]] = {
            "market_name": name,
            "device_id": int(device_id, 16) if device_id else None,
            "bdf": _text(bus.get("bdf")),
            "vram_mib": mib_of(vram.get("size")),
            "driver_version": _text(driver.get("version", driver.get("driver_version"))),
            "numa_node": numa_node if isinstance(numa_node, int) and numa_node >= 0 else None,
            # ROCm 6.4 renamed compute_partition to accelerator_partition.
            "compute_partition": _text(partition.get("compute_partition", partition.get("accelerator_partition"))),
            "memory_partition": _text(partition.get("memory_partition")),
            "gfx_target": _text(asic.get("target_graphics_version")),
            "asic_serial": _text(asic.get("asic_serial")),
        }
    return found


def parse_list(text: str) -> dict[int, dict[str, Any]]:
    """``amd-smi list --json`` -> GPU index -> uuid and bdf."""
    command = "amd-smi list --json"
    found = {}
    for entry in gpu_entries(parse_json(text, command), command):
        uuid = _text(entry.get("uuid"))
        if uuid is None:
            raise AmdSmiParseError(f"`{command}`: GPU {entry['gpu']} has no uuid")
        found[entry["gpu"]] = {"uuid": uuid, "bdf": _text(entry.get("bdf"))}
    return found


def parse_metric(text: str) -> dict[int, dict[str, Any]]:
    """``amd-smi metric --json`` -> GPU index -> ECC counts, activity, power, temperature, memory use."""
    command = "amd-smi metric --json"
    found: dict[int, dict[str, Any]] = {}
    for entry in gpu_entries(parse_json(text, command), command):
        # A query that failed is printed as its status in place of the section ("AMDSMI_STATUS_IO - I/O Error").
        errors = {key: value.split(" - ")[0].strip() for key, value in entry.items()
                  if isinstance(value, str) and value.startswith("AMDSMI_STATUS_")}
        ecc, usage, power = _dict(entry, "ecc"), _dict(entry, "usage"), _dict(entry, "power")
        temperature, memory = _dict(entry, "temperature"), _dict(entry, "mem_usage")
        counts = None
        if ecc:
            counts = EccCounts(
                correctable=int(number_of(ecc.get("total_correctable_count", ecc.get("correctable_count"))) or 0),
                uncorrectable=int(number_of(ecc.get("total_uncorrectable_count",
                                                    ecc.get("uncorrectable_count"))) or 0),
                deferred=int(number_of(ecc.get("total_deferred_count", ecc.get("deferred_count"))) or 0))
        power_w = next((p for p in (number_of(power.get(k)) for k in
                                    ("socket_power", "current_socket_power", "average_socket_power"))
                        if p is not None), None)
        used = mib_of(memory.get("used_vram"))
        total = mib_of(memory.get("total_vram"))
        found[entry["gpu"]] = {
            "ecc": counts,
            "gfx_activity": number_of(usage.get("gfx_activity")),
            "umc_activity": number_of(usage.get("umc_activity")),
            "power_w": power_w,
            "temperature_c": number_of(temperature.get("hotspot", temperature.get("junction"))),
            "vram_used_bytes": used * 2**20 if used is not None else None,
            "vram_total_bytes": total * 2**20 if total is not None else None,
            "errors": errors,
        }
    return found


def parse_topology(text: str) -> dict[int, dict[int, PeerLink]]:
    """``amd-smi topology --json`` -> GPU index -> peer index -> link."""
    command = "amd-smi topology --json"
    found: dict[int, dict[int, PeerLink]] = {}
    for entry in gpu_entries(parse_json(text, command), command):
        links = entry.get("links")
        if not isinstance(links, list):
            raise AmdSmiParseError(f"`{command}`: GPU {entry['gpu']} has no \"links\" list")
        peers: dict[int, PeerLink] = {}
        for link in links:
            if not isinstance(link, Mapping) or not isinstance(link.get("gpu"), int) or isinstance(link.get("gpu"),
                                                                                                  bool):
                raise AmdSmiParseError(f"`{command}`: a link of GPU {entry['gpu']} has no integer \"gpu\": "
                                       f"{_short(link)}")
            kind = str(link.get("link_type", "")).upper()
            if link["gpu"] == entry["gpu"] or kind == "SELF":
                continue
            hops, weight = number_of(link.get("num_hops")), number_of(link.get("weight"))
            peers[link["gpu"]] = PeerLink(kind=_LINK_KINDS.get(kind, "other"),  # type: ignore[arg-type]
                                          hops=int(hops) if hops is not None else None,
                                          weight=int(weight) if weight is not None else None)
        found[entry["gpu"]] = peers
    return found


def parse_version(text: str) -> str | None:
    """The ROCm version from ``amd-smi version --json`` (None when it does not say)."""
    data = parse_json(text, "amd-smi version --json")
    items = data if isinstance(data, list) else [data]
    for item in items:
        if isinstance(item, Mapping) and _text(item.get("rocm_version")):
            return _text(item.get("rocm_version"))
    return None


def _short(value: Any) -> str:
    text = json.dumps(value, default=str)
    return text if len(text) <= 60 else text[:57] + "..."


# Reading the host -----------------------------------------------------------------------------------


def _run(host: Host, args: list[str], required: bool) -> str | None:
    argv = [AMD_SMI, *args, "--json"]
    try:
        result = host.run(argv, timeout=CLI_TIMEOUT)
    except CommandTimeout:
        raise AmdSmiToolError(f"`{shlex.join(argv)}` did not finish within {CLI_TIMEOUT:g}s: amd-smi or the amdgpu "
                              "driver is hung; check `dmesg` for amdgpu errors") from None
    if result.returncode != 0:
        if not required:
            return None
        why = (result.stderr or result.stdout).strip().splitlines()
        raise AmdSmiToolError(f"`{shlex.join(argv)}` exited with status {result.returncode}"
                              + (f": {why[0][:120]}" if why else ""))
    return result.stdout


#: Recorded in GpuRecord.errors when `amd-smi metric` failed: the GPU's health cannot be read.
METRIC_UNAVAILABLE = "AMD_SMI_METRIC_FAILED"

#: What each part of a snapshot costs: one amd-smi run each (plus `list`, always, for the GPU ids).
PARTS = ("static", "metric", "topology", "version")


def read_cli(host: Host, parts: Collection[str] = PARTS) -> Snapshot | None:
    """The GPUs as amd-smi reports them; None when this host has no amd-smi.

    Only the commands for ``parts`` run: amd-smi takes seconds per call on a busy node, and the health
    monitor needs only ``metric``.
    """
    try:
        listing_text = _run(host, ["list"], required=True)
    except CommandNotFound:
        return None
    listing = parse_list(listing_text or "")
    static = parse_static(_run(host, ["static"], required=True) or "") if "static" in parts else {}
    metric_text = _run(host, ["metric"], required=False) if "metric" in parts else None
    metrics = parse_metric(metric_text) if metric_text is not None else {}
    topology_text = _run(host, ["topology"], required=False) if "topology" in parts else None
    topology = parse_topology(topology_text) if topology_text is not None else {}
    version_text = _run(host, ["version"], required=False) if "version" in parts else None
    rocm = parse_version(version_text) if version_text is not None else None
    if static and sorted(static) != sorted(listing):
        raise AmdSmiParseError(f"`amd-smi list --json` lists GPUs {sorted(listing)} but `amd-smi static --json` "
                               f"shows {sorted(static)}")
    gpus = []
    for index in sorted(listing):
        facts = {k: v for k, v in static.get(index, {"market_name": ""}).items() if k != "asic_serial"}
        record = GpuRecord(index=index, uuid=listing[index]["uuid"], rocm_version=rocm, **facts)
        record.bdf = record.bdf or listing[index]["bdf"]
        for key, value in metrics.get(index, {}).items():
            setattr(record, key, value)
        if "metric" in parts and metric_text is None:
            record.errors["metric"] = METRIC_UNAVAILABLE
        record.links = topology.get(index, {})
        gpus.append(record)
    return Snapshot(source="amd-smi", gpus=gpus)
