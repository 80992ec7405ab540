"""The device files a job on one MIG instance needs, for schedulers that hand out files (Slurm's gres.conf).

A process on a MIG instance opens its GPU's ``/dev/nvidia<N>`` and the two capability files that guard the
instance: ``/dev/nvidia-caps/nvidia-cap<M>`` of its GPU instance and of its compute instance. The driver
lists every capability's minor ``M`` in ``/proc/driver/nvidia-caps/mig-minors``, one ``<name> <minor>`` a
line (``gpu<G>/gi<I>/access 12``, ``gpu<G>/gi<I>/ci<C>/access 13``), ``G`` being the GPU's device minor
(``nvmlDeviceGetMinorNumber``, the ``N`` of ``/dev/nvidia<N>``), not its NVML index. Slurm's NVML
autodetection builds a MIG GRES's files the same way (the GPU's file, then the GI and CI access files), as
NVIDIA's MIG user guide ('Device Nodes and Capabilities') describes.

The file is read through the host; where it is absent (no MIG-capable driver, a container without the
driver's /proc) or the GPU's minor is unknown, the instances carry no files, as before: a scheduler then
counts them without naming files.
"""

from __future__ import annotations

from typing import Any

from rayaccel import DEVICE_FILE, Device, Host, HostError, report_problem, shown
from rayaccel_nvidia.discovery import optional

MIG_MINORS = "/proc/driver/nvidia-caps/mig-minors"
CAPS_DIR = "/dev/nvidia-caps"


def parse_mig_minors(text: str) -> dict[str, int]:
    """``capability name -> minor`` of the file's ``<name> <minor>`` lines; other lines are skipped (as
    nvidia-container-toolkit's nvcaps parser skips them)."""
    minors: dict[str, int] = {}
    for line in text.splitlines():
        fields = line.split()
        if len(fields) == 2 and fields[1].isdigit():
            minors[fields[0]] = int(fields[1])
    return minors


def instance_files(minors: dict[str, int], gpu_minor: int, gpu_instance: int, compute_instance: int) -> str | None:
    """The comma-separated files of one MIG instance, or None when the file lists either capability not."""
    gi = minors.get(f"gpu{gpu_minor}/gi{gpu_instance}/access")
    ci = minors.get(f"gpu{gpu_minor}/gi{gpu_instance}/ci{compute_instance}/access")
    if gi is None or ci is None:
        return None
    return f"/dev/nvidia{gpu_minor},{CAPS_DIR}/nvidia-cap{gi},{CAPS_DIR}/nvidia-cap{ci}"


def read_mig_minors(host: Host) -> dict[str, int]:
    """The driver's capability minors; empty when the file cannot be read."""
    try:
        return parse_mig_minors(host.read_text(MIG_MINORS))
    except (OSError, HostError):
        return {}


def gpu_minor(nvml: Any, index: int) -> int | None:
    """The device minor of the GPU at NVML ``index`` (None when NVML cannot tell)."""
    try:
        handle = nvml.nvmlDeviceGetHandleByIndex(index)
    except nvml.NVMLError:
        return None
    minor = optional(nvml, "nvmlDeviceGetMinorNumber", handle)
    return int(minor) if isinstance(minor, int) and minor >= 0 else None


def with_device_files(host: Host, nvml: Any, devices: list[Device]) -> list[Device]:
    """``devices`` with each MIG instance's ``device_file`` attribute set from mig-minors, where it can be."""
    if not any(p.kind == "mig" for d in devices for p in d.partitions):
        return devices
    minors = read_mig_minors(host)
    if not minors:
        return devices
    out = []
    for device in devices:
        minor = gpu_minor(nvml, device.index) if device.partitions else None
        if minor is None:
            out.append(device)
            continue
        partitions = []
        for partition in device.partitions:
            gi, ci = partition.attributes.get("gpu_instance_id"), partition.attributes.get("compute_instance_id")
            files = (instance_files(minors, minor, gi, ci) if partition.kind == "mig" and isinstance(gi, int)
                     and isinstance(ci, int) else None)
            if files is None:
                if partition.kind == "mig":
                    report_problem("mig-caps-unlisted", f"GPU {device.index}: {MIG_MINORS} lists no access files "
                                   f"for MIG instance {shown(partition.id)} (gpu{minor}/gi{gi}/ci{ci}); a "
                                   "scheduler counts it without device files", severity="warning",
                                   fix="check 'nvidia-smi mig -lci' and the driver's /proc/driver/nvidia-caps")
                partitions.append(partition)
                continue
            partitions.append(partition.model_copy(update={"attributes": {**partition.attributes,
                                                                          DEVICE_FILE: files}}))
        out.append(device.model_copy(update={"partitions": partitions}))
    return out
