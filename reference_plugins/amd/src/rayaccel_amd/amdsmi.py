"""The ``amdsmi`` adapter behind ``host.library(AMDSMI)``.

``open_real()`` imports AMD's ``amdsmi`` Python package, initialises it for GPUs and returns the module
itself, so a plugin calls the real API (``amdsmi_get_processor_handles``, ``amdsmi_get_gpu_asic_info``,
...). ``open_simulated(data)`` returns an object with the same function names, enums, return shapes and
errors (:class:`AmdSmiLibraryException` carrying a real ``AMDSMI_STATUS_*`` code), answering from a
fixture's ``host.libraries.amdsmi`` data::

    rocm_version: "6.4.1"            # amdsmi_get_rocm_version() -> (True, "6.4.1")
    init_error: 18                   # optional: amdsmi_init raises AMDSMI_STATUS_INIT_ERROR
    gpus:                            # keyed by index so a merge-patch fault can change one GPU
      "0":
        gpu_id: 0x74a1               # amdsmi_get_gpu_id (PCI device id, an int)
        asic_info: {market_name: AMD Instinct MI300X, device_id: "0x74a1", ...}
        uuid: ...                    # amdsmi_get_gpu_device_uuid
        bdf: "0000:05:00.0"          # amdsmi_get_gpu_device_bdf
        enumeration_info: {drm_card: 1, drm_render: 128, hsa_id: 2, hip_id: 0, hip_uuid: GPU-...}   # ROCm 7
        vram_info: {vram_size: 196592, ...}        # MB, as amdsmi reports it
        memory_total: {vram: <bytes>}  memory_usage: {vram: <bytes>}
        numa_node: 0
        driver_info: {driver_name: amdgpu, driver_version: 6.10.5}
        compute_partition: SPX       memory_partition: NPS1
        xgmi_info: {xgmi_lanes: 8, xgmi_hive_id: ..., xgmi_node_id: ..., index: 0}
        links: {"1": {type: AMDSMI_LINK_TYPE_XGMI, hops: 1, weight: 15}}   # peer index -> topo link type
                                     # (a name, or the number in this library's enum) / hops / weight
        kfd_info: {kfd_id: 1234, node_id: 2, current_partition_id: 0}   # amdsmi_get_gpu_kfd_info
        ras_block_features: [{block: UMC, status: ENABLED}]
        total_ecc_count: {correctable_count: 0, uncorrectable_count: 0, deferred_count: 0}
        activity: {gfx_activity: 0, umc_activity: 0, mm_activity: N/A}
        power_info: {socket_power: 134, ...}
        temperature: {hotspot: 41, edge: 35, vram: 33}
        errors: {amdsmi_get_gpu_total_ecc_count: 12}   # function -> status code; "*" = every call
    link_type_enum: {AMDSMI_LINK_TYPE_PCIE: 0, AMDSMI_LINK_TYPE_XGMI: 1, ...}
                                     # optional: this release's AmdSmiLinkType numbering (it changed across
                                     # ROCm releases; default: amdsmi.h's INTERNAL 0, PCIE 1, XGMI 2, ...)

A value missing from the data answers ``AMDSMI_STATUS_NOT_SUPPORTED``, as the library does for a query
the ASIC or driver does not support.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import IntEnum
from typing import Any

from rayaccel import LibraryAdapter, LibraryUnavailable

# Status codes, as amdsmi.h / amdsmi_wrapper.py number them.
AMDSMI_STATUS: dict[int, str] = {
    0: "AMDSMI_STATUS_SUCCESS",
    1: "AMDSMI_STATUS_INVAL",
    2: "AMDSMI_STATUS_NOT_SUPPORTED",
    3: "AMDSMI_STATUS_NOT_YET_IMPLEMENTED",
    4: "AMDSMI_STATUS_FAIL_LOAD_MODULE",
    5: "AMDSMI_STATUS_FAIL_LOAD_SYMBOL",
    6: "AMDSMI_STATUS_DRM_ERROR",
    7: "AMDSMI_STATUS_API_FAILED",
    8: "AMDSMI_STATUS_TIMEOUT",
    9: "AMDSMI_STATUS_RETRY",
    10: "AMDSMI_STATUS_NO_PERM",
    11: "AMDSMI_STATUS_INTERRUPT",
    12: "AMDSMI_STATUS_IO",
    13: "AMDSMI_STATUS_ADDRESS_FAULT",
    14: "AMDSMI_STATUS_FILE_ERROR",
    15: "AMDSMI_STATUS_OUT_OF_RESOURCES",
    16: "AMDSMI_STATUS_INTERNAL_EXCEPTION",
    17: "AMDSMI_STATUS_INPUT_OUT_OF_BOUNDS",
    18: "AMDSMI_STATUS_INIT_ERROR",
    19: "AMDSMI_STATUS_REFCOUNT_OVERFLOW",
    30: "AMDSMI_STATUS_BUSY",
    31: "AMDSMI_STATUS_NOT_FOUND",
    32: "AMDSMI_STATUS_NOT_INIT",
    33: "AMDSMI_STATUS_NO_SLOT",
    40: "AMDSMI_STATUS_NO_DATA",
    41: "AMDSMI_STATUS_INSUFFICIENT_SIZE",
    42: "AMDSMI_STATUS_UNEXPECTED_SIZE",
    43: "AMDSMI_STATUS_UNEXPECTED_DATA",
    0xFFFFFFFF: "AMDSMI_STATUS_UNKNOWN_ERROR",
}
#: What the real binding's ``AmdSmiLibraryException.err_info`` says beside a status's name (amdsmi_exception.py:
#: ``"AMDSMI_STATUS_IO - I/O Error"``): callers that want the name must take it from the front.
STATUS_TEXT: dict[str, str] = {
    "AMDSMI_STATUS_INVAL": "Invalid parameters",
    "AMDSMI_STATUS_NOT_SUPPORTED": "Feature not supported",
    "AMDSMI_STATUS_NOT_YET_IMPLEMENTED": "Feature not yet implemented",
    "AMDSMI_STATUS_FAIL_LOAD_MODULE": "Fail to load lib",
    "AMDSMI_STATUS_FAIL_LOAD_SYMBOL": "Fail to load symbol",
    "AMDSMI_STATUS_DRM_ERROR": "Error when called libdrm",
    "AMDSMI_STATUS_API_FAILED": "API call failed",
    "AMDSMI_STATUS_TIMEOUT": "Timeout in API call",
    "AMDSMI_STATUS_RETRY": "Retry operation",
    "AMDSMI_STATUS_NO_PERM": "Permission Denied",
    "AMDSMI_STATUS_INTERRUPT": "Interrupt ocurred during execution",
    "AMDSMI_STATUS_IO": "I/O Error",
    "AMDSMI_STATUS_ADDRESS_FAULT": "Bad address",
    "AMDSMI_STATUS_FILE_ERROR": "Error opening file",
    "AMDSMI_STATUS_OUT_OF_RESOURCES": "Not enough memory",
    "AMDSMI_STATUS_INTERNAL_EXCEPTION": " Internal error",
    "AMDSMI_STATUS_INPUT_OUT_OF_BOUNDS": "Out of bounds",
    "AMDSMI_STATUS_INIT_ERROR": "Initialization error",
    "AMDSMI_STATUS_REFCOUNT_OVERFLOW": "Internal reference counter exceeded INT32_MAX",
    "AMDSMI_STATUS_BUSY": "Device busy",
    "AMDSMI_STATUS_NOT_FOUND": "Device Not found",
    "AMDSMI_STATUS_NOT_INIT": "Device not initialized",
    "AMDSMI_STATUS_NO_SLOT": "No more free slot",
    "AMDSMI_STATUS_NO_DATA": "No data was found for given input",
    "AMDSMI_STATUS_INSUFFICIENT_SIZE": "Insufficient size for operation",
    "AMDSMI_STATUS_UNEXPECTED_SIZE": "unexpected size of data was read",
    "AMDSMI_STATUS_UNEXPECTED_DATA": "The data read or provided was unexpected",
    "AMDSMI_STATUS_UNKNOWN_ERROR": "An unknown error occurred",
}
STATUS_INVAL = 1
STATUS_NOT_SUPPORTED = 2
STATUS_NOT_INIT = 32


class AmdSmiException(Exception):
    """Base of amdsmi's exceptions (the real package's name)."""


class AmdSmiLibraryException(AmdSmiException):
    """An amdsmi call that returned a status other than success (same attributes as the real one)."""

    def __init__(self, err_code: int) -> None:
        err_code = abs(int(err_code))
        super().__init__(err_code)
        self.err_code = err_code
        name = AMDSMI_STATUS.get(err_code, "AMDSMI_STATUS_UNKNOWN_ERROR")
        name = name if name in STATUS_TEXT else "AMDSMI_STATUS_UNKNOWN_ERROR"  # as the binding's switch.get does
        self.err_info = f"{name} - {STATUS_TEXT[name]}"

    def __str__(self) -> str:
        return f"An error occured with code: {self.err_code}({self.err_info})"

    def get_error_code(self) -> int:
        return self.err_code

    def get_error_info(self) -> str:
        return self.err_info


class AmdSmiInitFlags(IntEnum):
    INIT_ALL_PROCESSORS = 0xFFFFFFFF
    INIT_AMD_CPUS = 1 << 0
    INIT_AMD_GPUS = 1 << 1
    INIT_NON_AMD_CPUS = 1 << 2
    INIT_NON_AMD_GPUS = 1 << 3
    INIT_AMD_APUS = (1 << 0) | (1 << 1)


class AmdSmiMemoryType(IntEnum):
    VRAM = 0
    VIS_VRAM = 1
    GTT = 2


class AmdSmiTemperatureType(IntEnum):
    EDGE = 0
    HOTSPOT = 1
    JUNCTION = 1
    VRAM = 2
    HBM_0 = 3
    HBM_1 = 4
    HBM_2 = 5
    HBM_3 = 6
    PLX = 7


class AmdSmiTemperatureMetric(IntEnum):
    CURRENT = 0
    MAX = 1
    MIN = 2


class AmdSmiLinkType(IntEnum):
    AMDSMI_LINK_TYPE_INTERNAL = 0
    AMDSMI_LINK_TYPE_PCIE = 1
    AMDSMI_LINK_TYPE_XGMI = 2
    AMDSMI_LINK_TYPE_NOT_APPLICABLE = 3
    AMDSMI_LINK_TYPE_UNKNOWN = 4


_TEMPERATURE_KEYS = {AmdSmiTemperatureType.EDGE: "edge", AmdSmiTemperatureType.HOTSPOT: "hotspot",
                     AmdSmiTemperatureType.VRAM: "vram", AmdSmiTemperatureType.HBM_0: "hbm_0",
                     AmdSmiTemperatureType.HBM_1: "hbm_1", AmdSmiTemperatureType.HBM_2: "hbm_2",
                     AmdSmiTemperatureType.HBM_3: "hbm_3", AmdSmiTemperatureType.PLX: "plx"}
_MEMORY_KEYS = {AmdSmiMemoryType.VRAM: "vram", AmdSmiMemoryType.VIS_VRAM: "vis_vram", AmdSmiMemoryType.GTT: "gtt"}


def open_real() -> Any:
    """The real ``amdsmi`` module, initialised for GPUs; LibraryUnavailable without it or its driver."""
    try:
        import amdsmi
    except ImportError as e:
        raise LibraryUnavailable(f"amdsmi: the amdsmi Python package is not importable ({e})") from e
    try:
        amdsmi.amdsmi_init(amdsmi.AmdSmiInitFlags.INIT_AMD_GPUS)
    except Exception as e:  # AmdSmiLibraryException when the amdgpu driver is not loaded
        raise LibraryUnavailable(f"amdsmi: amdsmi_init failed: {e}") from e
    return amdsmi


def open_simulated(data: Mapping[str, Any]) -> SimulatedAmdSmi:
    lib = SimulatedAmdSmi(data)
    try:
        lib.amdsmi_init(AmdSmiInitFlags.INIT_AMD_GPUS)
    except AmdSmiLibraryException as e:
        raise LibraryUnavailable(f"amdsmi: amdsmi_init failed: {e}") from e
    return lib


class ProcessorHandle:
    """Stands in for amdsmi's opaque ``amdsmi_processor_handle``."""

    rayaccel_handle = True  # an opaque handle: `rayaccel record` stores it as a token

    __slots__ = ("key",)

    def __init__(self, key: str) -> None:
        self.key = key

    def __repr__(self) -> str:
        return f"<amdsmi_processor_handle gpu {self.key}>"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ProcessorHandle) and other.key == self.key

    def __hash__(self) -> int:
        return hash(self.key)


