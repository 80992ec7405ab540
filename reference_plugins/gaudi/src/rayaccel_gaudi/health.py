"""Health from Gaudi's own signals: the driver's device status, hl-smi's ECC counters and port states.

- driver status ``needs reset`` / ``disabled`` (sysfs) -> unhealthy, fatal;
- uncorrectable ECC errors since the driver loaded (``ecc.errors.uncorrected.volatile.total``) -> unhealthy,
  fatal. The lifetime counter (``...aggregate.total``) never resets, so one old error would drain a card
  forever: it is only noted (``ecc-uncorrectable-history``), as NVIDIA's health checks use the volatile one;
- every live field N/A (memory used, temperature, power, utilization) -> unhealthy, fatal: not responding;
- a transient driver status (``in reset``, ``in device creation``, ...) -> degraded;
- an internal (scale-up) port DOWN -> degraded: collectives across the box lose bandwidth.
A device that fell off the bus is no longer listed by hl-smi, so discovery no longer reports it.
"""

from __future__ import annotations

from collections.abc import Sequence

from rayaccel import Device, HealthReason, HealthReport
from rayaccel_gaudi.readings import GaudiDevice, Snapshot

FATAL_STATUSES = {"needs reset", "disabled", "malfunction"}
LIVE_FIELDS = 4


#: Every reason code the plugin reports: (code, state, fatal, meaning).
REASONS: tuple[tuple[str, str, bool, str], ...] = (
    *((f"driver-{status.replace(' ', '-')}", "unhealthy", True, f"the habanalabs driver reports the module {status!r}")
      for status in sorted(FATAL_STATUSES)),
    ("driver-not-operational", "degraded", False, "a transient driver status (in reset, in device creation, ...)"),
    ("ecc-uncorrectable", "unhealthy", True, "uncorrectable ECC errors since the driver loaded"),
    ("ecc-uncorrectable-history", "healthy", False, "uncorrectable ECC errors in the device's lifetime, none since "
     "the driver loaded"),
    ("device-not-responding", "unhealthy", True, "hl-smi reads N/A for every live field"),
    ("scale-up-port-down", "degraded", False, "an internal (scale-up) RoCE port is down: collectives lose bandwidth"),
    ("ecc-correctable", "healthy", False, "correctable ECC errors (counted, still healthy)"),
    ("device-lost", "unhealthy", True, "hl-smi no longer lists the module: it fell off the bus"),
)



def report_for(device: GaudiDevice) -> HealthReport:
    aip = device.aip
    fatal: list[HealthReason] = []
    minor: list[HealthReason] = []
    status = device.driver_status
    if status in FATAL_STATUSES:
        fatal.append(HealthReason(code="driver-" + status.replace(" ", "-"),
                                  message=f"the habanalabs driver reports module {aip.module_id} as {status!r}",
                                  fatal=True))
    elif status is not None and status != "operational":
        minor.append(HealthReason(code="driver-not-operational",
                                  message=f"the habanalabs driver reports module {aip.module_id} as {status!r}"))
    if aip.ecc_uncorrected:
        fatal.append(HealthReason(code="ecc-uncorrectable", fatal=True,
                                  message=f"{aip.ecc_uncorrected} uncorrectable ECC errors since the driver loaded"))
    elif aip.ecc_uncorrected_lifetime:
        minor.append(HealthReason(code="ecc-uncorrectable-history",
                                  message=f"{aip.ecc_uncorrected_lifetime} uncorrectable ECC errors over the device's "
                                          "lifetime, none since the driver loaded"))
    if len(aip.missing) == LIVE_FIELDS:
        fatal.append(HealthReason(code="device-not-responding",
                                  message=f"hl-smi reads N/A for every live field of module {aip.module_id}",
                                  fatal=True))
    down = device.ports("internal", "down")
    if down:
        minor.append(HealthReason(code="scale-up-port-down",
                                  message=f"internal RoCE ports {', '.join(map(str, down))} are DOWN"))
    if aip.ecc_corrected:
        minor.append(HealthReason(code="ecc-correctable", message=f"{aip.ecc_corrected} correctable ECC errors"))
    degraded = any(r.code in ("driver-not-operational", "scale-up-port-down") for r in minor)
    state = "unhealthy" if fatal else "degraded" if degraded else "healthy"
    return HealthReport(device=aip.uuid, state=state, reasons=fatal + minor)


def health_of(snapshot: Snapshot | None, devices: Sequence[Device]) -> list[HealthReport]:
    if snapshot is None or not snapshot.devices:
        # No readable row at all (hl-smi failed, or printed only garbage): the listing says nothing of any
        # module, so every module's health is unknown, not every module lost (the failure is discovery's problem).
        return []
    by_uuid = snapshot.by_uuid()
    # A device discovery saw that hl-smi no longer lists fell off the bus, or its driver gave it up.
    return [report_for(by_uuid[d.id]) if d.id in by_uuid else HealthReport(device=d.id, state="unhealthy", reasons=[
        HealthReason(code="device-lost", fatal=True, message=f"module {d.units[0] if d.units else d.index} "
                     f"({d.pci_bus_id}) is no longer listed by hl-smi")]) for d in devices]
