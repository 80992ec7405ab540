"""What the Neuron kernel driver publishes under ``/sys/devices/virtual/neuron_device/neuron<N>/``.

Read by the driver's own names (aws-neuronx-dkms, neuron_sysfs_metrics.c):

* ``stats/hardware/mem_ecc_uncorrected`` -- unrepairable uncorrected ECC events in device DRAM (HBM)
* ``stats/hardware/mem_ecc_repairable_uncorrected`` -- uncorrected but repairable DRAM events
* ``stats/hardware/sram_ecc_uncorrected`` -- uncorrected ECC events in on-chip SRAM
* ``info/serial_number`` (16 hex digits), ``info/architecture/{arch_type,device_name,instance_type}``
* ``neuron_core<k>/stats/memory_usage/device_mem/<category>/total`` -- bytes in use now, per category
* ``core_count`` -- the driver's ``nc_per_device``, printed as ``%d`` with no newline (neuron_cdev.c)

The driver knows only PHYSICAL NeuronCores: ``core_count`` and the ``neuron_core<k>`` directories count 8 per
Trainium2 device (V3_NC_PER_DEVICE). The runtime schedules LOGICAL cores: on Trn2 and later it groups
``NEURON_LOGICAL_NC_CONFIG`` physical cores into one (2 by default; 1 is the only other value), on Trn1,
Inf2 and Inf1 one physical core is one logical core. ``NEURON_RT_VISIBLE_CORES`` takes the logical ids, so
the sysfs fallback divides by that setting before it numbers cores.

Each counter file holds one decimal number and a newline. Newer drivers publish a counter as a directory
holding ``total`` (and ``present``), as they do for the per-core status counters; both are read. The device
directories are read under ``/sys/devices/virtual/neuron_device`` or, where only the class view exists,
``/sys/class/neuron_device``. A counter the driver does not publish is *unknown* (None), never 0: health
then says it cannot see ECC errors rather than calling the device clean.
"""

from __future__ import annotations

from dataclasses import dataclass

from rayaccel import Host, malformed, plain_int, report_problem, vendor_int
from rayaccel_neuron.neuronls import MAX_CORES_PER_DEVICE, NeuronDeviceInfo

ROOT = "/sys/devices/virtual/neuron_device"
CLASS_ROOT = "/sys/class/neuron_device"
ROOTS = (ROOT, CLASS_ROOT)
DRIVER_VERSION = "/sys/module/neuron/version"
#: The runtime's Logical NeuronCore setting (physical cores per logical core); Neuron documents 1 and 2.
LNC_ENV = "NEURON_LOGICAL_NC_CONFIG"
LNC_VALUES = (1, 2)
#: LNC exists from NeuronCore-v3 (Trainium2) on: the runtime's default is 2 there, 1 before. The driver names each
#: core's generation in neuron_core<k>/info/architecture/arch_type ("NC" + suffix: Inf1 NCv1, Trn1 and Inf2 NCv2,
#: Trn2 NCv3). The device's own arch_type does not tell: the driver gives Inf2 "NDv3", as Trn2 (aws-neuron-driver's
#: v2/neuron_dhal_v2.c: Inf2's device suffix v3, core suffix v2), so it is read last and only where unambiguous.
LNC_FROM_CORE_GENERATION = 3
#: By device name (info/architecture/device_name), for a driver without a core's arch_type.
LNC_DEFAULT_BY_NAME = {"Inferentia": 1, "Inferentia2": 1, "Trainium1": 1, "Trainium": 1, "Trainium2": 2,
                       "Trainium3": 2}
#: By the device's arch_type, last: NDv3 is Inf2 (LNC 1) or Trn2 (LNC 2), so it is not here.
LNC_DEFAULT_BY_ARCH = {"NDv1": 1, "NDv2": 1}


def root(host: Host | None = None) -> str:
    """The driver's device root on this host: the first of :data:`ROOTS` that exists (ROOT when none does)."""
    if host is not None:
        for candidate in ROOTS:
            if host.is_dir(candidate):
                return candidate
    return ROOT


def present(host: Host) -> bool:
    """Whether the Neuron driver publishes its sysfs tree here (the driver is loaded)."""
    return any(host.is_dir(candidate) for candidate in ROOTS)


