"""Corpus mutants of a device's affinity in the topology (issue 46, lane D), two shapes each: a CPU list written
otherwise than the kernel writes one, or read right only in the form the fixture states it (RAC257), and a NUMA
node missing from the topology or disagreeing with discovery's (RAC258).

The CPU-list mutants read their cards' CPUs on a machine of their own (``acme-4-cpus``: acme-4 with each card's PCI
function in sysfs, ``local_cpulist`` and the kernel's mask ``local_cpus``, on a two-socket 64-CPU host); the
healthy reader parses the list (or the mask, any number of words) and writes it back as ranges. Imported by
tests/conformance/test_conformance_corpus.py (``corpus.MUTANT_MODULES``); each is bound here under its name
(``c-cpus-one-at-a-time`` as ``c_cpus_one_at_a_time``) so a Ray node loads it by ``RAYACCEL_PLUGINS``.
"""

from __future__ import annotations

from collections.abc import Callable

from rayaccel import Affinity, Device, Host, Topology, malformed
from rayaccel_testplugins.corpus import SYSFS, Healthy, add_import_defect, read_machine, write_machine

PCI = "/sys/bus/pci/devices"
#: Each socket's CPUs on the two-socket machine: its cores, then their SMT siblings.
SOCKET_CPUS = {0: [*range(0, 16), *range(32, 48)], 1: [*range(16, 32), *range(48, 64)]}


def _mask(cpus: list[int], words: int = 2) -> str:
    value = sum(1 << c for c in cpus)
    return ",".join(f"{(value >> (32 * w)) & 0xFFFFFFFF:08x}" for w in reversed(range(words)))


def _ranges(cpus: list[int]) -> str:
    runs: list[list[int]] = []
    for cpu in sorted(cpus):
        if runs and cpu == runs[-1][1] + 1:
            runs[-1][1] = cpu
        else:
            runs.append([cpu, cpu])
    return ",".join(f"{a}" if a == b else f"{a}-{b}" for a, b in runs)


def _add_cpus_machine(plugin: str) -> None:
    """The plugin's acme-4 machine with each card's PCI function in sysfs: its CPU list and mask."""
    data = read_machine(plugin)
    files = data["host"]["files"]
    for i in range(4):
        bdf, node = files[f"{SYSFS}/acme{i}/pci_bus_id"].strip(), int(files[f"{SYSFS}/acme{i}/numa_node"])
        files[f"{PCI}/{bdf}/local_cpulist"] = _ranges(SOCKET_CPUS[node]) + "\n"
        files[f"{PCI}/{bdf}/local_cpus"] = _mask(SOCKET_CPUS[node]) + "\n"
    data["name"], data["description"] = "acme-4-cpus", f"{data['description']}, each card's CPUs in sysfs"
    data["perturbations"] = []  # (cards removed there would leave their PCI functions behind)
    write_machine(plugin, "acme-4-cpus", data)


def _list_cpus(text: str) -> list[int] | None:
    cpus: list[int] = []
    for part in text.split(","):
        first, _, last = part.partition("-")
        if not (first.isdigit() and (last or first).isdigit()):
            return None
        cpus.extend(range(int(first), int(last or first) + 1))
    return sorted(set(cpus))


def listed_cpus(host: Host, device: Device) -> list[int] | None:
    """The card's CPUs from ``local_cpulist``, any form the kernel's parser takes; None (reported) if unreadable."""
    path = f"{PCI}/{device.pci_bus_id}/local_cpulist"
    if not device.pci_bus_id or not host.exists(path):
        return None
    text = host.read_text(path).strip()
    cpus = _list_cpus(text)
    if cpus is None:
        malformed("local_cpulist", text, "a Linux CPU list", where=device.id)
    return cpus


def with_cpus(topology: Topology, host: Host, devices: list[Device],
              read: Callable[[Host, Device], list[int] | None] = listed_cpus,
              write: Callable[[list[int]], str] = _ranges) -> Topology:
    """The topology with each card's affinity: its NUMA node and, where the host states them, its CPUs."""
    cpus = {d.id: read(host, d) for d in devices}
    return topology.model_copy(update={"affinities": [
        Affinity(device=d.id, numa_node=d.numa_node, cpus=write(c) if (c := cpus[d.id]) else None)
        for d in devices if d.numa_node is not None or cpus[d.id]]})


