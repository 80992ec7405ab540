"""Corpus mutants whose cards' CPU lists come from an assumed layout, not from the host (issue 46, held-out round
15's ``c2``: a command-csv bake giving each device ``node * 32`` to ``node * 32 + 31``, "two 32-core sockets",
whatever the host has). RAC257's ``cpus-the-host-states`` names a CPU list that no list or mask the host states
gives whole; its other invariants rewrite or extend lists the host states, which these never read.

Two shapes: sixteen cores per NUMA node assumed on acme-4, a host stating no CPU at all; and the host's CPU count
(``/sys/devices/system/cpu/online``) split evenly by NUMA node, contiguous, on ``acme-4-nodes``, a two-socket host
whose kernel states each node's CPUs (``/sys/devices/system/node/node<N>/cpulist``: its cores, then their SMT
siblings, ``0-23,48-71``), which the split cuts across. Imported by tests/conformance/test_conformance_corpus.py
(``corpus.MUTANT_MODULES``); each is bound here under its name (``c-cpus-per-node-assumed`` as
``c_cpus_per_node_assumed``) so a Ray node loads it by ``RAYACCEL_PLUGINS``.
"""

from __future__ import annotations

from rayaccel import Device, Host, Topology
from rayaccel_testplugins.corpus import Healthy, add_import_defect, read_machine, write_machine
from rayaccel_testplugins.corpus_affinities import _list_cpus, _ranges

NODES = "/sys/devices/system/node"
ONLINE = "/sys/devices/system/cpu/online"
#: Each NUMA node's CPUs on acme-4-nodes (2 x 24 cores, SMT siblings numbered after every core), as the kernel lists.
NODE_CPUS = {0: "0-23,48-71", 1: "24-47,72-95"}


def _add_nodes_machine(plugin: str) -> None:
    """The plugin's acme-4 with the kernel's node CPU lists and online CPUs (a 96-CPU two-socket host)."""
    data = read_machine(plugin)
    files = data["host"]["files"]
    for node, cpus in NODE_CPUS.items():
        files[f"{NODES}/node{node}/cpulist"] = f"{cpus}\n"
    files[ONLINE] = "0-95\n"
    data["name"], data["description"] = "acme-4-nodes", f"{data['description']}, the kernel's NUMA node CPU lists"
    write_machine(plugin, "acme-4-nodes", data)


def _with_cpus(topology: Topology, devices: list[Device], cpus: dict[str, str]) -> Topology:
    """The healthy topology with ``cpus`` given to the affinities of those devices."""
    return topology.model_copy(update={"affinities": [
        a.model_copy(update={"cpus": cpus[a.device]}) if a.device in cpus else a for a in topology.affinities]})


def _nodes(devices: list[Device]) -> dict[str, int]:
    """Each device on a NUMA node (not the kernel's -1, no node) and its node."""
    return {d.id: d.numa_node for d in devices if d.numa_node is not None and d.numa_node >= 0}


def node_cpus(host: Host, node: int) -> list[int] | None:
    """The kernel's CPU list of NUMA node ``node``, where the host has it."""
    path = f"{NODES}/node{node}/cpulist"
    return _list_cpus(host.read_text(path).strip()) if host.exists(path) else None


class CpusPerNodeAssumed(Healthy):
    DEFECT = ("each card's CPUs assumed to be its NUMA node's 16 cores (node 1: '16-31'), on a host that states no "
              "CPU: another machine's layout")
    KILLED_BY = ("RAC257", "invariant cpus-the-host-states")
    #: The defect: the cores per NUMA node of the servers the plugin was written on.
    CORES_PER_NODE = 16

    def rayaccel_topology(self, host: Host, devices: list[Device]) -> Topology:
        n = self.CORES_PER_NODE
        return _with_cpus(Healthy.rayaccel_topology(self, host, devices), devices, {
            device: f"{node * n}-{node * n + n - 1}" for device, node in _nodes(devices).items()})


class CpusSplitByNodeCount(Healthy):
    DEFECT = ("each card's CPUs computed as an even, contiguous share of the host's online CPUs by NUMA node (node 0 "
              "of 96: '0-47'), where the kernel lists node 0's as '0-23,48-71' (SMT siblings numbered after the cores)")
    KILLED_BY = ("RAC257", "invariant cpus-the-host-states")

    def __init__(self, name: str) -> None:
        super().__init__(name)
        _add_nodes_machine(name)

    def rayaccel_topology(self, host: Host, devices: list[Device]) -> Topology:
        topology = Healthy.rayaccel_topology(self, host, devices)
        online = _list_cpus(host.read_text(ONLINE).strip()) if host.exists(ONLINE) else None
        nodes = _nodes(devices)
        if not online or not nodes:
            return topology
        share = len(online) // (max(nodes.values()) + 1)  # the defect: node N's CPUs the N-th contiguous share
        return _with_cpus(topology, devices, {device: _ranges(online[node * share:(node + 1) * share])
                                              for device, node in nodes.items()})


class NodeCpuReader(Healthy):
    """The right reader of acme-4-nodes (no mutant: the tests grade it as the mutants' control): each card's CPUs are
    its NUMA node's, as the kernel lists them."""

    def rayaccel_topology(self, host: Host, devices: list[Device]) -> Topology:
        cpus = {device: _ranges(listed) for device, node in _nodes(devices).items()
                if (listed := node_cpus(host, node))}
        return _with_cpus(Healthy.rayaccel_topology(self, host, devices), devices, cpus)


MUTANTS = (CpusPerNodeAssumed, CpusSplitByNodeCount)
for _cls in MUTANTS:
    _plugin = add_import_defect(_cls)
    globals()[_plugin.name.replace("-", "_")] = _plugin