def device_dir(index: int, host: Host | None = None) -> str:
    return f"{root(host)}/neuron{index}"


def read(host: Host, path: str) -> str | None:
    try:
        return str(host.read_text(path)).strip()
    except (OSError, UnicodeDecodeError):
        return None


def read_count(host: Host, path: str) -> int | None:
    """A counter file's number; a file that holds anything else is reported (naming it) and read as unknown.

    A counter published as a directory (``<counter>/total``) is read from its ``total``."""
    raw = read(host, path)
    if raw is None and host.is_dir(path):
        path = f"{path}/total"
        raw = read(host, path)
    if raw is None:
        return None
    return vendor_int(raw, path, maximum=2**63 - 1, fix="check the aws-neuronx-dkms driver (dmesg | grep -i neuron)")


def device_count(host: Host) -> int:
    """How many neuron<N> device directories the driver publishes."""
    return len(device_indices(host))


def device_indices(host: Host) -> list[int]:
    """The N of every neuron<N> device directory the driver publishes, in order."""
    try:
        names = host.list_dir(root(host))
    except (FileNotFoundError, NotADirectoryError, PermissionError):
        return []
    found = (plain_int(n[len("neuron"):]) if n.startswith("neuron") else None for n in names)
    return sorted(n for n in found if n is not None)


@dataclass(frozen=True)
class EccCounters:
    mem_uncorrected: int | None
    mem_repairable_uncorrected: int | None
    sram_uncorrected: int | None

    @property
    def uncorrected(self) -> int:
        return (self.mem_uncorrected or 0) + (self.sram_uncorrected or 0)

    @property
    def readable(self) -> bool:
        """Whether the driver publishes any uncorrected-ECC counter for the device."""
        return self.mem_uncorrected is not None or self.sram_uncorrected is not None


def ecc_counters(host: Host, index: int) -> EccCounters:
    base = f"{device_dir(index, host)}/stats/hardware"
    return EccCounters(read_count(host, f"{base}/mem_ecc_uncorrected"),
                       read_count(host, f"{base}/mem_ecc_repairable_uncorrected"),
                       read_count(host, f"{base}/sram_ecc_uncorrected"))


def garbled_ecc_counters(host: Host, index: int, ecc: EccCounters) -> list[str]:
    """The uncorrected-ECC counter files the driver publishes that read as no count (a flaky read, a driver
    mid-reset): errors counted there cannot be seen, whatever the other counter says."""
    base = f"{device_dir(index, host)}/stats/hardware"
    values = {"mem_ecc_uncorrected": ecc.mem_uncorrected, "sram_ecc_uncorrected": ecc.sram_uncorrected,
              "mem_ecc_repairable_uncorrected": ecc.mem_repairable_uncorrected}
    return [f"{base}/{name}" for name, value in values.items() if value is None and published(host, f"{base}/{name}")]


def published(host: Host, path: str) -> bool:
    """Whether the driver publishes the file (empty, mid-reset, counts too) or the ``<counter>/total`` directory."""
    return read(host, path) is not None or bool(host.is_dir(path))


def device_present(host: Host, index: int) -> bool:
    return bool(host.is_dir(device_dir(index, host)))


#: The runtime's device-memory categories (memory_usage/device_mem/<category>/{total,present,peak}).
DEVICE_MEM_CATEGORIES = ("collectives", "constants", "dma_rings", "driver_memory", "model_code",
                         "model_shared_scratchpad", "nonshared_scratchpad", "notifications", "runtime_memory",
                         "tensors", "uncategorized")


def device_memory_used(host: Host, index: int) -> int | None:
    """Bytes of device memory the runtime holds now: every core's device_mem categories, summed."""
    base = device_dir(index, host)
    total, seen = 0, False
    core = 0
    while host.is_dir(f"{base}/neuron_core{core}"):
        mem = f"{base}/neuron_core{core}/stats/memory_usage/device_mem"
        for category in DEVICE_MEM_CATEGORIES:
            value = read_count(host, f"{mem}/{category}/total")
            if value is not None:
                total, seen = total + value, True
        core += 1
    return total if seen else None


