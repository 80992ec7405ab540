"""Corpus mutants whose affinity is right only where the recorded machine happens to agree with a shortcut (issue 46,
held-out round 10's ``l2`` and ``e1``), two shapes each. A NUMA node computed in the topology hook (from the card's
position, from the first card of its board) agrees with discovery's on acme-4 (nodes 0, 0, 1, 1) and passes RAC258;
RAC245 moves a card's node where the host states it and the affinity must follow (``invariant
affinity-node-follows-the-host``). A CPU list cut (its first range: the cores without their SMT siblings; the
kernel's mask's lowest 32-bit word) is still a CPU list and passes RAC257's forms; RAC257 gives every stated list a
lone CPU past all of them and each affinity must be its whole list (``invariant cpu-list-read-whole``).

Imported by tests/conformance/test_conformance_corpus.py (``corpus.MUTANT_MODULES``); each is bound here under its
name (``c-cpus-first-range`` as ``c_cpus_first_range``) so a Ray node loads it by ``RAYACCEL_PLUGINS``.
"""

from __future__ import annotations

from rayaccel import Affinity, Device, Host, Topology, malformed
from rayaccel_testplugins.corpus import Healthy, add_import_defect
from rayaccel_testplugins.corpus_affinities import PCI, _add_cpus_machine, listed_cpus, with_cpus


def first_run(cpus: list[int]) -> list[int]:
    """The CPUs up to the first gap (the defect: a list's first range taken for the whole)."""
    run = cpus[:1]
    for cpu in cpus[1:]:
        if cpu != run[-1] + 1:
            break
        run.append(cpu)
    return run


def _first_listed_run(host: Host, device: Device) -> list[int] | None:
    cpus = listed_cpus(host, device)
    return first_run(cpus) if cpus else cpus


def _lowest_mask_word(host: Host, device: Device) -> list[int] | None:
    path = f"{PCI}/{device.pci_bus_id}/local_cpus"
    if not device.pci_bus_id or not host.exists(path):
        return None
    words = host.read_text(path).strip().split(",")
    try:
        low = int(words[-1], 16)  # the defect: the first 32 CPUs only, whatever the kernel wrote above them
    except ValueError:
        malformed("local_cpus", words, "a CPU mask", where=device.id)
        return None
    return [bit for bit in range(32) if low >> bit & 1]


class CpusFirstRange(Healthy):
    DEFECT = ("a card's CPU list cut to its first range ('0-15,32-47' -> '0-15': the cores kept, their SMT siblings "
              "dropped), as held-out e1 did with neuron-ls's cpu_affinity")
    KILLED_BY = ("RAC257", "invariant cpu-list-read-whole")

    def __init__(self, name: str) -> None:
        super().__init__(name)
        _add_cpus_machine(name)

    def rayaccel_topology(self, host: Host, devices: list[Device]) -> Topology:
        return with_cpus(Healthy.rayaccel_topology(self, host, devices), host, devices, read=_first_listed_run)


class CpuMaskLowestWord(Healthy):
    DEFECT = ("a card's CPUs read from the kernel's mask local_cpus as its last (lowest) 32-bit word: CPUs 32 and up "
              "(the second socket's SMT siblings on acme-4-cpus, any CPU of a bigger machine) are dropped")
    KILLED_BY = ("RAC257", "invariant cpu-list-read-whole")

    def __init__(self, name: str) -> None:
        super().__init__(name)
        _add_cpus_machine(name)

    def rayaccel_topology(self, host: Host, devices: list[Device]) -> Topology:
        return with_cpus(Healthy.rayaccel_topology(self, host, devices), host, devices, read=_lowest_mask_word)


class AffinityNodeFromPosition(Healthy):
    DEFECT = ("a card's affinity states the NUMA node its position suggests (the first half of the cards on socket "
              "0, as held-out l2 did), not the node discovery read: right on acme-4 (0, 0, 1, 1) alone")
    KILLED_BY = ("RAC245", "invariant affinity-node-follows-the-host")

    def rayaccel_topology(self, host: Host, devices: list[Device]) -> Topology:
        found = Healthy.rayaccel_topology(self, host, devices)
        return found.model_copy(update={"affinities": [
            Affinity(device=d.id, numa_node=2 * d.index // max(len(devices), 1)) for d in devices]})


class AffinityNodeFromBoard(Healthy):
    DEFECT = ("a card's affinity states the NUMA node of the first card on its two-card board (cards 0-1, 2-3), not "
              "its own: right wherever a board's cards share a node, as on acme-4")
    KILLED_BY = ("RAC245", "invariant affinity-node-follows-the-host")

    def rayaccel_topology(self, host: Host, devices: list[Device]) -> Topology:
        found = Healthy.rayaccel_topology(self, host, devices)
        nodes = {d.index: d.numa_node for d in devices}
        return found.model_copy(update={"affinities": [
            Affinity(device=d.id, numa_node=node) for d in devices
            if (node := nodes.get(d.index // 2 * 2, d.numa_node)) is not None]})


for _cls in (CpusFirstRange, CpuMaskLowestWord, AffinityNodeFromPosition, AffinityNodeFromBoard):
    _plugin = add_import_defect(_cls)
    globals()[_plugin.name.replace("-", "_")] = _plugin
