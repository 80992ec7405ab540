"""Held-out grading, round 16 (issue 46, lane J9): the template's sysfs machine states each device's PCI function
CPUs as the kernel writes them, so a plugin reading them is graded on them.

The sysfs bake ``s3`` read a device's CPUs from ``/sys/bus/pci/devices/<bdf>/local_cpus``, the kernel's hex mask,
into ``Affinity.cpus``, a CPU list; its fixture (the template's) had no PCI function files, so the hook never read
one and it survived ``supported``. The kernel writes ``local_cpus`` and ``local_cpulist`` for every PCI function
(drivers/pci/pci-sysfs.c: the device's NUMA node's CPUs), so the template's sysfs machine now has both for each
device; s3's edit on a fresh bake is then refused by the SDK's record check (RAC202), while reading the list passes
RAC257 with the CPUs the host states.
"""

from __future__ import annotations

import types
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from baked_plugins import bake_plugins
from mutant_grading import wrapped

import rayaccel
from rayaccel.hosts.fixtures import load_fixture
from rayaccel_conformance.checks.affinities import cpu_set, mask_set
from rayaccel_conformance.registry import CHECKS, CheckFailed

PCI = "/sys/bus/pci/devices"


@pytest.fixture(scope="module")
def baked(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[types.ModuleType, Path]]:
    module = bake_plugins(tmp_path_factory.mktemp("bakes"), {"pcicpus": "sysfs"})["pcicpus"]
    yield module, Path(module.__file__ or "").parent


def _cpus_from(host: rayaccel.Host, topology: rayaccel.Topology, devices: list[rayaccel.Device],
               read: Callable[[str], str]) -> rayaccel.Topology:
    """The topology with each affinity's cpus the device's PCI function's ``local_cpus`` as ``read`` takes it."""
    by_id = {d.id: d for d in devices}
    affinities = []
    for affinity in topology.affinities:
        path = f"{PCI}/{by_id[affinity.device].pci_bus_id}/local_cpus"
        if host.exists(path):
            affinity = affinity.model_copy(update={"cpus": read(host.read_text(path))})
        affinities.append(affinity)
    return topology.model_copy(update={"affinities": affinities})


def test_the_sysfs_machine_states_each_devices_cpus_as_the_kernel_writes_them(
        baked: tuple[types.ModuleType, Path]) -> None:
    _, package = baked
    fixture = load_fixture(package / "fixtures" / "pcicpus-4.yaml")
    files = fixture.host.files
    nodes: dict[str, set[frozenset[int]]] = {}
    for path, bus in ((p, t.strip()) for p, t in files.items() if p.endswith("/pci_bus_id")):
        listed, masked = cpu_set(files[f"{PCI}/{bus}/local_cpulist"]), mask_set(files[f"{PCI}/{bus}/local_cpus"])
        assert listed and listed == masked, (bus, listed, masked)  # one CPU set, in the kernel's two forms
        nodes.setdefault(files[path.rsplit("/", 1)[0] + "/numa_node"].strip(), set()).add(listed)
    assert len(nodes) == 2 and all(len(cpus) == 1 for cpus in nodes.values())  # a node's devices share its CPUs
    assert not set.intersection(*(set(next(iter(c))) for c in nodes.values()))


def test_s3s_edit_reading_the_mask_as_a_list_is_refused(baked: tuple[types.ModuleType, Path]) -> None:
    module, package = baked

    def topology(host: rayaccel.Host, devices: list[rayaccel.Device]) -> rayaccel.Topology:
        return _cpus_from(host, module.rayaccel_topology(host, devices), devices, str.strip)  # s3: as written

    subject = wrapped(module, "pcicpus", str(package), rayaccel_topology=topology)
    with pytest.raises(CheckFailed) as failed:
        CHECKS["RAC202"].function(subject, "pcicpus/pcicpus-4")
    said = str(failed.value)
    assert "affinities/0/cpus" in said and "not a Linux CPU list" in said and "'0000ffff'" in said, said


def test_the_mask_read_as_a_mask_passes_as_the_cpus_the_host_states(baked: tuple[types.ModuleType, Path]) -> None:
    module, package = baked

    def topology(host: rayaccel.Host, devices: list[rayaccel.Device]) -> rayaccel.Topology:
        return _cpus_from(host, module.rayaccel_topology(host, devices), devices,
                          lambda text: rayaccel.format_cpu_list(rayaccel.cpus_from_mask(text)))

    subject = wrapped(module, "pcicpus", str(package), rayaccel_topology=topology)
    said = str(CHECKS["RAC257"].function(subject, "pcicpus/pcicpus-4"))
    assert "4 CPU lists, each the kernel's text" in said, said
    # The template as baked states no CPUs: RAC257 still grades the lists the host states.
    plain = wrapped(module, "pcicpus", str(package))
    assert "0 CPU lists" in str(CHECKS["RAC257"].function(plain, "pcicpus/pcicpus-4"))
