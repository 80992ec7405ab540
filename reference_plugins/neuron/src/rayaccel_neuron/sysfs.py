"""What the Neuron kernel driver publishes under ``/sys/devices/virtual/neuron_device/neuron<N>/``.

Read by the driver's own names (aws-neuronx-dkms, neuron_sysfs_metrics.c):

* ``stats/hardware/mem_ecc_uncorrected`` -- unrepairable uncorrected ECC events in device DRAM (HBM)
* ``stats/hardware/mem_ecc_repairable_uncorrected`` -- uncorrected but repairable DRAM events
* ``stats/hardware/sram_ecc_uncorrected`` -- uncorrected ECC events in on-chip SRAM
* ``info/serial_number`` (16 hex digits), ``info/architecture/{arch_type,device_name,instance_type}``
* ``neuron_core<k>/stats/memory_usage/device_mem/<category>/total`` -- bytes in use now, per category

Each counter file holds one decimal number and a newline. Newer drivers publish a counter as a directory
holding ``total`` (and ``present``), as they do for the per-core status counters; both are read. The device
directories are read under ``/sys/devices/virtual/neuron_device`` or, where only the class view exists,
``/sys/class/neuron_device``. A counter the driver does not publish is *unknown* (None), never 0: health
then says it cannot see ECC errors rather than calling the device clean.
"""

from __future__ import annotations

from dataclasses import dataclass

from rayaccel import Host
from rayaccel.reporting import plain_int, vendor_int
from rayaccel_neuron.neuronls import NeuronDeviceInfo

ROOT = "/sys/devices/virtual/neuron_device"
CLASS_ROOT = "/sys/class/neuron_device"
ROOTS = (ROOT, CLASS_ROOT)
DRIVER_VERSION = "/sys/module/neuron/version"


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


def devices_from_sysfs(host: Host, instance_type: str | None = None) -> list[NeuronDeviceInfo]:
    """The devices as the driver's sysfs alone shows them: the fallback when neuron-ls fails.

    Per device: ``core_count`` (else the ``neuron_core<k>`` directories), ``connected_devices``. Core ids
    are numbered device by device, as the runtime does. Memory and PCI address are not in this tree.
    """
    found = []
    for index in device_indices(host):
        base = device_dir(index, host)
        cores = read_count(host, f"{base}/core_count")
        if cores is None:
            cores = 0
            while host.is_dir(f"{base}/neuron_core{cores}"):
                cores += 1
        if not cores:
            continue
        peers = [n for n in map(plain_int, (read(host, f"{base}/connected_devices") or "").split(","))
                 if n is not None]
        found.append((index, cores, peers))
    infos = []
    for index, cores, peers in found:
        # Core ids run device by device in index order (NEURON_RT_VISIBLE_CORES' numbering).
        first = sum(c for i, c, _ in found if i < index)
        infos.append(NeuronDeviceInfo(index=index, nc_count=cores, core_ids=list(range(first, first + cores)),
                                      connected_to=peers, instance_type=instance_type))
    return infos
