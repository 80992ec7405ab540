"""The NVML adapter behind ``host.library(NVML)``.

Both adapters answer the calls a plugin makes with pynvml's (``nvidia-ml-py``) names, arguments, return
shapes and errors, so plugin code is the same on a real node and on a simulated one:

* :func:`open_real` imports pynvml and calls ``nvmlInit``; every other attribute is pynvml's own.
* :func:`open_simulated` answers from fixture data (``host.libraries.nvml``) laid out as NVML reports it.
  Failures are ``NVMLError`` with NVML's real return codes (``NVML_ERROR_GPU_IS_LOST``,
  ``NVML_ERROR_NOT_SUPPORTED``, ...); when pynvml is importable they are pynvml's own exception classes,
  so ``except nvml.NVMLError_GpuIsLost`` works the same on both. Only the Python package is used, never
  the driver.

Simulated data (every key optional; dicts keyed by index so a merge-patch fault can change one device)::

    driver_version: "550.54.15"          # nvmlSystemGetDriverVersion
    cuda_driver_version: 12040           # nvmlSystemGetCudaDriverVersion
    init_error: NVML_ERROR_DRIVER_NOT_LOADED   # nvmlInit fails with this code
    hang: true                           # every call blocks (a wedged driver); see SIMULATED_HANG_SECONDS
    events: {"0": {device: 3, xid: 79}}  # XID events pending for the event-set API
    devices:
      "0":
        name, uuid, serial, pci: {busId, domain, bus, device, pciDeviceId, pciSubSystemId},
        memory: {total, free, used}      # bytes
        numa_node, cpu_affinity: [64-bit words], compute_capability: [9, 0], architecture: 9,
        minor_number: 0                  # nvmlDeviceGetMinorNumber: N of /dev/nvidia<N> (absent: NOT_SUPPORTED)
        mig_mode: [current, pending], mig_devices: {"0": {uuid, name, memory, gpu_instance_id,
        compute_instance_id}}, max_mig_devices: 7,
        mig_empty_slot_error: NVML_ERROR_INVALID_ARGUMENT   # what an empty MIG slot answers (default NOT_FOUND)
        nvlink: {"0": {state: 1, version: 6, remote_type: 2, remote_pci: {busId, pciDeviceId}}},
                                         # version: the nvmlNvlinkVersion_t enum (6 = NVML_NVLINK_VERSION_4_0)
        fabric: {clusterUuid: "<uuid>", cliqueId: 1, state: 3, status: 0},
                                         # absent: NOT_SUPPORTED (pre-Hopper); a Hopper GPU outside a fabric
                                         # answers success with state 0 (NOT_SUPPORTED): a real H200 VM did
        ecc: {volatile: {corrected, uncorrected}, aggregate: {corrected, uncorrected}},
        remapped_rows: [corrected, uncorrected, pending, failure],
        utilization: {gpu, memory}, power_usage: <mW>, temperature: <C>,
        field_values: {"138": {"0": <KiB>, "1": <KiB>}, "155": <n>}
                                         # nvmlDeviceGetFieldValues: a mapping is per scopeId (the NVLink
                                         # throughput counters 138-141 are per link); a number ignores scopeId;
                                         # a counter NVML was recorded reading twice on a busy machine,
                                         # [{timestamp: <us>, value: <KiB>}, {timestamp, value}], advances at
                                         # that recorded rate from its first value while the session is open
        topology: {"1": 40}              # nvmlDeviceGetTopologyCommonAncestor level to device 1
        lost: true                       # every call on it raises NVML_ERROR_GPU_IS_LOST
        errors: {nvmlDeviceGetMemoryInfo: NVML_ERROR_UNKNOWN}   # one call fails with that code
"""

from __future__ import annotations

import ctypes
import time
import uuid as uuid_module
from collections.abc import Mapping
from types import ModuleType, SimpleNamespace
from typing import Any

from rayaccel import LibraryAdapter, LibraryUnavailable, simulated_hang

