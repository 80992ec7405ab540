"""The NVML adapter: the simulated one answers like pynvml (names, signatures, return shapes, errors)."""

from __future__ import annotations

import ctypes
import inspect
import sys
import time
import uuid

import pynvml
import pytest

from rayaccel import LibraryUnavailable, RealHost
from rayaccel_nvidia import nvml as adapter

GPU = {
    "name": "NVIDIA H100 80GB HBM3", "uuid": "GPU-8f47ace1-99a7-58d0-9b68-36d06bed0644",
    "pci": {"busId": "00000000:1B:00.0", "pciDeviceId": 0x233010DE, "bus": 0x1B},
    "memory": {"total": 81559 * 2**20, "used": 2**29},
    "mig_mode": [0, 0], "compute_capability": [9, 0],
    "nvlink": {"0": {"state": 1, "version": 4, "remote_type": 2, "remote_pci": {"busId": "00000000:05:00.0"}}},
    "fabric": {"clusterUuid": "5f2c1a9e-7d3b-4e8a-9c61-0b7d2e4f8a13", "cliqueId": 7, "state": 3, "status": 0},
    "ecc": {"volatile": {"corrected": 4, "uncorrected": 1}},
    "cpu_affinity": [0xFF],
}


def sim(**extra: object) -> adapter.SimulatedNvml:
    return adapter.open_simulated({"driver_version": "550.54.15", "cuda_driver_version": 12040,
                                   "devices": {"0": dict(GPU), "1": {**GPU, "lost": True}}, **extra})


def test_constants_are_nvml_abi_values_as_pynvml_defines_them() -> None:
    for name, value in adapter.CONSTANTS.items():
        assert getattr(pynvml, name) == value, name


def test_every_simulated_call_exists_in_pynvml_with_the_same_parameters() -> None:
    assert len(adapter.SIMULATED_CALLS) > 30
    for name in adapter.SIMULATED_CALLS:
        real = getattr(pynvml, name)
        fake = getattr(adapter.SimulatedNvml, name)
        real_params = list(inspect.signature(real).parameters)
        fake_params = list(inspect.signature(fake).parameters)[1:]  # drop self
        assert fake_params == real_params, f"{name}: {fake_params} != pynvml's {real_params}"


def test_answers_have_pynvml_shapes_and_units() -> None:
    nvml = sim()
    assert nvml.nvmlDeviceGetCount() == 2
    handle = nvml.nvmlDeviceGetHandleByIndex(0)
    assert nvml.nvmlDeviceGetName(handle) == "NVIDIA H100 80GB HBM3"
    pci = nvml.nvmlDeviceGetPciInfo_v3(handle)
    assert (pci.busId, pci.busIdLegacy, pci.pciDeviceId >> 16) == ("00000000:1B:00.0", "0000:1B:00.0", 0x2330)
    memory = nvml.nvmlDeviceGetMemoryInfo(handle)
    assert memory.total - memory.used == memory.free
    assert nvml.nvmlDeviceGetCudaComputeCapability(handle) == (9, 0)
    assert nvml.nvmlDeviceGetMigMode(handle) == [0, 0]
    assert nvml.nvmlSystemGetCudaDriverVersion() == 12040
    affinity = nvml.nvmlDeviceGetCpuAffinity(handle, 4)  # pynvml: a ctypes array of c_ulonglong, not a list
    assert isinstance(affinity, ctypes.Array) and affinity._type_ is ctypes.c_ulonglong
    assert list(affinity) == [0xFF, 0, 0, 0]
    # As a real H200 answered (tests/real/h200-vm.yaml): nvmlMemory_t without a version, v2 with one.
    assert set(vars(memory)) == {f[0] for f in pynvml.c_nvmlMemory_t._fields_}
    assert set(vars(nvml.nvmlDeviceGetMemoryInfo(handle, pynvml.nvmlMemory_v2))) == {
        f[0] for f in pynvml.c_nvmlMemory_v2_t._fields_}
    (value,) = nvml.nvmlDeviceGetFieldValues(handle, [(pynvml.NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX, 0)])
    assert set(vars(value)) == {f[0] for f in pynvml.c_nvmlFieldValue_t._fields_}
    assert isinstance(value.value, pynvml.c_nvmlValue_t) and value.nvmlReturn == pynvml.NVML_ERROR_NOT_SUPPORTED
    assert nvml.nvmlDeviceGetTotalEccErrors(handle, nvml.NVML_MEMORY_ERROR_TYPE_UNCORRECTED,
                                            nvml.NVML_VOLATILE_ECC) == 1


