"""Read the GPUs through the amdsmi Python API (``host.library(AMDSMI)``).

A GPU is reported even when amdsmi gives neither its uuid nor its PCI address (under a fallback id, with a
warning: Ray counts it too); anything else the ASIC or driver does not support
(``AMDSMI_STATUS_NOT_SUPPORTED``) is simply absent from the record. A health query failing with any
other status is recorded, because that is itself a health signal (a GPU that stopped answering).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import Any, TypeVar

from rayaccel import malformed, report_problem, shown
from rayaccel_amd.products import pci_device_id
from rayaccel_amd.readings import EccCounts, GpuRecord, PeerLink, Snapshot, infer_unanswered_products

T = TypeVar("T")

_NOT_SUPPORTED = 2
#: amdsmi_topo_get_link_type's "type", by the name of the library's own enum member. The numbering changed
#: across ROCm releases (AmdSmiIoLinkType UNDEFINED 0/PCIEXPRESS 1/XGMI 2; AmdSmiLinkType INTERNAL 0/PCIE 1/
#: XGMI 2, and a release without INTERNAL: PCIE 0/XGMI 1), so the numbers are read from the binding.
_LINK_KIND_NAMES = {"AMDSMI_LINK_TYPE_PCIE": "pcie", "AMDSMI_LINK_TYPE_XGMI": "xgmi",
                    "PCIEXPRESS": "pcie", "XGMI": "xgmi"}


def link_kinds(lib: Any) -> dict[int, str]:
    """Link type number -> kind, from this amdsmi's AmdSmiLinkType (or the older AmdSmiIoLinkType)."""
    enum = getattr(lib, "AmdSmiLinkType", None) or getattr(lib, "AmdSmiIoLinkType", None)
    if enum is None:
        return {}
    return {int(member): _LINK_KIND_NAMES[member.name] for member in enum if member.name in _LINK_KIND_NAMES}


class AmdSmiQueryError(RuntimeError):
    """A required amdsmi query failed; the message names the query, the GPU and the status."""


def _status(e: Exception) -> tuple[int, str]:
    code = getattr(e, "err_code", None)
    info = getattr(e, "err_info", None) or str(e)
    return (int(code) if isinstance(code, int) else -1), str(info).split(" - ")[0]


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or value is None:
        return None
    try:
        number = float(value) if isinstance(value, int | float) else float(str(value).split()[0])
    except (ValueError, IndexError, OverflowError):
        return None  # "N/A"
    # float() takes "nan", "inf" and "1e309" (inf): text that is no reading, as "N/A" is
    return number if math.isfinite(number) else None


