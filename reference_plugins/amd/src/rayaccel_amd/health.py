"""Health from AMD's own signals: RAS ECC counters and amdsmi status codes.

- uncorrectable ECC errors (``amdsmi_get_gpu_total_ecc_count`` / ``amd-smi metric`` ``ecc``) -> unhealthy,
  fatal: the HBM page is poisoned and the driver needs a reset to retire it;
- a health query failing with an I/O, DRM or not-found status -> unhealthy, fatal: the GPU stopped answering;
- deferred errors -> degraded; correctable errors, and RAS disabled for the memory controller (UMC), ->
  healthy, reported as a reason;
- ``amd-smi metric`` failing -> unknown (still scheduled): nothing says the GPU is bad, nothing says it is good;
- a GPU that fell off the bus is no longer enumerated, so discovery no longer lists it.

A partitioned GPU's state is its primary partition's (ECC, RAS and a lost GPU are the package's, and amdsmi
answers device queries on the primary partition only): unhealthy, it drains every partition. A secondary
partition that stops answering on its own is reported under its id, so only it is drained.
"""

from __future__ import annotations

from collections.abc import Sequence

from rayaccel import Device, HealthReason, HealthReport
from rayaccel_amd.cli import METRIC_UNAVAILABLE
from rayaccel_amd.discovery import members
from rayaccel_amd.readings import GpuRecord, Snapshot

#: amdsmi statuses that mean the device itself stopped answering (not "unsupported" or "no permission").
LOST_STATUSES = {"AMDSMI_STATUS_IO", "AMDSMI_STATUS_DRM_ERROR", "AMDSMI_STATUS_NOT_FOUND",
                 "AMDSMI_STATUS_FILE_ERROR", "AMDSMI_STATUS_ADDRESS_FAULT", "AMDSMI_STATUS_API_FAILED"}


#: Every reason code the plugin reports: (code, state, fatal, meaning).
REASONS: tuple[tuple[str, str, bool, str], ...] = (
    *((f"amdsmi-{status.removeprefix('AMDSMI_STATUS_').lower().replace('_', '-')}", "unhealthy", True,
       f"a health query fails with {status}: the GPU stopped answering") for status in sorted(LOST_STATUSES)),
    ("health-unavailable", "unknown", False, "`amd-smi metric --json` failed: ECC counters could not be read"),
    ("ecc-uncorrectable", "unhealthy", True, "uncorrectable ECC errors: the HBM page is poisoned, a reset retires it"),
    ("ecc-deferred", "degraded", False, "deferred ECC errors"),
    ("ras-umc-disabled", "healthy", False, "RAS for the memory controller is off: HBM ECC errors go unseen"),
    ("ecc-correctable", "healthy", False, "correctable ECC errors (counted, still healthy)"),
    ("gpu-lost", "unhealthy", True, "the GPU is no longer enumerated: it fell off the bus or its driver unbound it"),
)



def report_for(gpu: GpuRecord) -> HealthReport:
    reasons: list[HealthReason] = []
    state = "healthy"
    lost = sorted({status for status in gpu.errors.values() if status in LOST_STATUSES})
    if lost:
        state = "unhealthy"
        queries = ", ".join(sorted(q for q, s in gpu.errors.items() if s in LOST_STATUSES))
        reasons.append(HealthReason(code="amdsmi-" + lost[0].removeprefix("AMDSMI_STATUS_").lower().replace("_", "-"),
                                    message=f"GPU {gpu.index} does not answer amdsmi ({queries}: {', '.join(lost)})",
                                    fatal=True))
    if gpu.errors.get("metric") == METRIC_UNAVAILABLE and state == "healthy":
        state = "unknown"
        reasons.append(HealthReason(code="health-unavailable",
                                    message="`amd-smi metric --json` failed: ECC counters could not be read"))
    # A count left out is no evidence either way (ECC not supported prints N/A), as a section left out is.
    if gpu.ecc is not None and (gpu.ecc.uncorrectable or 0) > 0:
        state = "unhealthy"
        reasons.append(HealthReason(code="ecc-uncorrectable",
                                    message=f"{gpu.ecc.uncorrectable} uncorrectable ECC errors", fatal=True))
    if gpu.ecc is not None and (gpu.ecc.deferred or 0) > 0:
        state = "degraded" if state == "healthy" else state
        reasons.append(HealthReason(code="ecc-deferred", message=f"{gpu.ecc.deferred} deferred ECC errors"))
    umc = gpu.ras_blocks.get("UMC")
    if umc is not None and umc != "ENABLED":
        # Not a fault of the GPU, but its HBM errors go unseen: say so, keep it schedulable.
        reasons.append(HealthReason(code="ras-umc-disabled",
                                    message=f"RAS for the memory controller (UMC) is {umc}: HBM ECC errors are not "
                                            "reported for this GPU"))
    if gpu.ecc is not None and (gpu.ecc.correctable or 0) > 0:
        reasons.append(HealthReason(code="ecc-correctable", message=f"{gpu.ecc.correctable} correctable ECC errors"))
    return HealthReport(device=gpu.uuid, state=state, reasons=reasons)


def _lost(device: str, what: str) -> HealthReport:
    # A GPU discovery saw that is no longer enumerated fell off the bus (or its driver unbound it).
    return HealthReport(device=device, state="unhealthy", reasons=[HealthReason(
        code="gpu-lost", fatal=True, message=f"{what} is no longer enumerated: it fell off the bus or its driver "
        "unbound it")])


def health_of(snapshot: Snapshot | None, devices: Sequence[Device]) -> list[HealthReport]:
    if snapshot is None:
        return []
    reports = []
    for device in devices:
        gpus = members(device, snapshot)
        primary = gpus[0]
        if primary is None:
            reports.append(_lost(device.id, f"GPU {device.index} ({device.pci_bus_id or device.id})"))
            continue
        reports.append(report_for(primary).model_copy(update={"device": device.id}))
        for partition, gpu in list(zip(device.partitions, gpus, strict=False))[1:]:  # none on a whole GPU
            own = report_for(gpu) if gpu is not None else _lost(partition.id, f"partition {partition.id} of GPU "
                                                                             f"{device.index}")
            if own.state != "healthy":
                reports.append(own.model_copy(update={"device": partition.id}))
    return reports