def test_errors_are_pynvml_exception_classes_with_real_codes() -> None:
    nvml = sim()
    with pytest.raises(pynvml.NVMLError_GpuIsLost) as lost:
        nvml.nvmlDeviceGetHandleByIndex(1)
    assert lost.value.value == pynvml.NVML_ERROR_GPU_IS_LOST
    handle = nvml.nvmlDeviceGetHandleByIndex(0)
    with pytest.raises(pynvml.NVMLError_NotSupported):
        nvml.nvmlDeviceGetPowerUsage(handle)  # not in the data: this GPU does not support it
    with pytest.raises(pynvml.NVMLError_InvalidArgument):
        nvml.nvmlDeviceGetNvLinkState(handle, 1)  # past the last link
    with pytest.raises(pynvml.NVMLError_FunctionNotFound):
        nvml.nvmlDeviceGetEncoderUtilization(handle)  # a real call the simulation does not model


def test_an_injected_error_fails_exactly_that_call() -> None:
    broken = {**GPU, "errors": {"nvmlDeviceGetMemoryInfo": "NVML_ERROR_UNKNOWN"}}
    nvml = adapter.open_simulated({"devices": {"0": broken}})
    handle = nvml.nvmlDeviceGetHandleByIndex(0)
    with pytest.raises(pynvml.NVMLError_Unknown):
        nvml.nvmlDeviceGetMemoryInfo(handle)
    assert nvml.nvmlDeviceGetName(handle).startswith("NVIDIA")


def test_fabric_info_fills_the_callers_structure_through_byref() -> None:
    nvml = sim()
    info = nvml.c_nvmlGpuFabricInfoV_t()
    assert nvml.nvmlDeviceGetGpuFabricInfoV(nvml.nvmlDeviceGetHandleByIndex(0), ctypes.byref(info)) == 0
    assert str(uuid.UUID(bytes=bytes(info.clusterUuid))) == GPU["fabric"]["clusterUuid"]  # type: ignore[index]
    assert (info.cliqueId, info.state) == (7, pynvml.NVML_GPU_FABRIC_STATE_COMPLETED)


def test_xid_events_are_delivered_once_to_registered_devices_then_timeout() -> None:
    nvml = sim(events={"0": {"device": 0, "xid": 79}})
    events = nvml.nvmlEventSetCreate()
    with pytest.raises(pynvml.NVMLError_Timeout):
        nvml.nvmlEventSetWait_v2(events, 0)  # nothing registered yet
    nvml.nvmlDeviceRegisterEvents(nvml.nvmlDeviceGetHandleByIndex(0), nvml.nvmlEventTypeXidCriticalError, events)
    event = nvml.nvmlEventSetWait_v2(events, 0)
    assert (event.eventData, nvml.nvmlDeviceGetIndex(event.device)) == (79, 0)
    with pytest.raises(pynvml.NVMLError_Timeout):
        nvml.nvmlEventSetWait_v2(events, 0)