#: How long a simulated hung call blocks: longer than any sane caller's timeout, so a caller that does
#: not bound its NVML calls hangs here as it would on a wedged driver. Callers abandon the thread; one bounded by
#: rayaccel.run_bounded on a simulated host gives up at once, charged its timeout (rayaccel.simulated_hang).
SIMULATED_HANG_SECONDS = 600.0

#: NVML constants the simulated adapter needs (ABI values from nvml.h; tests check them against pynvml).
CONSTANTS: dict[str, int] = {
    "NVML_SUCCESS": 0,
    "NVML_ERROR_UNINITIALIZED": 1,
    "NVML_ERROR_INVALID_ARGUMENT": 2,
    "NVML_ERROR_NOT_SUPPORTED": 3,
    "NVML_ERROR_NO_PERMISSION": 4,
    "NVML_ERROR_NOT_FOUND": 6,
    "NVML_ERROR_INSUFFICIENT_POWER": 8,
    "NVML_ERROR_DRIVER_NOT_LOADED": 9,
    "NVML_ERROR_TIMEOUT": 10,
    "NVML_ERROR_LIBRARY_NOT_FOUND": 12,
    "NVML_ERROR_FUNCTION_NOT_FOUND": 13,
    "NVML_ERROR_CORRUPTED_INFOROM": 14,
    "NVML_ERROR_GPU_IS_LOST": 15,
    "NVML_ERROR_RESET_REQUIRED": 16,
    "NVML_ERROR_LIB_RM_VERSION_MISMATCH": 18,
    "NVML_ERROR_UNKNOWN": 999,
    "NVML_FEATURE_DISABLED": 0,
    "NVML_FEATURE_ENABLED": 1,
    "NVML_DEVICE_MIG_DISABLE": 0,
    "NVML_DEVICE_MIG_ENABLE": 1,
    "NVML_NVLINK_MAX_LINKS": 36,
    "NVML_NVLINK_DEVICE_TYPE_GPU": 0,
    "NVML_NVLINK_DEVICE_TYPE_IBMNPU": 1,
    "NVML_NVLINK_DEVICE_TYPE_SWITCH": 2,
    "NVML_NVLINK_DEVICE_TYPE_UNKNOWN": 0xFF,
    "NVML_MEMORY_ERROR_TYPE_CORRECTED": 0,
    "NVML_MEMORY_ERROR_TYPE_UNCORRECTED": 1,
    "NVML_VOLATILE_ECC": 0,
    "NVML_AGGREGATE_ECC": 1,
    "NVML_TEMPERATURE_GPU": 0,
    "NVML_TOPOLOGY_INTERNAL": 0,
    "NVML_TOPOLOGY_SINGLE": 10,
    "NVML_TOPOLOGY_MULTIPLE": 20,
    "NVML_TOPOLOGY_HOSTBRIDGE": 30,
    "NVML_TOPOLOGY_NODE": 40,
    "NVML_TOPOLOGY_SYSTEM": 50,
    "NVML_GPU_FABRIC_UUID_LEN": 16,
    "NVML_GPU_FABRIC_STATE_NOT_SUPPORTED": 0,
    "NVML_GPU_FABRIC_STATE_NOT_STARTED": 1,
    "NVML_GPU_FABRIC_STATE_IN_PROGRESS": 2,
    "NVML_GPU_FABRIC_STATE_COMPLETED": 3,
    "NVML_DEVICE_ARCH_VOLTA": 5,
    "NVML_DEVICE_ARCH_TURING": 6,
    "NVML_DEVICE_ARCH_AMPERE": 7,
    "NVML_DEVICE_ARCH_ADA": 8,
    "NVML_DEVICE_ARCH_HOPPER": 9,
    "NVML_DEVICE_ARCH_BLACKWELL": 10,
    "NVML_NVLINK_VERSION_INVALID": 0,
    "NVML_NVLINK_VERSION_1_0": 1,
    "NVML_NVLINK_VERSION_2_0": 2,
    "NVML_NVLINK_VERSION_2_2": 3,
    "NVML_NVLINK_VERSION_3_0": 4,
    "NVML_NVLINK_VERSION_3_1": 5,
    "NVML_NVLINK_VERSION_4_0": 6,
    "NVML_NVLINK_VERSION_5_0": 7,
    "NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX": 138,
    "NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX": 139,
    "NVML_FI_DEV_NVLINK_THROUGHPUT_RAW_TX": 140,
    "NVML_FI_DEV_NVLINK_THROUGHPUT_RAW_RX": 141,
    "NVML_VALUE_TYPE_UNSIGNED_LONG_LONG": 3,
    "nvmlEventTypeSingleBitEccError": 0x1,
    "nvmlEventTypeDoubleBitEccError": 0x2,
    "nvmlEventTypeXidCriticalError": 0x8,
}

