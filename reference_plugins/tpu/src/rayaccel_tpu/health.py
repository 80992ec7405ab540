"""Chip health from what the host shows without the TPU runtime: each chip's (and chiplet's) device node."""

from __future__ import annotations

from rayaccel import DEVICE_FILE, Device, HealthReason, HealthReport, Host

#: Every reason code the plugin reports: (code, state, fatal, meaning).
REASONS: tuple[tuple[str, str, bool, str], ...] = (
    ("tpu-chip-lost", "unhealthy", True, "every device node of the chip is gone: it fell off the bus"),
    ("tpu-chiplet-lost", "unhealthy", True, "one chiplet's device node is gone: half a chip is no chip"),
)



def health_of(host: Host, devices: list[Device]) -> list[HealthReport]:
    """Each chip healthy while all its chiplets' device nodes are there."""
    # Chip presence is the one health signal the host exposes without the TPU runtime (libtpu's own
    # health and metrics are a gRPC service inside the workload, not something a node agent can read).
    reports = []
    for device in devices:
        # Every chiplet's device node (two VFIO groups for a TPU7x chip), and how many a whole chip has.
        listed = device.attributes.get("chiplet_nodes") or device.attributes.get(DEVICE_FILE, "")
        nodes = [n for n in str(listed).split(",") if n]
        chiplets = device.attributes.get("chiplets")
        whole = chiplets if isinstance(chiplets, int) and not isinstance(chiplets, bool) else len(nodes)
        lost = [n for n in nodes if not host.exists(n)]
        if lost and len(lost) == len(nodes):
            reports.append(HealthReport(device=device.id, state="unhealthy", reasons=[HealthReason(
                code="tpu-chip-lost", fatal=True, message=f"chip {device.index} ({', '.join(nodes)}) is gone: "
                "the TPU fell off the bus or its driver unbound")]))
        elif lost or len(nodes) < whole:
            # Half a TPU7x chip is no chip the runtime can use: the whole chip is out.
            missing = ", ".join(lost) if lost else f"{whole - len(nodes)} of its {whole} PCI functions"
            reports.append(HealthReport(device=device.id, state="unhealthy", reasons=[HealthReason(
                code="tpu-chiplet-lost", fatal=True, message=f"chip {device.index} has lost a chiplet ({missing}): "
                "one of its PCI functions fell off the bus or its VFIO group is gone")]))
        else:
            reports.append(HealthReport(device=device.id, state="healthy"))
    return reports
