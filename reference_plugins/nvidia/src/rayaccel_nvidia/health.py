"""Device health from NVIDIA's own signals: XID events, volatile ECC counters, row remapping, GPU lost.

XIDs arrive through NVML's event-set API. An event of one MIG instance carries its GPU instance id
(``gpuInstanceId``; 0xFFFFFFFF for the whole GPU): it makes that instance's partition unhealthy, not the
GPU. The set is created once per NVML session and drained without
waiting on every health check, and XIDs seen are remembered for the session: a GPU that fell off the bus
(XID 79) stays unhealthy until the driver is reloaded, which also starts a new session.

XID meanings follow NVIDIA's XID catalog and GPU memory error management guide. Application errors
(13, 31, 43, 45, 68, 109: the list NVIDIA's Kubernetes device plugin also skips) say nothing about the
device and are ignored. Every other XID makes that plugin mark the GPU unhealthy; an operator who knows better
for their fleet says so in a health policy (``ignore`` or ``degrade`` a reason code), not by forking this table.
"""

from __future__ import annotations

import weakref
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from rayaccel import HEALTH_ORDER, Device, HealthReason, HealthReport, Partition, report_problem
from rayaccel_nvidia.discovery import UNREADABLE, unusable_answer

#: ``nvmlEventData_t.gpuInstanceId`` of an event that concerns the whole GPU, not one MIG instance.
NO_INSTANCE = 0xFFFFFFFF

#: XIDs caused by the application, not the GPU.
APPLICATION_XIDS = frozenset({13, 31, 43, 45, 68, 109})


@dataclass(frozen=True)
class XidMeaning:
    state: str
    fatal: bool
    message: str


#: XID -> what it means for the device. ``fatal``: drain it (it needs a reset, or NVIDIA's device plugin takes
#: it out of service); an operator's health policy may say otherwise.
XIDS: dict[int, XidMeaning] = {
    48: XidMeaning("unhealthy", False, "double-bit (uncorrectable) ECC error"),
    63: XidMeaning("degraded", False, "ECC page retirement or row remapping recorded; takes effect after a GPU reset"),
    64: XidMeaning("unhealthy", False, "ECC page retirement or row remapping failed"),
    74: XidMeaning("unhealthy", True, "NVLink error; the GPU needs a reset"),
    79: XidMeaning("unhealthy", True, "GPU has fallen off the bus"),
    92: XidMeaning("degraded", False, "high single-bit ECC error rate"),
    94: XidMeaning("unhealthy", True, "contained ECC error: the affected application was stopped; NVIDIA's "
                   "device plugin marks the GPU unhealthy (a health policy can ignore or degrade xid-94 where "
                   "such errors are known to stay contained)"),
    95: XidMeaning("unhealthy", True, "uncontained ECC error; the GPU needs a reset"),
    119: XidMeaning("unhealthy", True, "GSP RPC timeout; the GPU needs a reset"),
    120: XidMeaning("unhealthy", True, "GSP error; the GPU needs a reset"),
}


#: Every reason code the plugin reports: (code, state, fatal, meaning). XIDs beyond XIDS are ``xid-*``.
REASONS: tuple[tuple[str, str, bool, str], ...] = (
    *((f"xid-{xid}", meaning.state, meaning.fatal, f"XID {xid}: {meaning.message}") for xid, meaning in XIDS.items()),
    ("xid-*", "degraded", False, "another XID (not an application error): see NVIDIA's XID catalog"),
    ("ecc-uncorrectable", "unhealthy", False, "uncorrectable (volatile) ECC errors since the driver loaded"),
    ("row-remap-failure", "unhealthy", False, "row remapping failed: no spare memory rows left (RMA criterion)"),
    ("row-remap-pending", "degraded", False, "a row remapping is pending; it takes effect after a GPU reset"),
    ("gpu-lost", "unhealthy", True, "NVML says the GPU is lost (fell off the bus)"),
    ("nvml-error", "unhealthy", False, "NVML cannot open the GPU's handle"),
    ("nvml-garbage", "unhealthy", False, "NVML returned a malformed name or UUID for the GPU"),
    ("nvml-malformed-answer", "unknown", False, "the GPU's health counters make no sense: its health is unknown"),
    ("nvml-unavailable", "unknown", False, "NVML is no longer available: nothing is known"),
    ("nvml-timeout", "unknown", False, "NVML hung (a wedged driver): nothing is known, the GPU stays scheduled"),
)



