"""What the Neuron kernel driver publishes under ``/sys/devices/virtual/neuron_device/neuron<N>/``.

Read by the driver's own names (aws-neuronx-dkms, neuron_sysfs_metrics.c):

* ``stats/hardware/mem_ecc_uncorrected`` -- unrepairable uncorrected ECC events in device DRAM (HBM)
* ``stats/hardware/mem_ecc_repairable_uncorrected`` -- uncorrected but repairable DRAM events
* ``stats/hardware/sram_ecc_uncorrected`` -- uncorrected ECC events in on-chip SRAM
* ``info/serial_number`` (16 hex digits), ``info/architecture/{arch_type,device_name,instance_type}``
* ``neuron_core<k>/stats/memory_usage/device_mem/<category>/total`` -- bytes in use now, per category

Each counter file holds one decimal number and a newline.
"""

from __future__ import annotations

from dataclasses import dataclass

from rayaccel import Host
from rayaccel.reporting import vendor_int

ROOT = "/sys/devices/virtual/neuron_device"
DRIVER_VERSION = "/sys/module/neuron/version"


def device_dir(index: int) -> str:
    return f"{ROOT}/neuron{index}"


def read(host: Host, path: str) -> str | None:
    try:
        return str(host.read_text(path)).strip()
    except (OSError, UnicodeDecodeError):
        return None


def read_count(host: Host, path: str) -> int | None:
    """A counter file's number; a file that holds anything else is reported (naming it) and read as unknown."""
    raw = read(host, path)
    if raw is None:
        return None
    return vendor_int(raw, path, maximum=2**63 - 1, fix="check the aws-neuronx-dkms driver (dmesg | grep -i neuron)")


def device_count(host: Host) -> int:
    """How many neuron<N> device directories the driver publishes."""
    try:
        names = host.list_dir(ROOT)
    except (FileNotFoundError, NotADirectoryError, PermissionError):
        return 0
    return sum(1 for n in names if n.startswith("neuron") and n[len("neuron"):].isdigit())


@dataclass(frozen=True)
class EccCounters:
    mem_uncorrected: int | None
    mem_repairable_uncorrected: int | None
    sram_uncorrected: int | None

    @property
    def uncorrected(self) -> int:
        return (self.mem_uncorrected or 0) + (self.sram_uncorrected or 0)


def ecc_counters(host: Host, index: int) -> EccCounters:
    base = f"{device_dir(index)}/stats/hardware"
    return EccCounters(read_count(host, f"{base}/mem_ecc_uncorrected"),
                       read_count(host, f"{base}/mem_ecc_repairable_uncorrected"),
                       read_count(host, f"{base}/sram_ecc_uncorrected"))


def device_present(host: Host, index: int) -> bool:
    return bool(host.is_dir(device_dir(index)))


#: The runtime's device-memory categories (memory_usage/device_mem/<category>/{total,present,peak}).
DEVICE_MEM_CATEGORIES = ("collectives", "constants", "dma_rings", "driver_memory", "model_code",
                         "model_shared_scratchpad", "nonshared_scratchpad", "notifications", "runtime_memory",
                         "tensors", "uncategorized")


def device_memory_used(host: Host, index: int) -> int | None:
    """Bytes of device memory the runtime holds now: every core's device_mem categories, summed."""
    base = device_dir(index)
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