def test_mig_slots_without_an_instance_answer_not_found() -> None:
    mig = {"uuid": "MIG-f43ffc05-ebc9-56b4-a25e-3aaa3aeb48d8", "name": "NVIDIA A100-SXM4-40GB MIG 1g.5gb",
           "memory": {"total": 4864 * 2**20}, "gpu_instance_id": 9, "compute_instance_id": 0}
    nvml = adapter.open_simulated({"devices": {"0": {**GPU, "mig_mode": [1, 1], "mig_devices": {"2": mig}}}})
    gpu = nvml.nvmlDeviceGetHandleByIndex(0)
    with pytest.raises(pynvml.NVMLError_NotFound):
        nvml.nvmlDeviceGetMigDeviceHandleByIndex(gpu, 0)
    handle = nvml.nvmlDeviceGetMigDeviceHandleByIndex(gpu, 2)
    assert nvml.nvmlDeviceGetUUID(handle).startswith("MIG-")
    assert nvml.nvmlDeviceGetGpuInstanceId(handle) == 9


def test_init_failure_is_library_unavailable() -> None:
    with pytest.raises(LibraryUnavailable, match="Driver Not Loaded"):
        adapter.open_simulated({"init_error": "NVML_ERROR_DRIVER_NOT_LOADED"})


def test_a_hung_driver_blocks_the_call() -> None:
    start = time.monotonic()
    nvml = adapter.open_simulated({"hang": True, "hang_seconds": 0.2, "devices": {}})
    assert nvml.nvmlDeviceGetCount() == 0
    assert time.monotonic() - start >= 0.4  # nvmlInit and the call each blocked


def test_real_adapter_on_a_machine_without_a_driver_is_unavailable() -> None:
    try:
        real = RealHost().library(adapter.NVML)
    except LibraryUnavailable as e:
        assert "nvml" in str(e)
    else:  # a real NVIDIA machine: the adapter is pynvml itself
        assert real.nvmlDeviceGetCount() >= 0


def test_without_pynvml_the_simulated_adapter_still_raises_nvml_shaped_errors(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pynvml", None)  # import pynvml -> ImportError
    nvml = sim()
    with pytest.raises(nvml.NVMLError) as lost:
        nvml.nvmlDeviceGetHandleByIndex(1)
    assert lost.value.value == adapter.CONSTANTS["NVML_ERROR_GPU_IS_LOST"]
    assert not isinstance(lost.value, pynvml.NVMLError)
    info = nvml.c_nvmlGpuFabricInfoV_t()
    nvml.nvmlDeviceGetGpuFabricInfoV(nvml.nvmlDeviceGetHandleByIndex(0), ctypes.byref(info))
    assert info.cliqueId == 7
    (value,) = nvml.nvmlDeviceGetFieldValues(nvml.nvmlDeviceGetHandleByIndex(0), [138])
    assert [f[0] for f in type(value.value)._fields_] == [f[0] for f in pynvml.c_nvmlValue_t._fields_]
    with pytest.raises(LibraryUnavailable, match="pynvml"):
        adapter.open_real()


def test_every_nvml_name_the_plugin_uses_exists_in_pynvml_and_in_the_simulation() -> None:
    # The plugin runs against pynvml itself on a real node: a misspelt or simulation-only name would
    # pass every simulated test and fail on hardware.
    import re
    from pathlib import Path

    import rayaccel_nvidia

    used: set[str] = set()
    for source in Path(rayaccel_nvidia.__file__).parent.glob("*.py"):
        if source == Path(adapter.__file__):
            continue  # the adapter itself (its text names nvml.h and pynvml's own attributes), not a use of it
        used |= set(re.findall(r"\bnvml\.(\w+)", source.read_text()))
        used |= set(re.findall(r"optional\(nvml, \"(\w+)\"", source.read_text()))
        used |= set(re.findall(r"_(?:query|counter)\(nvml, \"(\w+)\"", source.read_text()))
    assert {"nvmlDeviceGetHandleByIndex", "nvmlDeviceGetGpuFabricInfoV", "nvmlEventSetWait_v2"} <= used
    simulated = sim()
    for name in sorted(used):
        assert hasattr(pynvml, name), f"pynvml has no {name}"
        if callable(getattr(pynvml, name)) and name.startswith("nvml"):
            assert name in adapter.SIMULATED_CALLS, f"the simulated adapter does not model {name}"
        else:
            assert getattr(simulated, name) is not None
