"""Devices from NVML: identity, memory, PCI, NUMA/CPU affinity, compute capability, versions, MIG.

Functions take an NVML adapter (``host.library(NVML)``: pynvml itself, or the simulated adapter with
the same calls), so the same code runs on a node and in tests.

A GPU NVML cannot identify (``NVML_ERROR_GPU_IS_LOST`` when getting its handle, or a UUID that is not
a GPU UUID) is still reported, under the id ``nvml-index-<N>``, so health can mark it unhealthy and the
node is drained: silently dropping it would hide a dead GPU that Ray itself still counts.
"""

from __future__ import annotations

import re
from typing import Any

from rayaccel import (
    ID_FALLBACK,
    CpuListError,
    Device,
    Host,
    Partition,
    PartitionCapacity,
    collect_problems,
    malformed,
    report_problem,
    shown,
    vendor_int,
)
from rayaccel_nvidia.naming import (
    MIG_PROFILE,
    architecture,
    cpu_list,
    cuda_version,
    mig_capacity,
    mig_profile,
    mig_slices,
    pci_device_id,
)

#: NVML's GPU UUID: "GPU-" + 8-4-4-4-12 hex (nvmlDeviceGetUUID).
GPU_UUID = re.compile(r"^GPU-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
MIG_UUID = re.compile(r"^MIG-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")

#: Attribute holding why a device could not be read (health turns it into a reason).
UNREADABLE = "nvml_unreadable"

#: More GPUs than any host carries (NVML enumerates a node's GPUs; the largest boards have 16): a count above
#: it is a broken driver answer, reported, and no GPU is probed rather than billions.
MAX_GPUS = 256

# 64-bit words requested from nvmlDeviceGetCpuAffinity: 2048 CPUs, beyond any current host.
CPU_SET_WORDS = 32


def placeholder_id(index: int) -> str:
    return f"nvml-index-{index}"


#: The device fields an NVML query answers, for problem messages.
FIELDS = {"nvmlDeviceGetMemoryInfo": "memory.total", "nvmlDeviceGetPciInfo_v3": "pci", "nvmlDeviceGetNumaNodeId":
          "numa_node", "nvmlDeviceGetCudaComputeCapability": "compute_capability", "nvmlDeviceGetArchitecture":
          "architecture", "nvmlDeviceGetCpuAffinity": "cpu_affinity", "nvmlDeviceGetMigMode": "mig_mode"}


#: How Python words a value that is no number (int(), float()): the value follows the colon.
_NOT_A_NUMBER = re.compile(r"^(?:invalid literal for \w+\(\)(?: with base \d+)?|could not convert string to "
                           r"float): (.+)$", re.S)


def unusable_answer(error: Exception) -> str:
    """What was wrong with an answer the binding choked on, said for an operator (the value, when one can be
    named), never the binding's or Python's own wording of the exception."""
    number = _NOT_A_NUMBER.match(str(error))
    if number is not None:
        value = number.group(1)  # Python's repr of the value: quoted, control characters escaped
        return f"answered {value if len(value) <= 80 else value[:80] + '...'}, which is not a number"
    if isinstance(error, UnicodeError):
        return "answered bytes that are not text"
    if isinstance(error, (TypeError, AttributeError)):
        return "answered a value of a type it never answers"
    return f"answered something unusable ({type(error).__name__})"


def optional(nvml: Any, fn: str, *args: Any) -> Any:
    """The answer of an NVML query, or None when this GPU, driver or pynvml version does not support it."""
    try:
        call = getattr(nvml, fn)
    except AttributeError:
        return None  # an older nvidia-ml-py without this binding
    try:
        return call(*args)
    except nvml.NVMLError as e:
        if e.value == nvml.NVML_ERROR_GPU_IS_LOST:
            raise
        return None
    except Exception as e:  # the binding choked on what the driver answered: that value is unknown, not fatal
        what = f"{fn} ({FIELDS[fn]})" if fn in FIELDS else fn
        report_problem("nvml-malformed-answer", f"{what}: NVML {unusable_answer(e)}; the value is left unknown",
                       fix="update the NVIDIA driver and nvidia-ml-py to matching versions")
        return None


def _printable(text: str) -> bool:
    return bool(text) and text.isprintable()


def _unreadable(index: int, why: str, message: str) -> Device:
    return Device(index=index, id=placeholder_id(index), product_name=f"unknown NVIDIA GPU ({message})",
                  attributes={UNREADABLE: why, "nvml_message": message})


#: The character devices the NVIDIA driver makes, one per GPU (``/dev/nvidiactl``, ``-uvm``, ``-modeset`` are not).
_GPU_NODE = re.compile(r"^/dev/nvidia(\d+)$")


def gpu_device_nodes(host: Host) -> list[str]:
    """The driver's per-GPU device nodes (``/dev/nvidia0`` ...): a second witness of how many GPUs there are."""
    return sorted((p for p in host.glob("/dev/nvidia*") if _GPU_NODE.match(p)),
                  key=lambda p: int(_GPU_NODE.match(p).group(1)))  # type: ignore[union-attr]


#: Why NVML cannot be opened on a host without NVIDIA GPUs (no library, no driver): silent there, unless the
#: driver's device nodes say there are GPUs. Any other reason (nvmlInit failing otherwise, unreadable data) is said.
_NVML_ABSENT = ("not installed", "Library Not Found", "Driver Not Loaded", "cannot load libnvidia-ml")


def unseen_gpus_problem(host: Host, unavailable: str | None) -> None:
    """Discovery found no GPU: say why unless this is simply a host without NVIDIA GPUs. ``unavailable``: why
    NVML could not be opened (None: it answered, and enumerates none). Never offer 0 quietly where NVML is
    broken (a driver/library mismatch, garbage answers) or the device nodes show GPUs."""
    nodes = gpu_device_nodes(host)
    witness = (f", while the driver shows {len(nodes)} GPU device node{'s' if len(nodes) > 1 else ''} "
               f"({', '.join(nodes[:4])}{', ...' if len(nodes) > 4 else ''})") if nodes else ""
    if unavailable is None:
        why = "NVML enumerates no GPU (the NVIDIA driver answers)"
    elif any(marker in unavailable for marker in _NVML_ABSENT):
        if not nodes:
            return  # no NVIDIA GPU here
        why = "NVML (libnvidia-ml with nvidia-ml-py) is not available"
    else:
        why = f"NVML cannot be used ({shown(unavailable)})"
    report_problem("gpus-not-enumerated", f"{why}{witness}; no GPU is offered",
                   fix="check 'nvidia-smi -L' and 'dmesg' for NVRM errors; in a container, mount the driver's "
                       "libraries (NVIDIA Container Toolkit) and install nvidia-ml-py", severity="warning")


def discover(nvml: Any) -> list[Device]:
    """Every GPU NVML enumerates, in NVML index order (the order CUDA uses by default on most hosts)."""
    count = vendor_int(nvml.nvmlDeviceGetCount(), "nvmlDeviceGetCount", maximum=MAX_GPUS,
                       fix="check 'nvidia-smi -L'; reload the NVIDIA driver") or 0
    driver = optional(nvml, "nvmlSystemGetDriverVersion") or None
    cuda = optional(nvml, "nvmlSystemGetCudaDriverVersion")
    runtime = cuda_version(int(cuda)) if cuda else None
    devices = []
    for index in range(count):
        try:
            with collect_problems() as found:  # what one GPU's calls report is prefixed with that GPU
                device = discover_one(nvml, index, driver, runtime)
            for report in found.drain():
                report_problem(report.code, f"GPU {index}: {report.message}", fix=report.fix,
                               severity=report.severity)
            devices.append(device)
        except nvml.NVMLError as e:
            why = "gpu-lost" if e.value == nvml.NVML_ERROR_GPU_IS_LOST else "nvml-error"
            devices.append(_unreadable(index, why, str(e)))
        except Exception as e:  # a malformed answer for this GPU: report it, keep the others
            message = f"NVML {unusable_answer(e)}"
            report_problem("nvml-malformed-answer", f"GPU {index}: {message}; it is reported unreadable (unhealthy)",
                           fix="update the NVIDIA driver and nvidia-ml-py to matching versions")
            devices.append(_unreadable(index, "nvml-garbage", message))
    return infer_unreadable_models(devices)


def infer_unreadable_models(devices: list[Device]) -> list[Device]:
    """Give unreadable GPUs the model of the others when those all agree (GPU nodes are homogeneous).

    Otherwise one dead GPU would turn the node's SKU "unknown". The guess is marked in the attributes,
    and the device stays unhealthy whatever its model.
    """
    models = {(d.product_name, d.pci_device_id, d.memory_mib) for d in devices if UNREADABLE not in d.attributes}
    if len(models) != 1:
        return devices
    (name, pci_id, memory), = models
    return [d.model_copy(update={"product_name": name, "pci_device_id": pci_id, "memory_mib": memory,
                                 "attributes": {**d.attributes, "model_inferred": True}})
            if UNREADABLE in d.attributes else d for d in devices]


def fallback_id(index: int, pci_bus_id: str | None) -> str:
    """The id of a GPU NVML gives no UUID for: its PCI bus id (stable across reboots), else its index."""
    return f"nvml-pci-{pci_bus_id.strip().lower()}" if pci_bus_id and pci_bus_id.strip() else f"nvml-gpu-{index}"


def discover_one(nvml: Any, index: int, driver: str | None, runtime: str | None) -> Device:
    handle = nvml.nvmlDeviceGetHandleByIndex(index)
    name = str(nvml.nvmlDeviceGetName(handle))
    pci = optional(nvml, "nvmlDeviceGetPciInfo_v3", handle)
    attributes: dict[str, str | int | float | bool] = {}
    try:
        uuid = str(nvml.nvmlDeviceGetUUID(handle))
    except nvml.NVMLError as e:
        if e.value != nvml.NVML_ERROR_NOT_SUPPORTED:
            raise
        # Some GPUs and virtualised setups cannot report a UUID. Ray still counts the GPU (it only asks
        # NVML for the count), so it is offered under a stable fallback id, with a warning.
        uuid = fallback_id(index, str(pci.busId) if pci is not None else None)
        attributes[ID_FALLBACK] = f"nvmlDeviceGetUUID answered NVML_ERROR_NOT_SUPPORTED for GPU {index}; id {uuid}"
    if (ID_FALLBACK not in attributes and not GPU_UUID.match(uuid)) or not _printable(name):
        return _unreadable(index, "nvml-garbage", "NVML returned a malformed name or UUID")
    memory = optional(nvml, "nvmlDeviceGetMemoryInfo", handle)
    cc = optional(nvml, "nvmlDeviceGetCudaComputeCapability", handle)
    compute_capability = (int(cc[0]), int(cc[1])) if cc else None
    arch_enum = optional(nvml, "nvmlDeviceGetArchitecture", handle)
    numa = optional(nvml, "nvmlDeviceGetNumaNodeId", handle)
    affinity = optional(nvml, "nvmlDeviceGetCpuAffinity", handle, CPU_SET_WORDS)
    if compute_capability:
        attributes["compute_capability"] = f"{compute_capability[0]}.{compute_capability[1]}"
    if affinity is not None:
        try:
            cpus = cpu_list([int(w) for w in affinity])
        except CpuListError as e:  # NVML's words are unsigned longs: anything else is a broken binding
            malformed("nvmlDeviceGetCpuAffinity", list(affinity), f"64-bit mask words ({e})", where=f"GPU {index}")
            cpus = ""
        if cpus:
            attributes["cpu_affinity"] = cpus
    mig_mode = optional(nvml, "nvmlDeviceGetMigMode", handle)
    partitions: list[Partition] = []
    capacity = None
    memory_mib = int(memory.total) // 2**20 if memory is not None else None
    if mig_mode is not None:
        attributes["mig_mode"] = "enabled" if int(mig_mode[0]) == nvml.NVML_DEVICE_MIG_ENABLE else "disabled"
        if int(mig_mode[0]) == nvml.NVML_DEVICE_MIG_ENABLE:
            capacity = mig_capacity(name, optional(nvml, "nvmlDeviceGetMaxMigDeviceCount", handle))
            partitions = mig_partitions(nvml, handle, memory_mib, capacity)
        else:
            capacity = mig_capacity(name)
    return Device(
        index=index, id=uuid, product_name=name,
        pci_device_id=pci_device_id(int(pci.pciDeviceId)) if pci is not None else None,
        memory_mib=int(memory.total) // 2**20 if memory is not None else None,
        pci_bus_id=str(pci.busId) if pci is not None else None,
        numa_node=int(numa) if numa is not None and int(numa) >= 0 else None,
        architecture=architecture(int(arch_enum) if arch_enum is not None else None, compute_capability),
        driver_version=driver, runtime_version=runtime, partitions=partitions, attributes=attributes,
        partition_capacity=(PartitionCapacity(compute_slices=capacity[0], memory_slices=capacity[1])
                            if capacity else None),
    )


def mig_partitions(nvml: Any, handle: Any, gpu_mib: int | None, capacity: tuple[int, int]) -> list[Partition]:
    """The MIG devices (GPU instance + compute instance) carved out of a MIG-enabled GPU: each is a partition
    whose id is its MIG UUID (what CUDA_VISIBLE_DEVICES accepts), its profile the one its name ends in."""
    partitions = []
    slots = optional(nvml, "nvmlDeviceGetMaxMigDeviceCount", handle) or 0
    for slot in range(int(slots)):
        try:
            mig = nvml.nvmlDeviceGetMigDeviceHandleByIndex(handle, slot)
        except nvml.NVMLError as e:
            if e.value in (nvml.NVML_ERROR_NOT_FOUND, nvml.NVML_ERROR_INVALID_ARGUMENT):
                # An empty slot: NVML numbers slots, not instances. Drivers answer NOT_FOUND or
                # INVALID_ARGUMENT for it; NVIDIA's go-nvlib and DRA driver skip both.
                continue
            raise
        uuid = str(nvml.nvmlDeviceGetUUID(mig))
        if not MIG_UUID.match(uuid):
            continue
        name = str(optional(nvml, "nvmlDeviceGetName", mig) or "")
        profile = mig_profile(name)
        if profile is None:
            report_problem("nvml-mig-unnamed", f"MIG device {uuid} is named {shown(name)!s}, which names no MIG "
                           "profile; it is not offered", fix="update the NVIDIA driver: its MIG device names end "
                           "in the profile, e.g. 'MIG 1g.10gb'")
            continue
        memory = optional(nvml, "nvmlDeviceGetMemoryInfo", mig)
        memory_mib = int(memory.total) // 2**20 if memory is not None else None
        compute_slices, memory_slices = mig_slices(profile, memory_mib, gpu_mib, capacity)
        attributes: dict[str, str | int | float | bool] = {}
        for key, fn in (("gpu_instance_id", "nvmlDeviceGetGpuInstanceId"),
                        ("compute_instance_id", "nvmlDeviceGetComputeInstanceId")):
            value = optional(nvml, fn, mig)
            if value is not None:
                attributes[key] = int(value)
        # A compute instance ('<c>c.<g>g...') shares its GPU instance's memory with the instance's other ones.
        match = MIG_PROFILE.match(profile)
        shared = (f"gpu-instance-{attributes['gpu_instance_id']}" if match is not None and match["ci"] is not None
                  and "gpu_instance_id" in attributes else None)
        partitions.append(Partition(id=uuid, kind="mig", profile=profile, compute_slices=compute_slices,
                                    memory_slices=memory_slices, memory_mib=memory_mib, shared_memory=shared,
                                    attributes=attributes))
    return partitions