class SimulatedAmdSmi:
    """The amdsmi Python API answered from fixture data."""

    AmdSmiException = AmdSmiException
    AmdSmiLibraryException = AmdSmiLibraryException
    AmdSmiInitFlags = AmdSmiInitFlags
    AmdSmiMemoryType = AmdSmiMemoryType
    AmdSmiTemperatureType = AmdSmiTemperatureType
    AmdSmiTemperatureMetric = AmdSmiTemperatureMetric
    AmdSmiLinkType = AmdSmiLinkType

    def __init__(self, data: Mapping[str, Any]) -> None:
        self._data = dict(data)
        gpus = self._data.get("gpus") or {}
        # Enumeration order is the index order, whatever order the keys were written in.
        self._gpus: dict[str, dict[str, Any]] = {
            str(k): dict(v) for k, v in sorted(gpus.items(), key=lambda kv: int(kv[0])) if v is not None}
        self._initialized = False
        layout = self._data.get("link_type_enum")
        if layout:
            # Another release's numbering of amdsmi_link_type_t: the instance's enum is that release's.
            self.AmdSmiLinkType = IntEnum(  # type: ignore[misc]
                "AmdSmiLinkType", {str(name): int(value) for name, value in dict(layout).items()})

    # Library lifecycle ---------------------------------------------------------------------------

    def amdsmi_init(self, flag: int = AmdSmiInitFlags.INIT_AMD_GPUS) -> None:
        code = self._data.get("init_error")
        if code:
            raise AmdSmiLibraryException(int(code))
        self._initialized = True

    def amdsmi_shut_down(self) -> None:
        self._initialized = False

    def amdsmi_get_lib_version(self) -> dict[str, Any]:
        return dict(self._data.get("lib_version") or {"major": 0, "minor": 0, "release": 0, "build": ""})

    def amdsmi_get_rocm_version(self) -> tuple[bool, str]:
        version = self._data.get("rocm_version")
        return (True, str(version)) if version else (False, "Could not load librocm-core.so")

    def amdsmi_get_processor_handles(self) -> list[ProcessorHandle]:
        self._check_init()
        return [ProcessorHandle(key) for key in self._gpus]

    # Per-device queries -------------------------------------------------------------------------

    def amdsmi_get_gpu_id(self, handle: ProcessorHandle) -> int:
        return int(self._value(handle, "amdsmi_get_gpu_id", "gpu_id"))

    def amdsmi_get_gpu_asic_info(self, handle: ProcessorHandle) -> dict[str, Any]:
        return dict(self._value(handle, "amdsmi_get_gpu_asic_info", "asic_info"))

    def amdsmi_get_gpu_device_uuid(self, handle: ProcessorHandle) -> str:
        return str(self._value(handle, "amdsmi_get_gpu_device_uuid", "uuid"))

    def amdsmi_get_gpu_device_bdf(self, handle: ProcessorHandle) -> str:
        return str(self._value(handle, "amdsmi_get_gpu_device_bdf", "bdf"))

    def amdsmi_get_gpu_enumeration_info(self, handle: ProcessorHandle) -> dict[str, Any]:
        return dict(self._value(handle, "amdsmi_get_gpu_enumeration_info", "enumeration_info"))

    def amdsmi_get_gpu_vram_info(self, handle: ProcessorHandle) -> dict[str, Any]:
        return dict(self._value(handle, "amdsmi_get_gpu_vram_info", "vram_info"))

    def amdsmi_get_gpu_memory_total(self, handle: ProcessorHandle, mem_type: int) -> int:
        table = self._value(handle, "amdsmi_get_gpu_memory_total", "memory_total")
        return int(self._member(table, _MEMORY_KEYS, mem_type, AmdSmiMemoryType))

    def amdsmi_get_gpu_memory_usage(self, handle: ProcessorHandle, mem_type: int) -> int:
        table = self._value(handle, "amdsmi_get_gpu_memory_usage", "memory_usage")
        return int(self._member(table, _MEMORY_KEYS, mem_type, AmdSmiMemoryType))

    def amdsmi_topo_get_numa_node_number(self, handle: ProcessorHandle) -> int:
        return int(self._value(handle, "amdsmi_topo_get_numa_node_number", "numa_node"))

    def amdsmi_get_gpu_driver_info(self, handle: ProcessorHandle) -> dict[str, Any]:
        return dict(self._value(handle, "amdsmi_get_gpu_driver_info", "driver_info"))

    def amdsmi_get_gpu_compute_partition(self, handle: ProcessorHandle) -> str:
        return str(self._value(handle, "amdsmi_get_gpu_compute_partition", "compute_partition"))

    def amdsmi_get_gpu_memory_partition(self, handle: ProcessorHandle) -> str:
        return str(self._value(handle, "amdsmi_get_gpu_memory_partition", "memory_partition"))

    def amdsmi_get_xgmi_info(self, handle: ProcessorHandle) -> dict[str, Any]:
        return dict(self._value(handle, "amdsmi_get_xgmi_info", "xgmi_info"))

    def amdsmi_topo_get_link_type(self, src: ProcessorHandle, dst: ProcessorHandle) -> dict[str, int]:
        source, target = self._pair(src, dst, "amdsmi_topo_get_link_type")
        if source is target:
            return {"hops": 0, "type": self._link_type("AMDSMI_LINK_TYPE_INTERNAL")}
        link = self._link(source, dst)
        return {"hops": int(link.get("hops", 1)), "type": self._link_type(link["type"])}

    def _link_type(self, value: Any) -> int:
        if isinstance(value, str):
            member = getattr(self.AmdSmiLinkType, value, None)
            if member is None:
                raise AmdSmiLibraryException(STATUS_NOT_SUPPORTED)  # a type this release does not have
            return int(member)
        return int(value)

    def amdsmi_get_gpu_kfd_info(self, handle: ProcessorHandle) -> dict[str, Any]:
        return dict(self._value(handle, "amdsmi_get_gpu_kfd_info", "kfd_info"))

    def amdsmi_topo_get_link_weight(self, src: ProcessorHandle, dst: ProcessorHandle) -> int:
        source, target = self._pair(src, dst, "amdsmi_topo_get_link_weight")
        if source is target:
            return 0
        link = self._link(source, dst)
        if "weight" not in link:
            raise AmdSmiLibraryException(STATUS_NOT_SUPPORTED)
        return int(link["weight"])

    def amdsmi_get_gpu_ras_block_features_enabled(self, handle: ProcessorHandle) -> list[dict[str, Any]]:
        return [dict(b) for b in self._value(handle, "amdsmi_get_gpu_ras_block_features_enabled",
                                             "ras_block_features")]

    def amdsmi_get_gpu_total_ecc_count(self, handle: ProcessorHandle) -> dict[str, Any]:
        return dict(self._value(handle, "amdsmi_get_gpu_total_ecc_count", "total_ecc_count"))

    def amdsmi_get_gpu_activity(self, handle: ProcessorHandle) -> dict[str, Any]:
        return dict(self._value(handle, "amdsmi_get_gpu_activity", "activity"))

    def amdsmi_get_power_info(self, handle: ProcessorHandle) -> dict[str, Any]:
        return dict(self._value(handle, "amdsmi_get_power_info", "power_info"))

    def amdsmi_get_temp_metric(self, handle: ProcessorHandle, sensor_type: int,
                               metric: int = AmdSmiTemperatureMetric.CURRENT) -> int:
        table = self._value(handle, "amdsmi_get_temp_metric", "temperature")
        if int(metric) != AmdSmiTemperatureMetric.CURRENT:
            raise AmdSmiLibraryException(STATUS_NOT_SUPPORTED)
        value = self._member(table, _TEMPERATURE_KEYS, sensor_type, AmdSmiTemperatureType)
        if value in (None, "N/A"):
            raise AmdSmiLibraryException(STATUS_NOT_SUPPORTED)
        return int(value)

    # Internals -----------------------------------------------------------------------------------

    def _check_init(self) -> None:
        if not self._initialized:
            raise AmdSmiLibraryException(STATUS_NOT_INIT)

    def _gpu(self, handle: Any, function: str) -> dict[str, Any]:
        self._check_init()
        if not isinstance(handle, ProcessorHandle) or handle.key not in self._gpus:
            raise AmdSmiLibraryException(STATUS_INVAL)
        gpu = self._gpus[handle.key]
        errors = gpu.get("errors") or {}
        code = errors.get(function, errors.get("*"))
        if code:
            raise AmdSmiLibraryException(int(code))
        return gpu

    def _value(self, handle: Any, function: str, key: str) -> Any:
        gpu = self._gpu(handle, function)
        if gpu.get(key) is None:
            raise AmdSmiLibraryException(STATUS_NOT_SUPPORTED)
        return gpu[key]

    def _pair(self, src: Any, dst: Any, function: str) -> tuple[dict[str, Any], dict[str, Any]]:
        """The two GPUs of a topology query, each checked once (the library answers a GPU x GPU table: 4032
        queries a read of a CPX machine's 64 partitions)."""
        return self._gpu(src, function), self._gpu(dst, function)

    @staticmethod
    def _link(source: Mapping[str, Any], dst: ProcessorHandle) -> Mapping[str, Any]:
        """``source``'s link to ``dst`` (both checked by :meth:`_pair`)."""
        link = (source.get("links") or {}).get(dst.key)
        if link is None:
            raise AmdSmiLibraryException(STATUS_NOT_SUPPORTED)
        return link  # type: ignore[no-any-return]

    @staticmethod
    def _member(table: Any, keys: Mapping[Any, str], which: int, enum: type[IntEnum]) -> Any:
        try:
            key = keys[enum(int(which))]
        except (ValueError, KeyError):
            raise AmdSmiLibraryException(STATUS_INVAL) from None
        if not isinstance(table, Mapping) or table.get(key) is None:
            raise AmdSmiLibraryException(STATUS_NOT_SUPPORTED)
        return table[key]


#: What this plugin hands to ``host.library(...)``: the real amdsmi on a node, the fixture's ``libraries.amdsmi`` data
#: on a simulated host.
AMDSMI = LibraryAdapter("amdsmi", open_real, open_simulated)