class CpuReader(Healthy):
    """The healthy reader of acme-4-cpus (no mutant: the tests grade it as the mutants' control)."""

    def rayaccel_topology(self, host: Host, devices: list[Device]) -> Topology:
        return with_cpus(Healthy.rayaccel_topology(self, host, devices), host, devices)


def _one_at_a_time(cpus: list[int]) -> str:
    return ",".join(str(c) for c in cpus)  # the defect: no runs joined into ranges


def _mask_of_two_words(host: Host, device: Device) -> list[int] | None:
    path = f"{PCI}/{device.pci_bus_id}/local_cpus"
    if not device.pci_bus_id or not host.exists(path):
        return None
    words = host.read_text(path).strip().split(",")
    try:
        high, low = int(words[0], 16), int(words[1], 16)  # the defect: two words, whatever the kernel wrote
    except (IndexError, ValueError):
        malformed("local_cpus", words, "a CPU mask", where=device.id)
        return None
    value = high << 32 | low
    return [bit for bit in range(64) if value >> bit & 1]


class CpusOneAtATime(Healthy):
    DEFECT = ("a card's CPU affinity is written one CPU at a time ('0,1,2,...,47'), not as the kernel writes a CPU "
              "list ('0-15,32-47'): the Slurm exporter and anyone comparing lists as text see another list")
    KILLED_BY = ("RAC257", "invariant cpu-list-is-the-kernels-text")

    def __init__(self, name: str) -> None:
        super().__init__(name)
        _add_cpus_machine(name)

    def rayaccel_topology(self, host: Host, devices: list[Device]) -> Topology:
        return with_cpus(Healthy.rayaccel_topology(self, host, devices), host, devices, write=_one_at_a_time)


class CpuMaskTwoWords(Healthy):
    DEFECT = ("a card's CPUs are read from the kernel's mask local_cpus as two 32-bit words (the first the high "
              "one), as on the 64-CPU machine recorded: a kernel built for more CPUs writes more words, and the "
              "high word read is then zero")
    KILLED_BY = ("RAC257", "invariant cpu-list-in-any-form")

    def __init__(self, name: str) -> None:
        super().__init__(name)
        _add_cpus_machine(name)

    def rayaccel_topology(self, host: Host, devices: list[Device]) -> Topology:
        return with_cpus(Healthy.rayaccel_topology(self, host, devices), host, devices, read=_mask_of_two_words)


class AffinityNodeZeroDropped(Healthy):
    DEFECT = ("a card's affinity is written only where its NUMA node is truthy (if d.numa_node:): the cards on node 0 "
              "have none in the topology")
    KILLED_BY = ("RAC258", "invariant device-node-in-the-topology")

    def rayaccel_topology(self, host: Host, devices: list[Device]) -> Topology:
        found = Healthy.rayaccel_topology(self, host, devices)
        return found.model_copy(update={"affinities": [Affinity(device=d.id, numa_node=d.numa_node)
                                                       for d in devices if d.numa_node]})


class AffinityNodeFromPciBus(Healthy):
    DEFECT = ("a card's affinity states the NUMA node its PCI bus number suggests (bus 0x80 and up on the second "
              "socket, as on many two-socket servers), not the node discovery read")
    KILLED_BY = ("RAC258", "invariant affinity-node-is-the-device-node")

    def rayaccel_topology(self, host: Host, devices: list[Device]) -> Topology:
        found = Healthy.rayaccel_topology(self, host, devices)
        return found.model_copy(update={"affinities": [
            Affinity(device=d.id, numa_node=int(int(d.pci_bus_id.split(":")[1], 16) >= 0x80))
            for d in devices if d.pci_bus_id]})


for _cls in (CpusOneAtATime, CpuMaskTwoWords, AffinityNodeZeroDropped, AffinityNodeFromPciBus):
    _plugin = add_import_defect(_cls)
    globals()[_plugin.name.replace("-", "_")] = _plugin