def xid_reason(xid: int) -> HealthReason | None:
    """The health reason an XID gives, or None for application errors."""
    if xid in APPLICATION_XIDS:
        return None
    meaning = XIDS.get(xid)
    if meaning is None:
        return HealthReason(code=f"xid-{xid}", message=f"XID {xid} reported (see NVIDIA's XID catalog)")
    return HealthReason(code=f"xid-{xid}", message=f"XID {xid}: {meaning.message}", fatal=meaning.fatal)


def xid_state(xid: int) -> str:
    if xid in APPLICATION_XIDS:
        return "healthy"
    meaning = XIDS.get(xid)
    return meaning.state if meaning else "degraded"


@dataclass
class XidMonitor:
    """One NVML session's event set and the XIDs it has delivered, by device index."""

    event_set: Any = None
    registered: set[int] = field(default_factory=set)
    seen: dict[int, list[int]] = field(default_factory=dict)
    #: (device index, GPU instance id) -> XIDs of that MIG instance.
    seen_instances: dict[tuple[int, int], list[int]] = field(default_factory=dict)


_MONITORS: weakref.WeakKeyDictionary[Any, XidMonitor] = weakref.WeakKeyDictionary()


def drain_xids(nvml: Any, handles: dict[int, Any]) -> XidMonitor:
    """Register for XID events on every GPU not yet registered, then collect what is pending."""
    monitor = _MONITORS.setdefault(nvml, XidMonitor())
    try:
        if monitor.event_set is None:
            monitor.event_set = nvml.nvmlEventSetCreate()
        for index, handle in handles.items():
            if index in monitor.registered:
                continue
            try:
                nvml.nvmlDeviceRegisterEvents(handle, nvml.nvmlEventTypeXidCriticalError, monitor.event_set)
                monitor.registered.add(index)
            except nvml.NVMLError:
                continue  # NOT_SUPPORTED on some GPUs; the other signals still apply
        while monitor.registered:
            try:
                event = nvml.nvmlEventSetWait_v2(monitor.event_set, 0)
            except nvml.NVMLError:
                break  # NVML_ERROR_TIMEOUT: nothing pending
            if int(event.eventType) & nvml.nvmlEventTypeXidCriticalError:
                index = int(nvml.nvmlDeviceGetIndex(event.device))
                instance = int(getattr(event, "gpuInstanceId", NO_INSTANCE))
                if instance == NO_INSTANCE:
                    monitor.seen.setdefault(index, []).append(int(event.eventData))
                else:
                    monitor.seen_instances.setdefault((index, instance), []).append(int(event.eventData))
    except (nvml.NVMLError, AttributeError):
        pass  # no event API on this driver or in this nvidia-ml-py
    return monitor


def _counter(nvml: Any, fn: str, *args: Any) -> Any:
    try:
        return getattr(nvml, fn)(*args)
    except nvml.NVMLError as e:
        if e.value == nvml.NVML_ERROR_GPU_IS_LOST:
            raise
        return None
    except Exception as e:  # a malformed answer: this counter is unknown, the others still count
        report_problem("nvml-malformed-answer", f"{fn}: NVML {unusable_answer(e)}; the counter is ignored",
                       fix="update the NVIDIA driver and nvidia-ml-py to matching versions")
        return None


