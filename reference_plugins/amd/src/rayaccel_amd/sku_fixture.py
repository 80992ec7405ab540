"""Rewrite a fixture so its GPUs are of another SKU (``rayaccel sku add`` writes day-zero fixtures with it).

The product name, PCI device id and memory size live in several places of the vendor answers: amdsmi
data (``asic_info.market_name``, ``gpu_id``, ``asic_info.device_id``, ``vram_info.vram_size``,
``memory_total.vram``) or the JSON amd-smi prints (``static``: asic and vram sections; ``metric``:
``mem_usage.total_vram``). Every one is changed, in the host and in each fault's patch.
"""

from __future__ import annotations

import copy
import json
from typing import Any

from rayaccel import SkuRecord

STATIC = "amd-smi static --json"
METRIC = "amd-smi metric --json"


def rewrite_fixture(fixture: dict[str, Any], sku: SkuRecord) -> dict[str, Any]:
    data = copy.deepcopy(fixture)
    _rewrite_state(data.get("host") or {}, sku)
    for fault in data.get("faults") or []:
        _rewrite_state(fault.get("patch") or {}, sku)
    return data


def _product_name(sku: SkuRecord) -> str:
    return sku.match.product_names[0] if sku.match.product_names else sku.marketing_name


def _device_id(sku: SkuRecord) -> int | None:
    return int(sku.match.pci_device_ids[0], 16) if sku.match.pci_device_ids else None


def _rewrite_state(state: dict[str, Any], sku: SkuRecord) -> None:
    gpus = ((state.get("libraries") or {}).get("amdsmi") or {}).get("gpus") or {}
    for gpu in gpus.values():
        if isinstance(gpu, dict):
            _rewrite_library_gpu(gpu, sku)
    commands = state.get("commands") or {}
    for line, rewrite in ((STATIC, _rewrite_static_entry), (METRIC, _rewrite_metric_entry)):
        answer = commands.get(line)
        if isinstance(answer, dict) and isinstance(answer.get("stdout"), str):
            answer["stdout"] = _rewrite_json(answer["stdout"], sku, rewrite)


def _rewrite_library_gpu(gpu: dict[str, Any], sku: SkuRecord) -> None:
    device_id = _device_id(sku)
    if isinstance(gpu.get("asic_info"), dict):
        gpu["asic_info"]["market_name"] = _product_name(sku)
        if device_id is not None:
            gpu["asic_info"]["device_id"] = f"0x{device_id:04x}"
    if device_id is not None and "gpu_id" in gpu:
        gpu["gpu_id"] = device_id
    if sku.memory_mib is not None:
        if isinstance(gpu.get("vram_info"), dict):
            gpu["vram_info"]["vram_size"] = sku.memory_mib
        if isinstance(gpu.get("memory_total"), dict):
            gpu["memory_total"]["vram"] = sku.memory_mib * 2**20


def _rewrite_static_entry(entry: dict[str, Any], sku: SkuRecord) -> None:
    asic = entry.get("asic")
    if isinstance(asic, dict):
        asic["market_name"] = _product_name(sku)
        if _device_id(sku) is not None:
            asic["device_id"] = f"0x{_device_id(sku):04x}"
    vram = entry.get("vram")
    if sku.memory_mib is not None and isinstance(vram, dict):
        vram["size"] = {"value": sku.memory_mib, "unit": "MB"}


def _rewrite_metric_entry(entry: dict[str, Any], sku: SkuRecord) -> None:
    memory = entry.get("mem_usage")
    if sku.memory_mib is not None and isinstance(memory, dict) and "total_vram" in memory:
        memory["total_vram"] = {"value": sku.memory_mib, "unit": "MB"}


def _rewrite_json(text: str, sku: SkuRecord, rewrite: Any) -> str:
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        return text  # a fault's garbage output stays garbage
    entries = data.get("gpu_data") if isinstance(data, dict) else data
    for entry in entries if isinstance(entries, list) else []:
        if isinstance(entry, dict):
            rewrite(entry, sku)
    return json.dumps(data, indent=2) + "\n"
