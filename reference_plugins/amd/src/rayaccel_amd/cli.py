"""Read the GPUs through the ``amd-smi`` command line (its ``--json`` output), when amdsmi is not importable.

The parsers are pure functions of the text the tool printed. They accept both JSON layouts amd-smi has
shipped: a bare list of per-GPU objects (ROCm 6.0-6.2) and ``{"gpu_data": [...]}`` (ROCm 6.3+), and both
value styles: ``{"value": 196592, "unit": "MB"}`` and ``"196592 MB"``. Anything else raises
:class:`AmdSmiParseError` naming the command and what was wrong.

Partitions: up to amd-smi 25 (ROCm 6.4) ``static`` prints a ``partition`` section; amd-smi 26 (ROCm 7.0)
moved it to its own command, ``amd-smi partition`` (ROCm/rocm-systems#223). When ``static`` shows no
partition section, ``amd-smi partition --current --json`` is read instead (what the output shows decides,
not the version).
"""

from __future__ import annotations

import json
import math
import re
import shlex
from collections.abc import Callable, Collection, Mapping
from typing import Any, TypeVar

from rayaccel import CommandNotFound, CommandTimeout, Host, OutputTooLarge, malformed, report_problem
from rayaccel_amd.products import pci_device_id
from rayaccel_amd.readings import EccCounts, GpuRecord, PeerLink, Snapshot, infer_unanswered_products

AMD_SMI = "amd-smi"
#: amd-smi starts a Python interpreter and initialises every GPU: a few seconds on a busy 8-GPU node.
CLI_TIMEOUT = 6.0

#: More GPUs than any node has (8 MI300X in CPX mode are 64 logical GPUs): a "gpu" index at or above it is garbage.
MAX_GPUS = 256

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
    entries: dict[int, dict[str, Any]] = {}
    for position, item in enumerate(data):
        gpu = item.get("gpu") if isinstance(item, Mapping) else None
        if isinstance(gpu, bool) or not isinstance(gpu, int) or not 0 <= gpu < MAX_GPUS:
            # One broken entry must not cost the other GPUs: report it and read the rest.
            malformed("gpu", gpu if isinstance(item, Mapping) else item, f"a GPU index in [0, {MAX_GPUS})",
                      where=f"`{command}` entry {position}", fix="check `amd-smi list` by hand; update amd-smi")
            continue
        if gpu in entries:
            report_problem("duplicate-gpu", f"`{command}` lists GPU {gpu} twice; the second entry is ignored")
            continue
        entries[gpu] = dict(item)
    return list(entries.values())


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


def number_of(field: Any, name: str = "", gpu: Any = None) -> float | None:
    """A number; with ``name``, anything else but N/A is reported as a malformed value."""
    value = value_of(field)
    # amd-smi prints what the library's u64 fields hold: a number past 2**64 is text no field gave
    if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value) and abs(value) < 2**64:
        return float(value)
    if name and (value is not None or not _absent_value(field)):
        malformed(name, field, "a number", where=f"GPU {gpu}")
    return None


def _watts(power: Mapping[str, Any], key: str, gpu: Any) -> float | None:
    """A socket power reading; anything but a number >= 0 (or N/A) is reported and ignored."""
    watts = number_of(power.get(key), f"power.{key}", gpu)
    if watts is not None and watts < 0:
        malformed(f"power.{key}", power.get(key), "watts >= 0", where=f"GPU {gpu}")
        return None
    return watts


def _percent(usage: Mapping[str, Any], key: str, gpu: Any) -> float | None:
    """An activity in percent; anything but a number in [0, 100] (or N/A) is reported and ignored."""
    percent = number_of(usage.get(key), f"usage.{key}", gpu)
    if percent is not None and not 0 <= percent <= 100:
        malformed(f"usage.{key}", usage.get(key), "a percentage in [0, 100]", where=f"GPU {gpu}")
        return None
    return percent


def _absent_value(field: Any) -> bool:
    """True for what amd-smi prints for "not answered": nothing, N/A, or {"value": "N/A"}."""
    if field is None:
        return True
    if isinstance(field, Mapping):
        return "value" in field and value_of(field) is None
    return isinstance(field, str) and value_of(field) is None


