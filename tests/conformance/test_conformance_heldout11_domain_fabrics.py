"""Held-out grading, round 11 (issue 46, lane Yc): a scale-up domain's members are joined by its fabric, never only
by a network's kind (``invariant a-domain-is-joined-by-its-fabric``, RAC202).

The Gaudi wrapper ``g1`` gave the box's internal scale-up links kind ``roce`` (a NIC's scale-out) where ``gaudi-roce``
names them; only the fixture's expected ``rayaccel.io/interconnect`` label caught it, and with the label edited it
passed. Two corpus shapes whose fixtures expect the code's label: every mesh link given ``roce``, and each link's kind
looked up from its speed. The Gaudi plugin with g1's edit is named too; the reference's passes.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from mutant_grading import failure, mutant, wrapped

import rayaccel_gaudi.plugin
import rayaccel_gaudi.topology
from rayaccel.records import Domain, Link
from rayaccel_conformance.checks.linked_members import FABRIC_INVARIANT, network_joined_member_errors
from rayaccel_conformance.registry import CHECKS, CheckFailed
from rayaccel_testplugins.corpus_domain_fabrics import MeshLinkKindFromSpeed, MeshLinksAsRoce
from rayaccel_testplugins.corpus_linked_members import MACHINE

GAUDI = Path(rayaccel_gaudi.plugin.__file__).parent


@pytest.mark.parametrize(("shape", "kind"), [(MeshLinksAsRoce, "roce"), (MeshLinkKindFromSpeed, "ethernet")])
@pytest.mark.parametrize("machine", ["acme-4", MACHINE])
def test_a_mesh_linked_by_a_network_kind_is_named(shape: type[MeshLinksAsRoce], kind: str, machine: str) -> None:
    said = failure(mutant(shape), "RAC202", machine)
    assert "6 of the 6 linked pairs of domain other 'acme-node-mesh' are linked only by a network's kind " in said
    assert f"-000000000001: {kind}): a scale-up domain is the devices one fabric joins" in said, said
    assert f"invariant {FABRIC_INVARIANT}" in said and "expected" not in said, said


def test_gaudi_with_its_scale_up_links_given_roce_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    own = rayaccel_gaudi.topology.Link

    def as_roce(**fields: object) -> Link:  # g1's one edit: kind roce where gaudi-roce is
        link: Link = own(**{**fields, "kind": "roce" if fields.get("kind") == "gaudi-roce" else fields["kind"]})
        return link

    monkeypatch.setattr(rayaccel_gaudi.topology, "Link", as_roce)
    subject = wrapped(rayaccel_gaudi.plugin, "gaudi", str(GAUDI))
    with pytest.raises(CheckFailed) as failed:
        CHECKS["RAC202"].function(subject, "gaudi/hls-gaudi2")
    assert ("28 of the 28 linked pairs of domain gaudi-scaleup 'hls-gaudi2-node-scaleup' are linked only by a "
            "network's kind") in str(failed.value), str(failed.value)


def test_a_fabric_beside_a_network_and_a_domain_without_links_pass() -> None:
    mesh = Domain(kind="xgmi-hive", id="hive", size=3, members=["a", "b", "c"])
    both = [Link(a="a", b="b", kind="xgmi"), Link(a="a", b="b", kind="roce"), Link(a="b", b="c", kind="pcie")]
    assert network_joined_member_errors(both, [mesh]) == []
    assert network_joined_member_errors([], [mesh]) == []
    outside = [Link(a="a", b="z", kind="roce")]  # a member linked to a device outside the domain
    assert network_joined_member_errors(outside, [mesh]) == []
    assert [FABRIC_INVARIANT in e for e in network_joined_member_errors([Link(a="c", b="a", kind="efa")], [mesh])] \
        == [True]