_ERROR_NAMES = {value: name for name, value in CONSTANTS.items() if name.startswith("NVML_ERROR_")}


def _pynvml() -> ModuleType | None:
    try:
        import pynvml
    except ImportError:
        return None
    return pynvml  # type: ignore[no-any-return]


class _FallbackNVMLError(Exception):
    """pynvml's NVMLError shape (``.value`` holds the return code), for hosts without pynvml."""

    def __init__(self, value: int) -> None:
        super().__init__(value)
        self.value = value

    def __str__(self) -> str:
        return _ERROR_NAMES.get(self.value, f"NVML error {self.value}")


class _FallbackValue(ctypes.Union):
    # nvmlValue_t's layout (pynvml's c_nvmlValue_t), for hosts without pynvml.
    _fields_ = [("dVal", ctypes.c_double), ("uiVal", ctypes.c_uint), ("ulVal", ctypes.c_ulong),
                ("ullVal", ctypes.c_ulonglong), ("sllVal", ctypes.c_longlong), ("siVal", ctypes.c_int),
                ("usVal", ctypes.c_ushort)]


class _FallbackFabricInfo(ctypes.Structure):
    # nvmlGpuFabricInfo_v2_t's layout, so byref() works as with pynvml's own structure.
    _fields_ = [("version", ctypes.c_uint), ("clusterUuid", ctypes.c_uint8 * 16), ("status", ctypes.c_uint),
                ("cliqueId", ctypes.c_uint32), ("state", ctypes.c_uint8), ("healthMask", ctypes.c_uint32)]


def nvml_error_class() -> type[Exception]:
    module = _pynvml()
    return module.NVMLError if module is not None else _FallbackNVMLError


def error_code(value: int | str) -> int:
    """An NVML return code from a number or its name (``"NVML_ERROR_GPU_IS_LOST"``), as fixtures write it."""
    if isinstance(value, int):
        return value
    module = _pynvml()
    code = getattr(module, value, None) if module is not None else None
    if code is None:
        code = CONSTANTS.get(value)
    if not isinstance(code, int):
        raise ValueError(f"unknown NVML return code {value!r}; use an NVML_ERROR_* name or its number")
    return code


# ----------------------------------------------------------------------------------------------------
# Real


class RealNvml:
    """pynvml after a successful ``nvmlInit``: every attribute is pynvml's own."""

    def __init__(self, module: ModuleType) -> None:
        self._module = module

    def __getattr__(self, name: str) -> Any:
        return getattr(self._module, name)


def open_real() -> RealNvml:
    """Import pynvml and initialise NVML; LibraryUnavailable when either is missing."""
    module = _pynvml()
    if module is None:
        raise LibraryUnavailable("nvml: the pynvml module is not installed (pip install nvidia-ml-py)")
    try:
        module.nvmlInit()
    except module.NVMLError as e:
        raise LibraryUnavailable(f"nvml: nvmlInit failed: {e}") from e
    except OSError as e:  # a libnvidia-ml.so that exists but cannot be loaded
        raise LibraryUnavailable(f"nvml: cannot load libnvidia-ml: {e}") from e
    return RealNvml(module)


# ----------------------------------------------------------------------------------------------------
# Simulated


class SimHandle:
    """An ``nvmlDevice_t``: a GPU by index, or one of its MIG devices."""

    rayaccel_handle = True  # an opaque handle: `rayaccel record` stores it as a token

    def __init__(self, index: int, mig: int | None = None) -> None:
        self.index = index
        self.mig = mig

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SimHandle) and (self.index, self.mig) == (other.index, other.mig)

    def __hash__(self) -> int:
        return hash((self.index, self.mig))

    def __repr__(self) -> str:
        return f"<nvmlDevice_t {self.index}{'' if self.mig is None else f' mig {self.mig}'}>"


