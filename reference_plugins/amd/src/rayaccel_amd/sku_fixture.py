"""Rewrite a fixture so its GPUs are of another SKU (``rayaccel sku add`` writes day-zero fixtures with it).

The product name, PCI device id and memory size live in several places of the vendor answers: amdsmi
data (``asic_info.market_name``, ``gpu_id``, ``asic_info.device_id``, ``vram_info.vram_size``,
``memory_total.vram``) or the JSON amd-smi prints (``static``: asic and vram sections; ``metric``:
``mem_usage.total_vram``). Every one is changed, in the host and in each fault's patch (a fault that
replaces the device list restates it in full, so its devices become the SKU's too).

Identity is rewritten as a whole, so no field of the base SKU is left to win SKU resolution:

- PCI device id: the SKU's first; when it has none, ``0xffff`` (what PCI reads for "no device": never a
  catalogued id), so the device resolves by its product name.
- Memory: the SKU's, shared evenly among the compute partitions of one GPU (its logical GPUs on one PCI
  device each report their share), so a partitioned GPU still adds up to the SKU's memory; on a release whose
  partitions print their whole GPU's memory (ROCm up to 6.4.0, :mod:`rayaccel_amd.mirrored_partitions`), the
  SKU's whole memory on each; a primary partition that states twice the others of its GPU or more states the
  whole GPU (ROCm 6.4.1+, :mod:`rayaccel_amd.primary_partition`) and keeps stating it, the SKU's whole memory.
- Architecture: when the SKU names one, the gfx target (``target_graphics_version``) becomes one of that
  architecture's; for an architecture the plugin has no gfx target for yet, the gfx target is left out,
  so the device reports none and the catalog's architecture holds.
"""

from __future__ import annotations

import copy
import json
from typing import Any

from rayaccel import SkuRecord
from rayaccel_amd.discovery import ARCHITECTURES
from rayaccel_amd.mirrored_partitions import mirrors_primary

STATIC = "amd-smi static --json"
METRIC = "amd-smi metric --json"


def rewrite_fixture(fixture: dict[str, Any], sku: SkuRecord) -> dict[str, Any]:
    data = copy.deepcopy(fixture)
    # The host's release says whether its partitions state their share or the whole GPU; a patch keeps it.
    mirrored = mirrors_primary(_rocm_version(data.get("host") or {}))
    _rewrite_state(data.get("host") or {}, sku, mirrored)
    for fault in data.get("faults") or []:
        _rewrite_state(fault.get("patch") or {}, sku, mirrored)
    return data


def _rocm_version(state: dict[str, Any]) -> str | None:
    """The ROCm release the host states: amdsmi's ``rocm_version``, else ``amd-smi version --json``'s."""
    library = (state.get("libraries") or {}).get("amdsmi") or {}
    if isinstance(library, dict) and isinstance(library.get("rocm_version"), str):
        return str(library["rocm_version"])
    answer = (state.get("commands") or {}).get("amd-smi version --json")
    try:
        versions = json.loads(answer["stdout"]) if isinstance(answer, dict) else None
    except (json.JSONDecodeError, TypeError):
        return None
    first = versions[0] if isinstance(versions, list) and versions else None
    version = first.get("rocm_version") if isinstance(first, dict) else None
    return version if isinstance(version, str) else None


def _product_name(sku: SkuRecord) -> str:
    return sku.match.product_names[0] if sku.match.product_names else sku.marketing_name


#: A PCI device id no SKU is catalogued under: PCI config space reads all ones where there is no device.
NO_DEVICE_ID = 0xFFFF


def _device_id(sku: SkuRecord) -> int:
    return int(sku.match.pci_device_ids[0], 16) if sku.match.pci_device_ids else NO_DEVICE_ID


def _rewrite_gfx_target(asic: dict[str, Any], sku: SkuRecord) -> None:
    """The gfx target that makes the device report the SKU's architecture (see the module docstring)."""
    if sku.architecture is None or ARCHITECTURES.get(str(asic.get("target_graphics_version"))) == sku.architecture:
        return
    targets = [gfx for gfx, arch in ARCHITECTURES.items() if arch == sku.architecture]
    if targets:
        asic["target_graphics_version"] = targets[-1]
    else:
        asic.pop("target_graphics_version", None)


def _device_of(bdf: Any) -> str | None:
    """The PCI device a logical GPU is a function of (``0000:05:00`` of ``0000:05:00.3``)."""
    return bdf.rsplit(".", 1)[0].lower() if isinstance(bdf, str) and "." in bdf else None


def _shares(bdfs: list[Any], sizes: list[Any], mirrored: bool) -> list[int]:
    """How many logical GPUs share each one's PCI device (1 for one whose address is unknown, for every one where
    partitions print the whole GPU's memory, and for a primary partition stating twice the others of its GPU or
    more, ``sizes`` being the VRAM each states)."""
    devices = [_device_of(b) for b in bdfs]
    shares = []
    for device, size in zip(devices, sizes, strict=True):
        mine = _size(size)
        stated = [v for d, s in zip(devices, sizes, strict=True) if d == device and (v := _size(s)) is not None]
        whole = mine is not None and len(stated) > 1 and mine >= 2 * min(stated) > 0
        shares.append(1 if device is None or mirrored or whole else devices.count(device))
    return shares