def read_library(lib: Any, links: bool = True) -> Snapshot:
    """Every GPU's records from the amdsmi library; with ``links``, also each GPU's link to every other (a GPU x
    GPU table: 4032 queries on a CPX machine's 64 partitions, read only for the topology hook)."""
    # AmdSmiException is the base of the library's errors (status codes) and its parameter errors.
    errors: tuple[type[BaseException], ...] = (getattr(lib, "AmdSmiException", Exception),
                                               getattr(lib, "AmdSmiLibraryException", Exception))

    def optional(fn: Callable[..., T], *args: Any, into: dict[str, str] | None = None, what: str = "") -> T | None:
        """fn(*args), or None when it fails; failures other than "not supported" are noted in ``into``."""
        try:
            return fn(*args)
        except errors as e:
            code, info = _status(e)  # type: ignore[arg-type]
            if into is not None and code != _NOT_SUPPORTED:
                into[what] = info
            return None
        except Exception as e:  # the binding choked on what the driver answered: unknown, not fatal
            name = getattr(fn, "__name__", "amdsmi call")
            report_problem("amdsmi-malformed-answer", f"{name} failed with {type(e).__name__}: {shown(str(e))}; "
                           "the value is left unknown", fix="update ROCm's amdsmi and the amdgpu driver together")
            return None

    try:
        handles = list(lib.amdsmi_get_processor_handles())
    except errors as e:
        code, info = _status(e)  # type: ignore[arg-type]
        raise AmdSmiQueryError(f"amdsmi_get_processor_handles failed: {info} (status {code})") from None
    ok_version = optional(lib.amdsmi_get_rocm_version)
    rocm = ok_version[1] if ok_version and ok_version[0] else None
    gpus = []
    for index, handle in enumerate(handles):
        failed: dict[str, str] = {}
        asic = optional(lib.amdsmi_get_gpu_asic_info, handle, into=failed, what="asic_info") or {}
        uuid = optional(lib.amdsmi_get_gpu_device_uuid, handle, into=failed, what="uuid")
        bdf = optional(lib.amdsmi_get_gpu_device_bdf, handle)
        device_id = optional(lib.amdsmi_get_gpu_id, handle)
        fallback = None
        if uuid:
            gpu_id = str(uuid)
        elif bdf:
            # A GPU that stopped answering keeps an id (its PCI address) so health can report it.
            gpu_id, fallback = f"pci-{bdf}", f"amdsmi gives GPU {index} no uuid; id from its PCI address {bdf}"
        else:
            # Only the PCI device id (or nothing) answers: Ray still counts the GPU, so it is offered too,
            # under its amdsmi index, with a warning, rather than failing the node's whole discovery.
            why = ", ".join(f"{k}: {v}" for k, v in failed.items()) or "not supported"
            gpu_id = f"amdsmi-gpu-{index}"
            fallback = f"amdsmi gives GPU {index} neither a uuid nor a PCI address ({why}); id {gpu_id}"
        record = GpuRecord(
            index=index, uuid=gpu_id, market_name=str(asic.get("market_name") or "").strip(),
            device_id=int(device_id) if isinstance(device_id, int) else _parse_id(asic.get("device_id")),
            bdf=bdf, rocm_version=rocm, gfx_target=_text(asic.get("target_graphics_version")), errors=failed,
            id_fallback=fallback,
        )
        kfd = optional(getattr(lib, "amdsmi_get_gpu_kfd_info", _absent), handle) or {}
        partition = kfd.get("current_partition_id")
        record.partition_id = partition if isinstance(partition, int) and not isinstance(partition, bool) else None
        if partition is not None and (record.partition_id is None or not 0 <= partition < 64):
            malformed("kfd_info.current_partition_id", partition, "a partition number in [0, 64)", where=f"GPU {index}")
            record.partition_id = None
        enumeration = optional(getattr(lib, "amdsmi_get_gpu_enumeration_info", _absent), handle) or {}
        hip_id = enumeration.get("hip_id")
        record.hip_id = hip_id if isinstance(hip_id, int) and not isinstance(hip_id, bool) and hip_id >= 0 else None
        render = enumeration.get("drm_render")
        record.drm_render = render if isinstance(render, int) and not isinstance(render, bool) and render >= 0 else None
        hip_uuid = enumeration.get("hip_uuid")
        record.hip_uuid = hip_uuid if isinstance(hip_uuid, str) and hip_uuid.startswith("GPU-") else None
        vram = optional(lib.amdsmi_get_gpu_vram_info, handle) or {}
        size = _number(vram.get("vram_size", vram.get("vram_size_mb")))
        record.vram_mib = int(size) if size else None
        total = optional(lib.amdsmi_get_gpu_memory_total, handle, lib.AmdSmiMemoryType.VRAM)
        record.vram_total_bytes = int(total) if total is not None else None
        if record.vram_mib is None and record.vram_total_bytes:
            record.vram_mib = record.vram_total_bytes // 2**20
        numa = optional(lib.amdsmi_topo_get_numa_node_number, handle)
        record.numa_node = int(numa) if isinstance(numa, int) and numa >= 0 else None
        driver = optional(lib.amdsmi_get_gpu_driver_info, handle) or {}
        record.driver_version = _text(driver.get("driver_version"))
        record.compute_partition = _text(optional(lib.amdsmi_get_gpu_compute_partition, handle))
        record.memory_partition = _text(optional(lib.amdsmi_get_gpu_memory_partition, handle))
        xgmi = optional(lib.amdsmi_get_xgmi_info, handle) or {}
        hive = xgmi.get("xgmi_hive_id")
        if hive is not None and (isinstance(hive, bool) or not isinstance(hive, int | str)
                                 or (isinstance(hive, str) and not re.fullmatch(r"(0x)?[0-9a-fA-F]{1,16}", hive))):
            malformed("xgmi_info.xgmi_hive_id", hive, "an integer", where=f"GPU {index}")
            hive = None
        record.xgmi_hive_id = f"0x{hive:x}" if isinstance(hive, int) and hive else _text(hive)
        _read_health(lib, handle, record, optional)
        _read_metrics(lib, handle, record, optional)
        gpus.append(record)
    infer_unanswered_products(gpus)
    if links:
        _read_links(lib, handles, gpus, optional)
    return Snapshot(source="amdsmi", gpus=gpus)