class SimEventSet:
    rayaccel_handle = True  # an opaque handle: `rayaccel record` stores it as a token

    def __init__(self) -> None:
        self.registered: dict[int, int] = {}  # device index -> event type mask


def _pci(data: Mapping[str, Any]) -> SimpleNamespace:
    bus_id = str(data.get("busId", ""))
    return SimpleNamespace(
        busId=bus_id, busIdLegacy=bus_id[4:] if len(bus_id) == 16 else bus_id,
        domain=int(data.get("domain", 0)), bus=int(data.get("bus", 0)), device=int(data.get("device", 0)),
        pciDeviceId=int(data.get("pciDeviceId", 0)), pciSubSystemId=int(data.get("pciSubSystemId", 0)))


class SimulatedNvml:
    """NVML answering from fixture data, with pynvml's call names, return shapes and errors."""

    def __init__(self, data: Mapping[str, Any]) -> None:
        self._data = data
        self._block = simulated_hang()  # a hang under the caller's bound is charged to the host, not waited
        self.NVMLError = nvml_error_class()
        module = _pynvml()
        for name, value in CONSTANTS.items():
            setattr(self, name, getattr(module, name, value) if module is not None else value)
        self.c_nvmlGpuFabricInfoV_t = (module.c_nvmlGpuFabricInfoV_t if module is not None
                                       else _FallbackFabricInfo)
        self.c_nvmlGpuFabricInfo_t = self.c_nvmlGpuFabricInfoV_t
        self._value_union = module.c_nvmlValue_t if module is not None else _FallbackValue
        #: When this session opened (NVML's microsecond clock): a recorded busy counter advances from then on.
        self._opened_us = time.time_ns() // 1000
        self._pending_events = [dict(e) for _, e in sorted(dict(data.get("events") or {}).items(),
                                                            key=lambda kv: int(kv[0]))]
        self._hang()
        if data.get("init_error") is not None:
            error = self._error(error_code(data["init_error"]))
            raise LibraryUnavailable(f"nvml: nvmlInit failed: {error}") from error

    # Plumbing -----------------------------------------------------------------------------------

    def __getattr__(self, name: str) -> Any:
        if name.startswith("NVMLError_"):
            module = _pynvml()
            if module is not None and hasattr(module, name):
                return getattr(module, name)
        if name.startswith("nvml"):
            # A real pynvml function the simulation does not model: NVML's own answer for a call the
            # driver lacks, so plugins exercise their fallback path.
            def unsupported(*args: Any, **kwargs: Any) -> Any:
                self._hang()
                raise self._error(CONSTANTS["NVML_ERROR_FUNCTION_NOT_FOUND"])

            return unsupported
        raise AttributeError(name)

    def _error(self, code: int) -> Exception:
        return self.NVMLError(code)

    def _hang(self) -> None:
        if self._data.get("hang"):
            self._block(float(self._data.get("hang_seconds", SIMULATED_HANG_SECONDS)))

    def _devices(self) -> Mapping[str, Any]:
        return self._data.get("devices") or {}  # read only: no copy per call (hundreds per inventory)

    def _device(self, handle: SimHandle, call: str) -> Mapping[str, Any]:
        # The fixture's own mapping, read only (no copy: a health poll makes ~150 of these calls).
        self._hang()
        if not isinstance(handle, SimHandle):
            raise self._error(CONSTANTS["NVML_ERROR_INVALID_ARGUMENT"])
        device = self._devices().get(str(handle.index))
        if device is None:
            raise self._error(CONSTANTS["NVML_ERROR_INVALID_ARGUMENT"])
        if device.get("lost"):
            raise self._error(CONSTANTS["NVML_ERROR_GPU_IS_LOST"])
        failure = (device.get("errors") or {}).get(call)
        if failure is not None:
            raise self._error(error_code(failure))
        if handle.mig is not None:
            mig = (device.get("mig_devices") or {}).get(str(handle.mig))
            if mig is None:
                raise self._error(CONSTANTS["NVML_ERROR_INVALID_ARGUMENT"])
            return mig  # type: ignore[no-any-return]
        return device  # type: ignore[no-any-return]

    def _field(self, handle: SimHandle, call: str, key: str) -> Any:
        device = self._device(handle, call)
        if device.get(key) is None:
            raise self._error(CONSTANTS["NVML_ERROR_NOT_SUPPORTED"])
        return device[key]

    # Init and system ----------------------------------------------------------------------------

    def nvmlInit(self) -> None:
        self._hang()

    def nvmlShutdown(self) -> None:
        return None

    def nvmlSystemGetDriverVersion(self) -> str:
        self._hang()
        return str(self._data.get("driver_version", ""))

    def nvmlSystemGetCudaDriverVersion(self) -> int:
        self._hang()
        return int(self._data.get("cuda_driver_version", 0))

    def nvmlDeviceGetCount(self) -> int:
        self._hang()
        return len(self._devices())

    def nvmlDeviceGetHandleByIndex(self, index: int) -> SimHandle:
        self._hang()
        device = self._devices().get(str(index))
        if device is None:
            raise self._error(CONSTANTS["NVML_ERROR_INVALID_ARGUMENT"])
        if device.get("lost"):
            raise self._error(CONSTANTS["NVML_ERROR_GPU_IS_LOST"])
        failure = (device.get("errors") or {}).get("nvmlDeviceGetHandleByIndex")
        if failure is not None:  # NVML's documented answers: INSUFFICIENT_POWER, NO_PERMISSION, IRQ_ISSUE, ...
            raise self._error(error_code(failure))
        return SimHandle(int(index))

    # Identity -----------------------------------------------------------------------------------

    def nvmlDeviceGetIndex(self, handle: SimHandle) -> int:
        self._device(handle, "nvmlDeviceGetIndex")
        return handle.index

    def nvmlDeviceGetName(self, handle: SimHandle) -> str:
        return str(self._field(handle, "nvmlDeviceGetName", "name"))

    def nvmlDeviceGetUUID(self, handle: SimHandle) -> str:
        return str(self._field(handle, "nvmlDeviceGetUUID", "uuid"))

    def nvmlDeviceGetSerial(self, handle: SimHandle) -> str:
        return str(self._field(handle, "nvmlDeviceGetSerial", "serial"))

    def nvmlDeviceGetPciInfo_v3(self, handle: SimHandle) -> SimpleNamespace:
        return _pci(self._field(handle, "nvmlDeviceGetPciInfo_v3", "pci"))

    def nvmlDeviceGetPciInfo(self, handle: SimHandle) -> SimpleNamespace:
        return _pci(self._field(handle, "nvmlDeviceGetPciInfo", "pci"))

    def nvmlDeviceGetMemoryInfo(self, handle: SimHandle, version: int | None = None) -> SimpleNamespace:
        memory = self._field(handle, "nvmlDeviceGetMemoryInfo", "memory")
        total = int(memory.get("total", 0))
        used = int(memory.get("used", 0))
        free = int(memory.get("free", total - used))
        if not version:  # nvmlMemory_t, as pynvml returns it without a version: no reserved, no version
            return SimpleNamespace(total=total, free=free, used=used)
        return SimpleNamespace(version=version, total=total, reserved=int(memory.get("reserved", 0)), free=free,
                               used=used)

    def nvmlDeviceGetNumaNodeId(self, handle: SimHandle) -> int:
        return int(self._field(handle, "nvmlDeviceGetNumaNodeId", "numa_node"))

    def nvmlDeviceGetCpuAffinity(self, handle: SimHandle, cpuSetSize: int) -> Any:
        words = [int(w) for w in self._field(handle, "nvmlDeviceGetCpuAffinity", "cpu_affinity")]
        # pynvml returns a ctypes array of cpuSetSize 64-bit words, not a list (no list methods, no `+`).
        return (ctypes.c_ulonglong * cpuSetSize)(*(words + [0] * cpuSetSize)[:cpuSetSize])

    def nvmlDeviceGetCudaComputeCapability(self, handle: SimHandle) -> tuple[int, int]:
        major, minor = self._field(handle, "nvmlDeviceGetCudaComputeCapability", "compute_capability")
        return int(major), int(minor)

    def nvmlDeviceGetArchitecture(self, device: SimHandle) -> int:
        return int(self._field(device, "nvmlDeviceGetArchitecture", "architecture"))

    def nvmlDeviceGetMinorNumber(self, handle: SimHandle) -> int:
        return int(self._field(handle, "nvmlDeviceGetMinorNumber", "minor_number"))

    # MIG ----------------------------------------------------------------------------------------

    def nvmlDeviceGetMigMode(self, device: SimHandle) -> list[int]:
        current, pending = self._field(device, "nvmlDeviceGetMigMode", "mig_mode")
        return [int(current), int(pending)]

    def nvmlDeviceGetMaxMigDeviceCount(self, device: SimHandle) -> int:
        data = self._device(device, "nvmlDeviceGetMaxMigDeviceCount")
        if data.get("mig_mode") is None:
            raise self._error(CONSTANTS["NVML_ERROR_NOT_SUPPORTED"])
        return int(data.get("max_mig_devices", 7))

    def nvmlDeviceGetMigDeviceHandleByIndex(self, device: SimHandle, index: int) -> SimHandle:
        data = self._device(device, "nvmlDeviceGetMigDeviceHandleByIndex")
        if data.get("mig_mode") is None:
            raise self._error(CONSTANTS["NVML_ERROR_NOT_SUPPORTED"])
        if (data.get("mig_mode") or [0])[0] != CONSTANTS["NVML_DEVICE_MIG_ENABLE"]:
            raise self._error(CONSTANTS["NVML_ERROR_INVALID_ARGUMENT"])
        if str(index) not in (data.get("mig_devices") or {}):
            # Most drivers answer NOT_FOUND for an empty slot; some answer INVALID_ARGUMENT.
            raise self._error(error_code(data.get("mig_empty_slot_error") or "NVML_ERROR_NOT_FOUND"))
        return SimHandle(device.index, int(index))

    def nvmlDeviceGetGpuInstanceId(self, device: SimHandle) -> int:
        if device.mig is None:
            raise self._error(CONSTANTS["NVML_ERROR_INVALID_ARGUMENT"])
        return int(self._field(device, "nvmlDeviceGetGpuInstanceId", "gpu_instance_id"))

    def nvmlDeviceGetComputeInstanceId(self, device: SimHandle) -> int:
        if device.mig is None:
            raise self._error(CONSTANTS["NVML_ERROR_INVALID_ARGUMENT"])
        return int(self._field(device, "nvmlDeviceGetComputeInstanceId", "compute_instance_id"))

    # NVLink, PCIe topology and fabric -------------------------------------------------------------

    def _link(self, handle: SimHandle, call: str, link: int) -> dict[str, Any]:
        device = self._device(handle, call)
        links = device.get("nvlink")
        if links is None:
            raise self._error(CONSTANTS["NVML_ERROR_NOT_SUPPORTED"])
        entry = links.get(str(link))
        if entry is None:
            raise self._error(CONSTANTS["NVML_ERROR_INVALID_ARGUMENT"])
        return dict(entry)

    def nvmlDeviceGetNvLinkState(self, device: SimHandle, link: int) -> int:
        return int(self._link(device, "nvmlDeviceGetNvLinkState", link).get("state", 0))

    def nvmlDeviceGetNvLinkVersion(self, device: SimHandle, link: int) -> int:
        return int(self._link(device, "nvmlDeviceGetNvLinkVersion", link).get("version", 0))

    def nvmlDeviceGetNvLinkRemoteDeviceType(self, handle: SimHandle, link: int) -> int:
        entry = self._link(handle, "nvmlDeviceGetNvLinkRemoteDeviceType", link)
        return int(entry.get("remote_type", CONSTANTS["NVML_NVLINK_DEVICE_TYPE_GPU"]))

    def nvmlDeviceGetNvLinkRemotePciInfo(self, device: SimHandle, link: int) -> SimpleNamespace:
        entry = self._link(device, "nvmlDeviceGetNvLinkRemotePciInfo", link)
        if entry.get("remote_pci") is None:
            raise self._error(CONSTANTS["NVML_ERROR_NOT_SUPPORTED"])
        return _pci(entry["remote_pci"])

    def nvmlDeviceGetTopologyCommonAncestor(self, device1: SimHandle, device2: SimHandle) -> int:
        levels = self._field(device1, "nvmlDeviceGetTopologyCommonAncestor", "topology")
        level = levels.get(str(device2.index))
        if level is None:
            raise self._error(CONSTANTS["NVML_ERROR_NOT_SUPPORTED"])
        return int(level)

    def nvmlDeviceGetGpuFabricInfoV(self, device: SimHandle, gpuFabricInfo: Any) -> int:
        fabric = self._field(device, "nvmlDeviceGetGpuFabricInfoV", "fabric")
        info = getattr(gpuFabricInfo, "_obj", gpuFabricInfo)  # byref(struct) or the struct itself
        raw = uuid_module.UUID(str(fabric.get("clusterUuid", "00000000-0000-0000-0000-000000000000"))).bytes
        for i, byte in enumerate(raw):
            info.clusterUuid[i] = byte
        info.cliqueId = int(fabric.get("cliqueId", 0))
        info.state = int(fabric.get("state", CONSTANTS["NVML_GPU_FABRIC_STATE_COMPLETED"]))
        info.status = int(fabric.get("status", CONSTANTS["NVML_SUCCESS"]))
        return CONSTANTS["NVML_SUCCESS"]

    nvmlDeviceGetGpuFabricInfo = nvmlDeviceGetGpuFabricInfoV

    # Health -------------------------------------------------------------------------------------

    def nvmlDeviceGetTotalEccErrors(self, handle: SimHandle, errorType: int, counterType: int) -> int:
        ecc = self._field(handle, "nvmlDeviceGetTotalEccErrors", "ecc")
        counter = ecc.get("volatile" if counterType == CONSTANTS["NVML_VOLATILE_ECC"] else "aggregate") or {}
        kind = "uncorrected" if errorType == CONSTANTS["NVML_MEMORY_ERROR_TYPE_UNCORRECTED"] else "corrected"
        return int(counter.get(kind, 0))

    def nvmlDeviceGetRemappedRows(self, device: SimHandle) -> tuple[int, int, int, int]:
        corrected, uncorrected, pending, failure = self._field(device, "nvmlDeviceGetRemappedRows",
                                                               "remapped_rows")
        return int(corrected), int(uncorrected), int(pending), int(failure)

    def nvmlEventSetCreate(self) -> SimEventSet:
        self._hang()
        return SimEventSet()

    def nvmlDeviceGetSupportedEventTypes(self, handle: SimHandle) -> int:
        self._device(handle, "nvmlDeviceGetSupportedEventTypes")
        return int(CONSTANTS["nvmlEventTypeXidCriticalError"] | CONSTANTS["nvmlEventTypeDoubleBitEccError"]
                   | CONSTANTS["nvmlEventTypeSingleBitEccError"])

    def nvmlDeviceRegisterEvents(self, handle: SimHandle, eventTypes: int, eventSet: SimEventSet) -> None:
        self._device(handle, "nvmlDeviceRegisterEvents")
        eventSet.registered[handle.index] = eventSet.registered.get(handle.index, 0) | int(eventTypes)

    def nvmlEventSetWait_v2(self, eventSet: SimEventSet, timeoutms: int) -> SimpleNamespace:
        self._hang()
        for event in list(self._pending_events):
            index = int(event["device"])
            mask = eventSet.registered.get(index, 0)
            etype = int(event.get("type", CONSTANTS["nvmlEventTypeXidCriticalError"]))
            if mask & etype:
                self._pending_events.remove(event)
                return SimpleNamespace(device=SimHandle(index), eventType=etype, eventData=int(event.get("xid", 0)),
                                       gpuInstanceId=int(event.get("gpu_instance_id", 0xFFFFFFFF)),
                                       computeInstanceId=int(event.get("compute_instance_id", 0xFFFFFFFF)))
        # NVML waits up to timeoutms and then reports a timeout; nothing more will arrive here.
        time.sleep(min(timeoutms, 50) / 1000.0)
        raise self._error(CONSTANTS["NVML_ERROR_TIMEOUT"])

    nvmlEventSetWait = nvmlEventSetWait_v2

    def nvmlEventSetFree(self, eventSet: SimEventSet) -> None:
        eventSet.registered.clear()

    # Metrics ------------------------------------------------------------------------------------

    def nvmlDeviceGetUtilizationRates(self, handle: SimHandle) -> SimpleNamespace:
        util = self._field(handle, "nvmlDeviceGetUtilizationRates", "utilization")
        return SimpleNamespace(gpu=int(util.get("gpu", 0)), memory=int(util.get("memory", 0)))

    def nvmlDeviceGetPowerUsage(self, handle: SimHandle) -> int:
        return int(self._field(handle, "nvmlDeviceGetPowerUsage", "power_usage"))

    def nvmlDeviceGetTemperature(self, handle: SimHandle, sensor: int) -> int:
        return int(self._field(handle, "nvmlDeviceGetTemperature", "temperature"))

    def nvmlDeviceGetFieldValues(self, handle: SimHandle, fieldIds: list[int | tuple[int, int]]) -> list[Any]:
        recorded = self._device(handle, "nvmlDeviceGetFieldValues").get("field_values") or {}
        now_us = time.time_ns() // 1000
        success, unsupported = CONSTANTS["NVML_SUCCESS"], CONSTANTS["NVML_ERROR_NOT_SUPPORTED"]
        invalid, value_type = CONSTANTS["NVML_ERROR_INVALID_ARGUMENT"], CONSTANTS["NVML_VALUE_TYPE_UNSIGNED_LONG_LONG"]
        union = self._value_union
        values = []
        for requested in fieldIds:  # a GPU's 36 NVLink counters at each poll: kept lean
            field_id, scope = requested if type(requested) is tuple else (requested, 0)
            raw = recorded.get(str(field_id))
            code = success if raw is not None else unsupported
            if type(raw) is not int and isinstance(raw, Mapping):
                # A scoped field (the NVLink throughput counters: scopeId is the link): another link's
                # value is not this one's; a link the GPU lacks is an invalid argument.
                raw = raw.get(str(scope))
                if raw is None:
                    code = invalid
            if type(raw) is list:
                raw = _counter_at(raw, now_us - self._opened_us)
            # Like NVML: the call succeeds and each value carries its own return code; nvmlValue_t is a
            # union (every view of the same bytes, as the real one has).
            values.append(SimpleNamespace(fieldId=field_id, scopeId=scope, timestamp=now_us, latencyUsec=0,
                                          valueType=value_type, nvmlReturn=code, value=union(ullVal=int(raw or 0))))
        return values