def mib_of(field: Any, name: str = "", gpu: Any = None) -> int | None:
    """Memory sizes in MiB; amd-smi's "MB" is MiB (it divides bytes by 1024*1024)."""
    unit = "MB"
    if isinstance(field, Mapping):
        unit = str(field.get("unit") or "MB")
    elif isinstance(field, str) and re.fullmatch(r"\s*\d+(\.\d+)?\s*[A-Za-z]+\s*", field):
        unit = re.sub(r"[\d.\s]", "", field)
    number = number_of(field, name, gpu)
    factor = _MIB_PER_UNIT.get(unit.upper())
    if number is None:
        return None
    if factor is None or not 0 <= number * (factor or 0) < 2**40:
        if name:
            malformed(name, field, "a memory size in B, KB, MB or GB", where=f"GPU {gpu}")
        return None
    return int(number * factor)


def _text(field: Any, name: str = "", gpu: Any = None) -> str | None:
    """Text; with ``name``, a value of the wrong type or with undecodable bytes is reported and ignored."""
    value = value_of(field)
    wrong_shape = isinstance(field, list) or (isinstance(field, Mapping) and "value" not in field)
    if wrong_shape or isinstance(value, Mapping | list) or (isinstance(value, str) and ("\ufffd" in value
                                                                          or not value.isprintable())):
        if name:
            malformed(name, field, "text", where=f"GPU {gpu}")
        return None
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
        gpu = entry["gpu"]
        name = _text(asic.get("market_name"), "asic.market_name", gpu)
        if name is None:
            # Taken from the node's other GPUs (see read_cli), so one unreadable entry keeps the SKU known.
            report_problem("missing-value", f"`{command}`: GPU {gpu} has no asic.market_name; its model is taken "
                           "from the other GPUs", fix="run amd-smi static with no section flags so the asic "
                           "section is printed")
        numa_node = number_of(numa.get("node"), "numa.node", gpu)
        partition_id = number_of(partition.get("partition_id"), "partition.partition_id", gpu)
        raw_id = _text(asic.get("device_id"), "asic.device_id", gpu)
        device_id = pci_device_id(raw_id)
        if raw_id and not device_id:
            malformed("asic.device_id", raw_id, "a PCI device id like 0x74a1", where=f"GPU {gpu}")
        found[gpu] = {
            # amd-smi 26+ prints no partition section here (see the module docstring).
            "partition_reported": "partition" in entry,
            "market_name": name or "",
            "device_id": int(device_id, 16) if device_id else None,
            "bdf": _text(bus.get("bdf"), "bus.bdf", gpu),
            "vram_mib": mib_of(vram.get("size"), "vram.size", gpu),
            "driver_version": _text(driver.get("version", driver.get("driver_version")), "driver.version", gpu),
            "numa_node": int(numa_node) if numa_node is not None and numa_node >= 0 else None,
            # ROCm 6.4 renamed compute_partition to accelerator_partition.
            "compute_partition": _text(partition.get("compute_partition", partition.get("accelerator_partition")),
                                       "partition.compute_partition", gpu),
            "memory_partition": _text(partition.get("memory_partition"), "partition.memory_partition", gpu),
            "partition_id": int(partition_id) if partition_id is not None and partition_id >= 0 else None,
            "gfx_target": _text(asic.get("target_graphics_version"), "asic.target_graphics_version", gpu),
            "asic_serial": _text(asic.get("asic_serial"), "asic.asic_serial", gpu),
        }
    return found


def parse_list(text: str) -> dict[int, dict[str, Any]]:
    """``amd-smi list --json`` -> GPU index -> uuid and bdf."""
    command = "amd-smi list --json"
    found = {}
    for entry in gpu_entries(parse_json(text, command), command):
        uuid = _text(entry.get("uuid"), "uuid", entry["gpu"])
        bdf = _text(entry.get("bdf"), "bdf", entry["gpu"])
        if uuid is None and bdf is None:
            report_problem("unidentified-gpu", f"`{command}`: GPU {entry['gpu']} has neither a uuid nor a PCI "
                           "address; it is not reported", severity="error",
                           fix="check `amd-smi list` by hand; the GPU may need a reset")
            continue
        partition_id = number_of(entry.get("partition_id"), "partition_id", entry["gpu"])
        # amdsmi_get_gpu_kfd_info's partition id of this logical GPU (amd-smi 24.7+); N/A where there is none.
        found[entry["gpu"]] = {"uuid": uuid or f"pci-{bdf}", "bdf": bdf,
                               "partition_id": int(partition_id) if partition_id is not None and 0 <= partition_id < 64
                               else None}
    return found


