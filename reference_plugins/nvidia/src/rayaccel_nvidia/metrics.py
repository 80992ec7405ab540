"""Per-GPU metrics from NVML, in the SDK's standard units (NVML reports power in milliwatts)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rayaccel import Device, MetricSample
from rayaccel_nvidia.discovery import UNREADABLE


def _query(nvml: Any, fn: str, *args: Any) -> Any:
    try:
        return getattr(nvml, fn)(*args)
    except nvml.NVMLError:
        return None  # not supported on this GPU, or the GPU is gone: health reports that


def metrics(nvml: Any, devices: Sequence[Device]) -> list[MetricSample]:
    samples: list[MetricSample] = []
    for device in devices:
        if UNREADABLE in device.attributes:
            continue
        handle = _query(nvml, "nvmlDeviceGetHandleByIndex", device.index)
        if handle is None:
            continue

        def add(name: str, unit: str, value: float | None, device_id: str = device.id) -> None:
            if value is not None:
                samples.append(MetricSample(device=device_id, name=name, unit=unit, value=float(value)))

        util = _query(nvml, "nvmlDeviceGetUtilizationRates", handle)
        add("utilization", "percent", util.gpu if util is not None else None)
        memory = _query(nvml, "nvmlDeviceGetMemoryInfo", handle)
        add("memory_used", "bytes", memory.used if memory is not None else None)
        add("memory_total", "bytes", memory.total if memory is not None else None)
        power = _query(nvml, "nvmlDeviceGetPowerUsage", handle)
        add("power", "watts", power / 1000.0 if power is not None else None)
        add("temperature", "celsius", _query(nvml, "nvmlDeviceGetTemperature", handle, nvml.NVML_TEMPERATURE_GPU))
        for name, kind in (("ecc_errors_corrected", nvml.NVML_MEMORY_ERROR_TYPE_CORRECTED),
                           ("ecc_errors_uncorrected", nvml.NVML_MEMORY_ERROR_TYPE_UNCORRECTED)):
            add(name, "count", _query(nvml, "nvmlDeviceGetTotalEccErrors", handle, kind, nvml.NVML_VOLATILE_ECC))
    return samples