def device_reasons(nvml: Any, handle: Any) -> list[HealthReason]:
    """ECC and row-remapping reasons of one readable GPU (raises NVMLError_GpuIsLost)."""
    reasons = []
    uncorrected = _counter(nvml, "nvmlDeviceGetTotalEccErrors", handle, nvml.NVML_MEMORY_ERROR_TYPE_UNCORRECTED,
                           nvml.NVML_VOLATILE_ECC)
    if uncorrected:
        reasons.append(HealthReason(code="ecc-uncorrectable",
                                    message=f"{int(uncorrected)} uncorrectable ECC errors since the driver loaded"))
    remap = _counter(nvml, "nvmlDeviceGetRemappedRows", handle)
    if remap is not None:
        _, _, pending, failure = (int(v) for v in remap)
        if failure:
            reasons.append(HealthReason(code="row-remap-failure",
                                        message="row remapping failed: no spare memory rows left (RMA criterion)"))
        elif pending:
            reasons.append(HealthReason(code="row-remap-pending",
                                        message="a row remapping is pending; it takes effect after a GPU reset"))
    return reasons


_STATE_OF_CODE = {"ecc-uncorrectable": "unhealthy", "row-remap-failure": "unhealthy", "row-remap-pending": "degraded",
                  "gpu-lost": "unhealthy", "nvml-garbage": "unhealthy", "nvml-error": "unhealthy"}


def report(device: Device | Partition, reasons: list[HealthReason], xids: Sequence[int]) -> HealthReport:
    states = ["healthy"] + [_STATE_OF_CODE.get(r.code, "degraded") for r in reasons]
    for xid in dict.fromkeys(xids):
        reason = xid_reason(xid)
        if reason is not None:
            reasons.append(reason)
            states.append(xid_state(xid))
    state = max(states, key=lambda s: HEALTH_ORDER[s])
    return HealthReport(device=device.id, state=state, reasons=reasons)


def health(nvml: Any, devices: Sequence[Device]) -> list[HealthReport]:
    readable = {d.index: d for d in devices if UNREADABLE not in d.attributes}
    handles: dict[int, Any] = {}
    broken: dict[int, tuple[str, str]] = {}  # index -> (code, message)
    for index in readable:
        try:
            handles[index] = nvml.nvmlDeviceGetHandleByIndex(index)
        except nvml.NVMLError as e:  # the GPU failed after discovery
            broken[index] = ("gpu-lost" if e.value == nvml.NVML_ERROR_GPU_IS_LOST else "nvml-error", str(e))
    for device in devices:
        why = device.attributes.get(UNREADABLE)
        if why is not None:
            broken[device.index] = (str(why), str(device.attributes.get("nvml_message") or why))
    xids = drain_xids(nvml, handles)
    reports = []
    for device in devices:
        if device.index in broken:
            code, message = broken[device.index]
            reports.append(HealthReport(device=device.id, state="unhealthy", reasons=[HealthReason(
                code=code, message=f"NVML cannot read this GPU: {message}", fatal=code == "gpu-lost")]))
            continue
        try:
            reasons = device_reasons(nvml, handles[device.index])
        except nvml.NVMLError as e:
            reasons = [HealthReason(code="gpu-lost", message=f"NVML: {e}", fatal=True)]
        except Exception as e:  # counters NVML answered but that make no sense: nothing is known
            report_problem("nvml-malformed-answer", f"GPU {device.index}: its health counters are unusable "
                           f"(NVML {unusable_answer(e)}); its health is unknown")
            reports.append(HealthReport(device=device.id, state="unknown", reasons=[HealthReason(
                code="nvml-malformed-answer", message=f"NVML {unusable_answer(e)}")]))
            continue
        reports.append(report(device, reasons, xids.seen.get(device.index, [])))
        for partition in device.partitions:  # a MIG instance's own XIDs (its GPU's are the GPU's report)
            instance = partition.attributes.get("gpu_instance_id")
            own = xids.seen_instances.get((device.index, int(instance)), []) if instance is not None else []
            if own:
                reports.append(report(partition, [], own))
    return reports
