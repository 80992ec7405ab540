"""Health from the Neuron driver's sysfs: the device's node, and its ECC counters.

- the device's sysfs node gone -> unhealthy, fatal (``neuron-device-lost``);
- no uncorrected-ECC counter published -> unknown (``neuron-ecc-unreadable``): errors would go unseen;
- uncorrected ECC events in device memory (HBM) or on-chip SRAM -> unhealthy, fatal;
- repairable uncorrected HBM ECC events -> degraded (repaired at the next device reset).
"""

from __future__ import annotations

from collections.abc import Sequence

from rayaccel import Device, HealthReason, HealthReport, Host
from rayaccel_neuron import sysfs

#: Every reason code the plugin reports: (code, state, fatal, meaning).
REASONS: tuple[tuple[str, str, bool, str], ...] = (
    ("neuron-device-lost", "unhealthy", True, "the device is gone from the driver's sysfs"),
    ("neuron-ecc-unreadable", "unknown", False, "the driver publishes no uncorrected-ECC counters: errors go unseen"),
    ("neuron-hbm-ecc-uncorrected", "unhealthy", True, "unrepairable uncorrected ECC events in device memory (HBM)"),
    ("neuron-sram-ecc-uncorrected", "unhealthy", True, "uncorrected ECC events in on-chip SRAM"),
    ("neuron-hbm-ecc-repairable", "degraded", False, "repairable uncorrected HBM ECC events (repaired at reset)"),
)



def health_of(host: Host, devices: Sequence[Device]) -> list[HealthReport]:
    reports = []
    for device in devices:
        if not sysfs.device_present(host, device.index):
            reports.append(HealthReport(device=device.id, state="unhealthy", reasons=[HealthReason(
                code="neuron-device-lost", fatal=True,
                message=f"Neuron device {device.index} ({device.pci_bus_id}) is gone from the driver's sysfs")]))
            continue
        ecc = sysfs.ecc_counters(host, device.index)
        garbled = sysfs.garbled_ecc_counters(host, device.index, ecc)
        if garbled:
            # A published counter that reads as no number hides the errors it counts: not healthy, unknown.
            reports.append(HealthReport(device=device.id, state="unknown", reasons=[HealthReason(
                code="neuron-ecc-unreadable", message=f"the uncorrected-ECC counter {', '.join(garbled)} of Neuron "
                f"device {device.index} does not read as a number: ECC errors counted there cannot be seen")]))
            continue
        if not ecc.readable:
            # No ECC counter published: errors would go unseen, so the device is not called healthy.
            reports.append(HealthReport(device=device.id, state="unknown", reasons=[HealthReason(
                code="neuron-ecc-unreadable", message=f"the driver publishes no uncorrected-ECC counters for Neuron "
                f"device {device.index} ({sysfs.device_dir(device.index, host)}/stats/hardware): ECC errors cannot "
                "be seen")]))
            continue
        reasons = []
        if ecc.mem_uncorrected:
            reasons.append(HealthReason(code="neuron-hbm-ecc-uncorrected", fatal=True, message=(
                f"{ecc.mem_uncorrected} unrepairable uncorrected ECC events in device memory (HBM)")))
        if ecc.sram_uncorrected:
            reasons.append(HealthReason(code="neuron-sram-ecc-uncorrected", fatal=True, message=(
                f"{ecc.sram_uncorrected} uncorrected ECC events in on-chip SRAM")))
        if ecc.mem_repairable_uncorrected:
            reasons.append(HealthReason(code="neuron-hbm-ecc-repairable", message=(
                f"{ecc.mem_repairable_uncorrected} repairable uncorrected HBM ECC events: the rows are repaired "
                "at the next device reset")))
        state = ("unhealthy" if any(r.fatal for r in reasons) else "degraded") if reasons else "healthy"
        reports.append(HealthReport(device=device.id, state=state, reasons=reasons))
    return reports
