"""Held-out grading, round 15 (issue 46, lane J4): a device whose fabric record names another group is not in this one
(RAC202's ``invariant a-device-of-another-group-is-no-member``).

``n2`` (an NVIDIA wrapper) named its NVLink clique by the fabric's cluster UUID alone, ``nvmlDeviceGetGpuFabricInfoV``'s
``cliqueId`` dropped, so two NVLink partitions of one cluster became one domain. It was killed only through the
GB200 fixtures' expected labels, and ``n2e``, those edited to the code's answer, graded ``supported``. A fabric
manager assigns the partition per GPU, so the check gives one member alone another ``cliqueId`` at the host seam and
requires it out of the others' domain.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from mutant_grading import failure, graded, mutant, wrapped

import rayaccel_nvidia.plugin as nvidia_plugin
from rayaccel import Device, Domain, Host, Topology
from rayaccel_conformance.checks.group_readings import group_identifiers, other_group_member_errors, reading_name
from rayaccel_testplugins.corpus import SYSFS
from rayaccel_testplugins.corpus_group_readings import GROUP_READING_MUTANTS, FabricByClusterAlone

NVIDIA_PACKAGE = Path(nvidia_plugin.__file__).parent
GB200 = ("gb200-nvl72-tray", "gb200-nvl72-tray-08")
INVARIANT = "invariant a-device-of-another-group-is-no-member"


def n2_topology(host: Host, devices: list[Device]) -> Topology:
    """n2's edit: the NVIDIA plugin's cliques gathered by the cluster UUID alone, named by it."""
    topology = nvidia_plugin.rayaccel_topology(host, devices)
    by_cluster: dict[str, list[str]] = {}
    others = []
    for domain in topology.domains:
        if domain.kind == "nvlink-clique":
            by_cluster.setdefault(domain.id.rsplit(".", 1)[0], []).extend(domain.members)
        else:
            others.append(domain)
    cliques = [Domain(kind="nvlink-clique", id=cluster, size=len(members), members=members)
               for cluster, members in by_cluster.items()]
    return topology.model_copy(update={"domains": [*others, *cliques]})


def nvidia_errors(machine: str, **hooks: object) -> list[str]:
    subject = wrapped(nvidia_plugin, "nvidia", str(NVIDIA_PACKAGE), **hooks)
    fx = subject.fixture(f"nvidia/{machine}")
    family = subject.inventory(fx.ref).family("nvidia")
    assert family is not None
    return other_group_member_errors(subject, fx, family, "nvidia")


@pytest.mark.parametrize("machine", GB200)
def test_n2s_clique_by_cluster_alone_is_named(machine: str) -> None:
    errors = nvidia_errors(machine, rayaccel_topology=n2_topology)
    assert errors and INVARIANT in errors[0] and "cliqueId=32766" in errors[0], errors


@pytest.mark.parametrize("machine", GB200)
def test_the_nvidia_plugin_moves_a_gpu_of_another_clique_out(machine: str) -> None:
    assert nvidia_errors(machine) == []


def test_only_identifiers_the_members_share_beside_the_id_are_moved() -> None:
    """NVML's fabric record states cliqueId, state and status alike for every GPU of the tray: the identifier alone
    is a group's; the GPU's own UUID and its product's PCI device id are in no record stating the domain's id."""
    subject = wrapped(nvidia_plugin, "nvidia", str(NVIDIA_PACKAGE))
    fx = subject.fixture(f"nvidia/{GB200[0]}")
    family = subject.inventory(fx.ref).family("nvidia")
    assert family is not None
    (domain,) = family.topology.domains
    members = [d for d in family.devices if d.id in domain.members]
    found = group_identifiers(fx.host.model_dump(mode="json"), domain, members)
    assert [{reading_name(r) for r in readings} for readings in found] == [{"cliqueId"}]


@pytest.mark.parametrize("cls", GROUP_READING_MUTANTS, ids=lambda c: c.__name__)
def test_corpus_shapes_are_named(cls: type) -> None:
    message = failure(mutant(cls), "RAC202", "acme-4")
    assert INVARIANT in message and "alone made 8" in message, message


class FabricByClusterAndPartition(FabricByClusterAlone):
    """The files' shape done right: one domain per cluster and partition."""

    def rayaccel_topology(self, host: Host, devices: list[Device]) -> Topology:
        topology = super(FabricByClusterAlone, self).rayaccel_topology(host, devices)
        groups: dict[str, list[str]] = {}
        for device in devices:
            base = f"{SYSFS}/acme{device.index}/fabric"
            if host.exists(f"{base}/cluster_uuid") and host.exists(f"{base}/partition_id"):
                cluster, partition = (host.read_text(f"{base}/{name}").strip() for name in ("cluster_uuid",
                                                                                             "partition_id"))
                groups.setdefault(f"{cluster}.{partition}", []).append(device.id)
        domains = [Domain(kind="other", id=key, size=len(ids), members=ids) for key, ids in groups.items()
                   if len(ids) > 1]
        return topology.model_copy(update={"domains": [*topology.domains, *domains]})


def test_a_domain_per_cluster_and_partition_passes() -> None:
    plugin = FabricByClusterAndPartition(mutant(FabricByClusterAlone).name)
    subject = graded(plugin)
    fx = subject.fixture(f"{plugin.name}/acme-4")
    family = subject.inventory(fx.ref).family(subject.family().name)
    assert family is not None and family.topology.domains
    assert other_group_member_errors(subject, fx, family, subject.family().name) == []