def default_logical_nc_config(host: Host, index: int) -> int:
    """The runtime's default physical cores per logical core for device ``index``: 2 where its cores are
    NeuronCore-v3 or later (Trn2 on), else 1."""
    core_arch = read(host, f"{device_dir(index, host)}/neuron_core0/info/architecture/arch_type")
    core_generation = plain_int(core_arch[len("NCv"):]) if core_arch and core_arch.startswith("NCv") else None
    if core_generation is not None:
        return 2 if core_generation >= LNC_FROM_CORE_GENERATION else 1
    name = read(host, f"{device_dir(index, host)}/info/architecture/device_name")
    if name in LNC_DEFAULT_BY_NAME:
        return LNC_DEFAULT_BY_NAME[name]
    arch = read(host, f"{device_dir(index, host)}/info/architecture/arch_type")
    generation = plain_int(arch[len("NDv"):]) if arch and arch.startswith("NDv") else None
    if arch in LNC_DEFAULT_BY_ARCH:
        return LNC_DEFAULT_BY_ARCH[arch]
    return 2 if generation is not None and generation >= 4 else 1  # NDv4 on: after Trn2, LNC applies


def requested_logical_nc_config(host: Host) -> int | None:
    """NEURON_LOGICAL_NC_CONFIG as the runtime would take it; None when unset (a bad value is reported once)."""
    raw = (host.getenv(LNC_ENV) or "").strip()
    if not raw:
        return None
    value = plain_int(raw)
    if value not in LNC_VALUES:
        malformed(LNC_ENV, raw, f"one of {', '.join(map(str, LNC_VALUES))}; each device's default is used")
        return None
    return value


def logical_nc_config(host: Host, index: int, requested: int | None) -> int:
    """Physical NeuronCores per logical one for device ``index``: the requested setting, else the default."""
    default = default_logical_nc_config(host, index)
    if requested is None or default == 1:
        return default  # LNC applies only to Trn2 and later: before them one physical core is one logical
    return requested


def devices_from_sysfs(host: Host, instance_type: str | None = None) -> list[NeuronDeviceInfo]:
    """The devices as the driver's sysfs alone shows them: the fallback when neuron-ls fails or is missing.

    Per device: ``core_count`` (else the ``neuron_core<k>`` directories) gives the PHYSICAL cores; divided by
    the logical core config (:func:`logical_nc_config`) they are the logical cores the runtime schedules.
    Core ids are logical and numbered device by device, as the runtime does. ``connected_devices`` gives the
    NeuronLink peers. Memory and PCI address are not in this tree.
    """
    found = []
    requested = requested_logical_nc_config(host)
    for index in device_indices(host):
        base = device_dir(index, host)
        physical = read_count(host, f"{base}/core_count")
        if physical is None:
            physical = 0
            while host.is_dir(f"{base}/neuron_core{physical}"):
                physical += 1
        if physical > MAX_CORES_PER_DEVICE:
            # A broken driver answer must not become millions of core ids.
            malformed(f"{base}/core_count", physical, f"at most {MAX_CORES_PER_DEVICE} NeuronCores; the device is "
                      "not reported")
            continue
        if not physical:
            continue
        lnc = logical_nc_config(host, index, requested)
        if physical % lnc:
            report_problem("neuron-cores-uneven", f"Neuron device {index} has {physical} physical NeuronCores, "
                           f"which do not group into logical cores of {lnc}; each physical core is counted as one",
                           fix=f"check {LNC_ENV} and the driver ({base}/core_count)")
            lnc = 1
        peers = [n for n in map(plain_int, (read(host, f"{base}/connected_devices") or "").split(","))
                 if n is not None]
        found.append((index, physical // lnc, lnc, peers))
    infos = []
    first = 0
    for index, cores, lnc, peers in found:
        # Logical core ids run device by device in index order (NEURON_RT_VISIBLE_CORES' numbering).
        infos.append(NeuronDeviceInfo(index=index, nc_count=cores, core_ids=list(range(first, first + cores)),
                                      connected_to=peers, logical_nc_config=lnc, instance_type=instance_type))
        first += cores
    return infos
