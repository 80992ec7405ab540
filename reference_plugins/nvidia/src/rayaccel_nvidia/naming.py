"""Ray's accelerator type for an NVIDIA product name, and the names NVML uses.

The type must be the string Ray 2.60's ``NvidiaGPUAcceleratorManager`` derives from the same NVML name,
or tasks written for Ray (``accelerator_type="H100"``) would not schedule on a node the plugin labels.
The differential test checks this function against Ray's own on every fixture and catalog name.
"""

from __future__ import annotations

import functools
import re

from rayaccel import cpus_from_mask_words, format_cpu_list

# Ray 2.60 nvidia_gpu.py: the run of leading all-caps tokens up to the first token holding a digit.
_RAY_NAME_PATTERN = re.compile(r"\w+\s+((?:[A-Z]+\s+)*[A-Z0-9]*\d[A-Z0-9]*)")

#: NVML architecture enum -> name used for the ``rayaccel.io/architecture`` label.
ARCHITECTURES: dict[int, str] = {5: "volta", 6: "turing", 7: "ampere", 8: "ada", 9: "hopper", 10: "blackwell"}

# When nvmlDeviceGetArchitecture is missing (old drivers), the compute capability identifies it.
_ARCH_BY_CC: dict[tuple[int, int], str] = {(7, 0): "volta", (7, 2): "volta", (7, 5): "turing", (8, 0): "ampere",
                                           (8, 6): "ampere", (8, 7): "ampere", (8, 9): "ada", (9, 0): "hopper",
                                           (10, 0): "blackwell", (10, 3): "blackwell", (12, 0): "blackwell"}


def accelerator_type(product_name: str) -> str | None:
    """'NVIDIA H100 80GB HBM3' -> 'H100'; 'NVIDIA GeForce RTX 5090' -> 'GeForce-RTX-5090' (Ray's rule)."""
    match = _RAY_NAME_PATTERN.match(product_name)
    result = match.group(1).replace(" ", "-") if match else None
    if result and len(result) > 1:
        return result
    cleaned = re.sub(r"^NVIDIA\s+", "", product_name).strip()
    return cleaned.replace(" ", "-") if cleaned else None


def architecture(arch_enum: int | None, compute_capability: tuple[int, int] | None) -> str | None:
    if arch_enum is not None and arch_enum in ARCHITECTURES:
        return ARCHITECTURES[arch_enum]
    if compute_capability is not None:
        return _ARCH_BY_CC.get(compute_capability)
    return None


def cuda_version(encoded: int) -> str | None:
    """nvmlSystemGetCudaDriverVersion's 12040 -> '12.4'."""
    if encoded <= 0:
        return None
    return f"{encoded // 1000}.{(encoded % 1000) // 10}"


def pci_device_id(pci_device_id_register: int) -> str:
    """NVML's pciDeviceId packs device id (upper 16 bits) and vendor id (lower): 0x233010DE -> '0x2330'."""
    return f"0x{(pci_device_id_register >> 16) & 0xFFFF:04x}"


def mig_profile(mig_name: str) -> str | None:
    """'NVIDIA A100-SXM4-40GB MIG 1g.5gb' -> '1g.5gb'; 'NVIDIA H200 MIG 1g.18gb+me' -> '1g.18gb.me'.

    NVIDIA joins a profile's options with '+' ('+me': media extensions), which is no valid Ray label value
    nor Kubernetes resource name; the profile names a Ray resource and label, so '+' becomes '.'."""
    match = re.search(r"MIG\s+(\S+)$", mig_name)
    return match.group(1).replace("+", ".") if match else None


#: A MIG profile name: ``<compute slices>g.<memory>gb`` for a GPU instance ('3g.40gb', '1g.18gb.me' for
#: NVIDIA's '1g.18gb+me'), or ``<c>c.<g>g.<memory>gb`` for one of several compute instances sharing it
#: (NVIDIA's MIG user guide).
MIG_PROFILE = re.compile(r"^(?:(?P<ci>\d+)c\.)?(?P<gi>\d+)g\.(?P<gb>\d+)gb(?:[.+][a-z]+)*$")


def mig_slices(profile: str, instance_mib: int | None, gpu_mib: int | None,
               capacity: tuple[int, int]) -> tuple[int | None, int | None]:
    """(compute slices, memory slices) of a MIG device. Compute slices are the profile's ``<N>g`` (``<N>c``
    for a compute instance); memory slices are its share of the GPU's memory in the GPU's memory slices
    (an A100 80GB has 8 of 10 GB: '3g.40gb' takes 4). A compute instance shares its GPU instance's memory,
    so it counts none of its own (None)."""
    match = MIG_PROFILE.match(profile)
    if match is None:
        return None, None
    if match["ci"] is not None:
        return int(match["ci"]), None
    memory = None
    if instance_mib and gpu_mib:
        memory = max(1, min(capacity[1], round(instance_mib * capacity[1] / gpu_mib)))
    return int(match["gi"]), memory


#: MIG GPUs holding fewer than 7 instances, by the name NVML gives them, and how many: NVIDIA's MIG user guide,
#: 'Supported GPUs' ('Max Number of Instances'); every other MIG GPU (A100, H100, H20, H200, B200, GB200) holds 7.
FEWER_MIG_INSTANCES = ((re.compile(r"\bA30\b"), 4), (re.compile(r"\bRTX PRO 6000\b"), 4),
                       (re.compile(r"\bRTX PRO (?:5000|4500)\b"), 2))


def mig_capacity(product_name: str, max_mig_devices: int | None = None) -> tuple[int, int]:
    """(compute, memory) slices of a MIG-capable GPU. Compute: as many as instances of its smallest profile fit,
    which a GPU in MIG mode states itself (``nvmlDeviceGetMaxMigDeviceCount``; 0 while MIG is off), else its
    product's row of NVIDIA's MIG user guide (:data:`FEWER_MIG_INSTANCES`, 7 for the rest). Memory: in eighths on a
    7-instance GPU (a 1g profile takes 1/8 of the memory, 7g all 8), in as many parts as instances otherwise (the
    A30's 1g.6gb takes 1/4, the RTX PRO 6000 Blackwell's 1g.24gb 1/4 of 96 GB)."""
    instances = max_mig_devices if max_mig_devices and max_mig_devices > 0 else next(
        (count for pattern, count in FEWER_MIG_INSTANCES if pattern.search(product_name)), 7)
    return instances, 8 if instances == 7 else instances


def cpu_list(words: list[int]) -> str:
    """nvmlDeviceGetCpuAffinity's 64-bit mask words -> '0-47,96-143'."""
    return _cpu_ranges(tuple(words))


@functools.lru_cache(maxsize=64)
def _cpu_ranges(words: tuple[int, ...]) -> str:
    # Cached: discovery asks for every GPU's mask at each health poll, and a node's masks do not change.
    return format_cpu_list(cpus_from_mask_words(words))