def _size(value: Any) -> float | None:
    """A VRAM size as the fixture states it (a number, or amd-smi's ``{"value", "unit"}``); None otherwise."""
    number = value.get("value") if isinstance(value, dict) else value
    return float(number) if isinstance(number, int | float) and not isinstance(number, bool) else None


def _rewrite_state(state: dict[str, Any], sku: SkuRecord, mirrored: bool) -> None:
    gpus = [g for g in (((state.get("libraries") or {}).get("amdsmi") or {}).get("gpus") or {}).values()
            if isinstance(g, dict)]
    sizes = [(g.get("vram_info") or {}).get("vram_size") if isinstance(g.get("vram_info"), dict) else None
             for g in gpus]
    for gpu, share in zip(gpus, _shares([g.get("bdf") for g in gpus], sizes, mirrored), strict=True):
        _rewrite_library_gpu(gpu, sku, share)
    commands = state.get("commands") or {}
    static = commands.get(STATIC)
    by_index: dict[Any, int] = {}
    if isinstance(static, dict) and isinstance(static.get("stdout"), str):
        entries = _entries(static["stdout"])
        shares = _shares([(e.get("bus") or {}).get("bdf") if isinstance(e.get("bus"), dict) else None
                          for e in entries],
                         [(e.get("vram") or {}).get("size") if isinstance(e.get("vram"), dict) else None
                          for e in entries], mirrored)
        by_index = {e.get("gpu"): share for e, share in zip(entries, shares, strict=True)}
    for line, rewrite in ((STATIC, _rewrite_static_entry), (METRIC, _rewrite_metric_entry)):
        answer = commands.get(line)
        if isinstance(answer, dict) and isinstance(answer.get("stdout"), str):
            answer["stdout"] = _rewrite_json(answer["stdout"], sku, rewrite, by_index)


def _answered(value: Any) -> bool:
    """Whether the vendor answered a field (N/A, what amd-smi prints for one amdsmi cannot read, stays N/A on any
    SKU: the rewrite changes the card, not what the machine fails to say)."""
    return not (isinstance(value, str) and value.strip().upper().startswith("N/A"))


def _rewrite_asic(asic: dict[str, Any], sku: SkuRecord) -> None:
    if _answered(asic.get("market_name")):
        asic["market_name"] = _product_name(sku)
    if _answered(asic.get("device_id")):
        asic["device_id"] = f"0x{_device_id(sku):04x}"
    _rewrite_gfx_target(asic, sku)


def _rewrite_library_gpu(gpu: dict[str, Any], sku: SkuRecord, share: int) -> None:
    device_id = _device_id(sku)
    if isinstance(gpu.get("asic_info"), dict):
        _rewrite_asic(gpu["asic_info"], sku)
    if "gpu_id" in gpu:
        gpu["gpu_id"] = device_id
    if sku.memory_mib is not None:
        if isinstance(gpu.get("vram_info"), dict):
            gpu["vram_info"]["vram_size"] = sku.memory_mib // share
        if isinstance(gpu.get("memory_total"), dict):
            gpu["memory_total"]["vram"] = sku.memory_mib // share * 2**20


def _rewrite_static_entry(entry: dict[str, Any], sku: SkuRecord, share: int) -> None:
    asic = entry.get("asic")
    if isinstance(asic, dict):
        _rewrite_asic(asic, sku)
    vram = entry.get("vram")
    if sku.memory_mib is not None and isinstance(vram, dict):
        vram["size"] = {"value": sku.memory_mib // share, "unit": "MB"}


def _rewrite_metric_entry(entry: dict[str, Any], sku: SkuRecord, share: int) -> None:
    memory = entry.get("mem_usage")
    if sku.memory_mib is not None and isinstance(memory, dict) and "total_vram" in memory:
        memory["total_vram"] = {"value": sku.memory_mib // share, "unit": "MB"}


def _entries(text: str) -> list[dict[str, Any]]:
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        return []
    entries = data.get("gpu_data") if isinstance(data, dict) else data
    return [e for e in entries if isinstance(e, dict)] if isinstance(entries, list) else []


def _rewrite_json(text: str, sku: SkuRecord, rewrite: Any, shares: dict[Any, int]) -> str:
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        return text  # a fault's garbage output stays garbage
    entries = data.get("gpu_data") if isinstance(data, dict) else data
    for entry in entries if isinstance(entries, list) else []:
        if isinstance(entry, dict):
            rewrite(entry, sku, shares.get(entry.get("gpu"), 1))
    return json.dumps(data, indent=2) + "\n"