def _counter_at(recorded: list[Any], elapsed_us: int) -> int:
    """A cumulative counter NVML was recorded reading twice (``{timestamp, value}``, in order), ``elapsed_us``
    after the session opened: its first value, advanced at the recorded rate (the traffic goes on as recorded)."""
    first, last = recorded[0], recorded[-1]
    span = int(last["timestamp"]) - int(first["timestamp"])
    per_us = (int(last["value"]) - int(first["value"])) / span if span > 0 else 0.0
    return int(first["value"]) + int(per_us * max(0, elapsed_us))


def open_simulated(data: Mapping[str, Any]) -> SimulatedNvml:
    """An adapter answering from ``host.libraries.nvml`` fixture data (after an ``nvmlInit``)."""
    if not isinstance(data, Mapping):
        raise LibraryUnavailable("nvml: simulated data must be a mapping (see rayaccel_nvidia.nvml)")
    return SimulatedNvml(data)


#: Calls both adapters answer (what the simulation models); tests check each against pynvml's signature.
SIMULATED_CALLS: tuple[str, ...] = tuple(
    name for name, value in vars(SimulatedNvml).items() if name.startswith("nvml") and callable(value)
)


#: What this plugin hands to ``host.library(...)``: the real NVML on a node, the fixture's ``libraries.nvml`` data
#: on a simulated host.
NVML = LibraryAdapter("nvml", open_real, open_simulated)
