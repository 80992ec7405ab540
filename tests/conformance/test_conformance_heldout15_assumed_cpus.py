"""Held-out grading, round 15 (issue 46, lane J2): a device's CPU list is CPUs the host states, whole (``invariant
cpus-the-host-states``, RAC257).

The command-csv bake ``c2`` gave each device ``node * 32`` to ``node * 32 + 31`` ("two 32-core sockets") on a host
that states no CPU at all; RAC257's other invariants rewrite or extend the CPU lists a host states, so it survived
``supported``. RAC257 now names an affinity whose CPUs no CPU list or mask the host states gives whole (one, or
several together; a CPU the host names on its own counts as a list of one): both corpus shapes (16 cores a node
assumed on a host stating none; the host's online CPUs split evenly by node, cutting across the node lists the kernel
states) and c2's edit on the NVIDIA and Neuron plugins are named; the plugins as shipped and a reader of the
kernel's node lists pass.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from mutant_grading import evidence, failure, mutant, wrapped

import rayaccel_neuron.plugin
import rayaccel_nvidia.plugin
from rayaccel.records import Device, Topology
from rayaccel_conformance.checks.affinities import host_cpu_sets
from rayaccel_conformance.registry import CHECKS, CheckFailed
from rayaccel_testplugins.corpus_assumed_cpus import CpusPerNodeAssumed, CpusSplitByNodeCount, NodeCpuReader

INVARIANT = "invariant cpus-the-host-states"


@pytest.mark.parametrize(("shape", "machine", "said"), [
    (CpusPerNodeAssumed, "acme-4", "cpus '16-31' name CPUs '16-31' that no CPU list or mask the host states gives "
     "(it states no CPU at all"),
    (CpusSplitByNodeCount, "acme-4-nodes", "cpus '0-47' name CPUs '0-47' that no CPU list or mask the host states "
     "gives (it states CPUs '0-95', in sets none of which the device's CPUs hold whole")])
def test_cpus_from_an_assumed_layout_are_named(shape: type[CpusPerNodeAssumed], machine: str, said: str) -> None:
    message = failure(mutant(shape), "RAC257", machine)
    assert INVARIANT in message and said in message, message
    assert "expected" not in message, message  # no fixture's expectation read


def test_the_reader_of_the_kernels_node_lists_passes() -> None:
    name = mutant(CpusSplitByNodeCount).name  # its machine, read as the kernel lists each node's CPUs
    assert "CPU lists, each the kernel's text" in evidence(NodeCpuReader(name), "RAC257", "acme-4-nodes")


def per_node(module: Any, cores: int) -> Any:
    """``module``'s rayaccel_topology with c2's edit: each affinity's CPUs ``node * cores`` onwards."""
    def topology(host: Any, devices: list[Device]) -> Topology:
        answer: Topology = module.rayaccel_topology(host, devices)
        return answer.model_copy(update={"affinities": [a.model_copy(update={
            "cpus": f"{a.numa_node * cores}-{a.numa_node * cores + cores - 1}"}) if a.numa_node is not None else a
            for a in answer.affinities]})
    return topology


@pytest.mark.parametrize(("module", "family", "fixture", "invariant"), [
    (rayaccel_nvidia.plugin, "nvidia", "dgx-h100", INVARIANT),
    # neuron-ls states each device's list as text ('0-31,64-95'): c2's '0-31', a part of it, was named before.
    (rayaccel_neuron.plugin, "neuron", "trn1.32xlarge", "invariant cpu-list-read-whole")])
def test_c2s_edit_on_a_reference_plugin_is_named(module: Any, family: str, fixture: str, invariant: str) -> None:
    subject = wrapped(module, family, str(Path(module.__file__).parent), rayaccel_topology=per_node(module, 32))
    with pytest.raises(CheckFailed) as failed:
        CHECKS["RAC257"].function(subject, f"{family}/{fixture}")
    assert invariant in str(failed.value), failed.value


@pytest.mark.parametrize(("module", "family", "fixture"), [
    (rayaccel_nvidia.plugin, "nvidia", "dgx-h100"), (rayaccel_neuron.plugin, "neuron", "trn1.32xlarge")])
def test_the_reference_plugins_cpus_are_the_hosts(module: Any, family: str, fixture: str) -> None:
    subject = wrapped(module, family, str(Path(module.__file__).parent))
    assert "each the kernel's text" in str(CHECKS["RAC257"].function(subject, f"{family}/{fixture}"))


def test_the_cpu_sets_a_host_states() -> None:
    host: dict[str, Any] = {
        "files": {"/sys/devices/system/node/node1/cpulist": "24-47,72-95\n", "/sys/bus/pci/devices/x/local_cpulist":
                  "5\n", "/sys/devices/system/cpu/cpu7/online": "1\n", "/proc/cpuinfo": "processor\t: 9\nmodel\t: 1\n"},
        "libraries": {"nvml": {"devices": {"0": {"cpu_affinity": [3]}}}},
        "commands": {"acme-smi topo -m": {"stdout": "GPU0\t X \t0-3,8\t0\n"}}}
    assert host_cpu_sets(host) == {frozenset([*range(24, 48), *range(72, 96)]), frozenset({5}), frozenset({7}),
                                   frozenset({9}), frozenset({0, 1}), frozenset({0, 1, 2, 3, 8})}