def parse_partition(text: str) -> dict[int, dict[str, Any]]:
    """``amd-smi partition --current --json`` (amd-smi 26+) -> GPU index -> compute/memory partition, partition id.

    It prints ``{"current_partition": [{"gpu_id", "memory", "accelerator_type", "accelerator_profile_index",
    "partition_id"}, ...]}``. Only a GPU's primary partition answers the profile query: on the others amd-smi
    prints N/A and, in ``partition_id``, the previous row's value, so the id is read only next to a known mode.
    """
    command = "amd-smi partition --current --json"
    data = parse_json(text, command)
    rows = data.get("current_partition") if isinstance(data, Mapping) else data
    if not isinstance(rows, list):
        raise AmdSmiParseError(f"`{command}`: expected {{\"current_partition\": [...]}}, got {type(data).__name__}")
    found: dict[int, dict[str, Any]] = {}
    for position, row in enumerate(rows):
        gpu = row.get("gpu_id") if isinstance(row, Mapping) else None
        if isinstance(gpu, bool) or not isinstance(gpu, int) or not 0 <= gpu < MAX_GPUS or gpu in found:
            malformed("gpu_id", gpu if isinstance(row, Mapping) else row, f"a GPU index in [0, {MAX_GPUS}) listed once",
                      where=f"`{command}` row {position}", fix="check `amd-smi partition --current` by hand")
            continue
        mode = _text(row.get("accelerator_type"), "accelerator_type", gpu)
        mode = mode.rstrip("*") if mode else None  # the profiles table marks the current mode with "*"
        partition_id = number_of(row.get("partition_id"), "", gpu) if mode else None
        found[gpu] = {
            "compute_partition": mode,
            "memory_partition": _text(row.get("memory"), "memory", gpu),
            "partition_id": int(partition_id) if partition_id is not None and 0 <= partition_id < 64 else None,
        }
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
        gpu = entry["gpu"]
        if ecc:
            def count(*keys: str, ecc: Mapping[str, Any] = ecc, gpu: int = gpu) -> int | None:
                key = next((k for k in keys if k in ecc), keys[0])
                value = number_of(ecc.get(key), f"ecc.{key}", gpu)
                if value is not None and not 0 <= value < 2**53:
                    malformed(f"ecc.{key}", ecc.get(key), "a count >= 0", where=f"GPU {gpu}")
                    value = None
                return None if value is None else int(value)

            counts = EccCounts(correctable=count("total_correctable_count", "correctable_count"),
                               uncorrectable=count("total_uncorrectable_count", "uncorrectable_count"),
                               deferred=count("total_deferred_count", "deferred_count"))
        power_w = next((p for p in (_watts(power, k, gpu) for k in
                                    ("socket_power", "current_socket_power", "average_socket_power"))
                        if p is not None), None)
        used = mib_of(memory.get("used_vram"))
        total = mib_of(memory.get("total_vram"))
        found[entry["gpu"]] = {
            "ecc": counts,
            "gfx_activity": _percent(usage, "gfx_activity", gpu),
            "umc_activity": _percent(usage, "umc_activity", gpu),
            "power_w": power_w,
            "temperature_c": number_of(temperature.get("hotspot", temperature.get("junction")), "temperature.hotspot",
                                       gpu),
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
            malformed("links", links, "a list of links", where=f"`{command}` GPU {entry['gpu']}")
            continue
        peers: dict[int, PeerLink] = {}
        for link in links:
            if not isinstance(link, Mapping) or not isinstance(link.get("gpu"), int) or isinstance(link.get("gpu"),
                                                                                                  bool):
                malformed("links[].gpu", link, "a link with an integer \"gpu\"",
                          where=f"`{command}` GPU {entry['gpu']}")
                continue
            kind = str(link.get("link_type", "")).upper()
            if link["gpu"] == entry["gpu"] or kind == "SELF":
                continue
            hops = number_of(link.get("num_hops"), "links[].num_hops", entry["gpu"])
            weight = number_of(link.get("weight"), "links[].weight", entry["gpu"])
            hops = hops if hops is None or 0 <= hops < 2**31 else None
            weight = weight if weight is None or 0 <= weight < 2**31 else None
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
        if isinstance(item, Mapping) and _text(item.get("rocm_version"), "rocm_version", "-"):
            return _text(item.get("rocm_version"))
    return None


# Reading the host -----------------------------------------------------------------------------------


def _run(host: Host, args: list[str], required: bool) -> str | None:
    argv = [AMD_SMI, *args, "--json"]
    try:
        result = host.run(argv, timeout=CLI_TIMEOUT)
    except CommandTimeout:
        raise AmdSmiToolError(f"`{shlex.join(argv)}` did not finish within {CLI_TIMEOUT:g}s: amd-smi or the amdgpu "
                              "driver is hung; check `dmesg` for amdgpu errors") from None
    except OutputTooLarge as e:
        if required:
            raise AmdSmiToolError(str(e)) from None
        report_problem("amd-smi-failed", f"{e}; what it reports is left unknown")
        return None
    if result.returncode != 0:
        why = (result.stderr or result.stdout).strip().splitlines()
        message = f"`{shlex.join(argv)}` exited with status {result.returncode}" + (f": {why[0][:120]}" if why else "")
        if not required:
            report_problem("amd-smi-failed", f"{message}; what it reports is left unknown",
                           fix="run the command by hand; check `dmesg` for amdgpu errors")
            return None
        raise AmdSmiToolError(message)
    if "\ufffd" in result.stdout:
        report_problem("non-utf-8-output", f"`{shlex.join(argv)}` printed bytes that are not UTF-8; values "
                       "containing them are ignored", fix="run the command by hand; update amd-smi")
    return result.stdout


#: Recorded in GpuRecord.errors when `amd-smi metric` failed: the GPU's health cannot be read.
METRIC_UNAVAILABLE = "AMD_SMI_METRIC_FAILED"

#: What each part of a snapshot costs: one amd-smi run each (plus `list`, always, for the GPU ids).
PARTS = ("static", "metric", "topology", "version")


T = TypeVar("T")


def _optional(parse: Callable[[str], T], text: str | None) -> T | None:
    """An optional command's parsed output; unreadable output is reported and treated as absent."""
    if text is None:
        return None
    try:
        return parse(text)
    except AmdSmiParseError as e:
        report_problem("amd-smi-unreadable", f"{e}; what it reports is left unknown")
        return None


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
    partitions: dict[int, dict[str, Any]] = {}
    if static and not any(facts["partition_reported"] for facts in static.values()):
        # amd-smi 26+: the partition mode and id are no longer in `static`.
        partitions = _optional(parse_partition, _run(host, ["partition", "--current"], required=False)) or {}
    metric_text = _run(host, ["metric"], required=False) if "metric" in parts else None
    metrics = _optional(parse_metric, metric_text) or {}
    if metric_text is not None and not metrics:
        metric_text = None  # unreadable: health is unknown, as when the command fails
    topology_text = _run(host, ["topology"], required=False) if "topology" in parts else None
    topology = _optional(parse_topology, topology_text) or {}
    version_text = _run(host, ["version"], required=False) if "version" in parts else None
    rocm = _optional(parse_version, version_text)
    if "static" in parts and sorted(static) != sorted(listing):
        # `list` names the GPUs; one missing from `static` is still offered (model taken from the others).
        report_problem("inconsistent-output", f"`amd-smi list --json` lists GPUs {sorted(listing)} but `amd-smi "
                       f"static --json` shows {sorted(static)}; the GPUs of `list` are reported",
                       fix="run both commands by hand; update amd-smi")
    gpus = []
    for index in sorted(listing):
        facts = {k: v for k, v in static.get(index, {"market_name": ""}).items()
                 if k not in ("asic_serial", "partition_reported")}
        record = GpuRecord(index=index, uuid=listing[index]["uuid"], rocm_version=rocm, **facts)
        record.bdf = record.bdf or listing[index]["bdf"]
        partition = partitions.get(index, {})
        record.compute_partition = record.compute_partition or partition.get("compute_partition")
        record.memory_partition = record.memory_partition or partition.get("memory_partition")
        # `list` prints each logical GPU's own partition id (kfd_info); the other commands only the primary's.
        for known in (listing[index]["partition_id"], record.partition_id, partition.get("partition_id")):
            if known is not None:
                record.partition_id = known
                break
        for key, value in metrics.get(index, {}).items():
            setattr(record, key, value)
        if "metric" in parts and metric_text is None:
            record.errors["metric"] = METRIC_UNAVAILABLE
        record.links = topology.get(index, {})
        gpus.append(record)
    infer_unanswered_products(gpus)
    return Snapshot(source="amd-smi", gpus=gpus)