def _read_links(lib: Any, handles: list[Any], gpus: list[GpuRecord], optional: Callable[..., Any]) -> None:
    kinds = link_kinds(lib)
    for index, handle in enumerate(handles):
        for peer, other in enumerate(handles):
            if peer == index:
                continue
            link = optional(lib.amdsmi_topo_get_link_type, handle, other)
            if not link:
                continue
            weight = optional(lib.amdsmi_topo_get_link_weight, handle, other)
            kind = kinds.get(int(link.get("type", -1)), "other")
            gpus[index].links[peer] = PeerLink(kind=kind, hops=_int(link.get("hops")),  # type: ignore[arg-type]
                                               weight=_int(weight))


def _read_health(lib: Any, handle: Any, record: GpuRecord, optional: Callable[..., Any]) -> None:
    ecc = optional(lib.amdsmi_get_gpu_total_ecc_count, handle, into=record.errors, what="ecc")
    if ecc:
        record.ecc = EccCounts(correctable=_count(ecc.get("correctable_count"), "ecc.correctable_count", record.index),
                               uncorrectable=_count(ecc.get("uncorrectable_count"), "ecc.uncorrectable_count",
                                                    record.index),
                               deferred=_count(ecc.get("deferred_count"), "ecc.deferred_count", record.index))
    blocks = optional(lib.amdsmi_get_gpu_ras_block_features_enabled, handle) or []
    record.ras_blocks = {str(b.get("block")): str(b.get("status")) for b in blocks if isinstance(b, dict)}


def _read_metrics(lib: Any, handle: Any, record: GpuRecord, optional: Callable[..., Any]) -> None:
    activity = optional(lib.amdsmi_get_gpu_activity, handle, into=record.errors, what="activity") or {}
    record.gfx_activity = _percent(activity.get("gfx_activity"), "activity.gfx_activity", record.index)
    record.umc_activity = _percent(activity.get("umc_activity"), "activity.umc_activity", record.index)
    power = optional(lib.amdsmi_get_power_info, handle, into=record.errors, what="power") or {}
    # ROCm 7 reports "socket_power"; MI300-era libraries "current_socket_power" ("average_socket_power" is N/A there).
    for key in ("socket_power", "current_socket_power", "average_socket_power"):
        value = _number(power.get(key))
        if value is not None:
            record.power_w = value
            break
    temp = optional(lib.amdsmi_get_temp_metric, handle, lib.AmdSmiTemperatureType.HOTSPOT,
                    lib.AmdSmiTemperatureMetric.CURRENT)
    record.temperature_c = _number(temp)
    used = optional(lib.amdsmi_get_gpu_memory_usage, handle, lib.AmdSmiMemoryType.VRAM)
    record.vram_used_bytes = int(used) if isinstance(used, int) else None


def _reading(value: Any, name: str, index: int) -> float | None:
    """A reading; N/A is "not answered", anything else that is not a number is reported."""
    number = _number(value)
    if number is None and value is not None and str(value).strip().upper() != "N/A":
        malformed(name, value, "a number", where=f"GPU {index}")
    return number


def _percent(value: Any, name: str, index: int) -> float | None:
    """An activity in percent; one outside [0, 100] (a u16 the binding did not turn into N/A) is reported."""
    number = _reading(value, name, index)
    if number is not None and not 0 <= number <= 100:
        malformed(name, value, "a percentage in [0, 100]", where=f"GPU {index}")
        return None
    return number


def _count(value: Any, name: str, index: int) -> int | None:
    """An error count; N/A or left out is unknown, anything else that is no count >= 0 is reported."""
    number = _reading(value, name, index)
    if number is not None and not (0 <= number < 2**53 and number == int(number)):
        malformed(name, value, "a count >= 0", where=f"GPU {index}")
        return None
    return None if number is None else int(number)


def _absent(*args: Any) -> None:
    """Stands in for a query older amdsmi releases do not have (amdsmi_get_gpu_enumeration_info: ROCm 6.4+)."""
    return None


def _text(value: Any) -> str | None:
    text = str(value).strip() if value is not None else ""
    return text if text and text != "N/A" else None


def _int(value: Any) -> int | None:
    number = _number(value)
    return int(number) if number is not None else None


def _parse_id(value: Any) -> int | None:
    key = pci_device_id(value)
    return int(key, 16) if key else None
