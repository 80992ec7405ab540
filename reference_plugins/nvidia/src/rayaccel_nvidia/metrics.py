"""Per-GPU metrics from NVML, in the SDK's standard units (NVML reports power in milliwatts).

NVLink throughput comes from NVML's cumulative counters (``NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX/RX``, KiB
since the driver loaded), so a rate needs two samples: the first call of an NVML session reports none.
"""

from __future__ import annotations

import weakref
from collections.abc import Sequence
from typing import Any

from rayaccel import Device, MetricSample, report_problem, vendor_float
from rayaccel_nvidia.discovery import UNREADABLE, unusable_answer


def _query(nvml: Any, fn: str, *args: Any) -> Any:
    try:
        return getattr(nvml, fn)(*args)
    except nvml.NVMLError:
        return None  # not supported on this GPU, or the GPU is gone: health reports that
    except Exception as e:  # a malformed answer: this reading is unknown, the others are still sampled
        report_problem("nvml-malformed-answer", f"{fn}: NVML {unusable_answer(e)}; the reading is skipped")
        return None


# NVML session -> device id -> (timestamp us, tx KiB, rx KiB) of the previous sample.
_PREVIOUS: weakref.WeakKeyDictionary[Any, dict[str, tuple[int, int, int]]] = weakref.WeakKeyDictionary()


def throughput(previous: tuple[int, int, int] | None, current: tuple[int, int, int]) -> tuple[float, float] | None:
    """(tx, rx) bytes per second between two counter samples; None without a usable earlier one."""
    if previous is None or current[0] <= previous[0] or current[1] < previous[1] or current[2] < previous[2]:
        return None  # first sample, clock step or counter reset (driver reload)
    seconds = (current[0] - previous[0]) / 1e6
    return (current[1] - previous[1]) * 1024 / seconds, (current[2] - previous[2]) * 1024 / seconds


def nvlink_counters(nvml: Any, handle: Any) -> tuple[int, int, int] | None:
    """(timestamp us, tx KiB, rx KiB) summed over the GPU's links, or None without NVLink counters.

    The throughput fields are per link: the link is the value's ``scopeId`` (a bare field id asks for
    link 0 only). One call asks for every link NVML may have; links the GPU lacks answer an error code
    in their own value and are left out of the sum.
    """
    tx, rx = nvml.NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX, nvml.NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX
    links = range(int(nvml.NVML_NVLINK_MAX_LINKS))
    values = _query(nvml, "nvmlDeviceGetFieldValues", handle, [(f, link) for f in (tx, rx) for link in links])
    if values is None:
        return None
    totals = {tx: 0, rx: 0}
    answered = {tx: 0, rx: 0}
    stamp = 0
    for value in values:
        if int(value.nvmlReturn) != nvml.NVML_SUCCESS or int(value.fieldId) not in totals:
            continue
        totals[int(value.fieldId)] += int(value.value.ullVal)
        answered[int(value.fieldId)] += 1
        stamp = max(stamp, int(value.timestamp))
    if not answered[tx] or not answered[rx]:
        return None  # no NVLink, or counters not supported
    return stamp, totals[tx], totals[rx]


def metrics(nvml: Any, devices: Sequence[Device]) -> list[MetricSample]:
    samples: list[MetricSample] = []
    previous = _PREVIOUS.setdefault(nvml, {})
    for device in devices:
        if UNREADABLE in device.attributes:
            continue
        handle = _query(nvml, "nvmlDeviceGetHandleByIndex", device.index)
        if handle is None:
            continue

        def add(name: str, unit: str, value: Any, device_id: str = device.id) -> None:
            if value is None:
                return
            number = vendor_float(value, name, where=f"GPU {device_id}", maximum=1e18)
            if number is not None:
                samples.append(MetricSample(device=device_id, name=name, unit=unit, value=number))

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
        counters = nvlink_counters(nvml, handle)
        if counters is not None:
            rate = throughput(previous.get(device.id), counters)
            previous[device.id] = counters
            if rate is not None:
                add("interconnect_tx", "bytes_per_second", rate[0])
                add("interconnect_rx", "bytes_per_second", rate[1])
    return samples
