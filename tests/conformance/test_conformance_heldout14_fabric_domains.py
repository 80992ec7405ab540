"""Held-out grading, round 14 (issue 46, lane K2): a domain whose kind names a fabric has its members joined by that
fabric's links (``invariant a-domain-is-joined-by-its-fabric``, RAC202).

The AMD wrapper ``a1`` built the xGMI hive from every peer link, PCIe's too, so an MI210 or MI50 pair linked by PCIe
alone became an ``xgmi-hive`` of two; only the fixtures' expected labels caught it, and with them edited (``a1e``) it
passed. Two corpus shapes whose fixtures expect the code's labels: an AMD-named family calling the mesh of its
driver's links (kind ``other``) an ``xgmi-hive``, a Gaudi-named one calling its PCIe-linked mesh ``gaudi-scaleup``.
The AMD plugin with a1's edit is named too; the reference passes.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest
from mutant_grading import failure, mutant, wrapped

import rayaccel_amd.plugin
import rayaccel_amd.topology
from rayaccel.records import Domain, Link
from rayaccel_conformance.checks.linked_members import FABRIC_INVARIANT, off_fabric_member_errors
from rayaccel_conformance.registry import CHECKS, CheckFailed
from rayaccel_testplugins.corpus_fabric_domains import AmdHiveOfDriverLinks, GaudiScaleupOfPcieLinks
from rayaccel_testplugins.corpus_linked_members import MACHINE

AMD = Path(rayaccel_amd.plugin.__file__).parent


@pytest.mark.parametrize(("shape", "kind", "fabric", "links"),
                         [(AmdHiveOfDriverLinks, "xgmi-hive", "xgmi", "other"),
                          (GaudiScaleupOfPcieLinks, "gaudi-scaleup", "gaudi-roce", "pcie")])
@pytest.mark.parametrize("machine", ["acme-4", MACHINE])
def test_a_domain_named_for_a_fabric_its_links_are_not_is_named(shape: type[AmdHiveOfDriverLinks], kind: str,
                                                                fabric: str, links: str, machine: str) -> None:
    said = failure(mutant(shape), "RAC202", machine)
    assert f"domain {kind} 'acme-node-mesh' (size 4) names the {fabric} fabric, but 3 of its 4 members" in said, said
    assert f"the plugin links its members by {links} (6 links)" in said, said
    assert f"invariant {FABRIC_INVARIANT}" in said and "expected" not in said, said


@pytest.mark.parametrize("fixture", ["amd/mi210-pair", "amd/mi50-pair"])
def test_amd_with_its_hive_built_from_every_peer_link_is_named(monkeypatch: pytest.MonkeyPatch, fixture: str) -> None:
    own = rayaccel_amd.topology._hives

    def every_link(hive_ids: dict[str, str | None], order: list[str], links: Sequence[Link],
                   host_name: str) -> list[Domain]:  # a1's one edit: the hive from every link, PCIe's too
        hives: list[Domain] = own(hive_ids, order, [ln.model_copy(update={"kind": "xgmi"}) for ln in links], host_name)
        return hives

    subject = wrapped(rayaccel_amd.plugin, "amd", str(AMD))
    CHECKS["RAC202"].function(subject, fixture)  # the reference passes
    monkeypatch.setattr(rayaccel_amd.topology, "_hives", every_link)
    with pytest.raises(CheckFailed) as failed:
        CHECKS["RAC202"].function(subject, fixture)
    said = str(failed.value)
    assert "(size 2) names the xgmi fabric, but 1 of its 2 members here" in said, said
    assert "the plugin links its members by pcie (1 link)" in said, said


def test_a_fabric_path_a_domain_without_links_and_an_unnamed_kind_pass() -> None:
    hive = Domain(kind="xgmi-hive", id="hive", size=3, members=["a", "b", "c"])
    chain = [Link(a="a", b="b", kind="xgmi"), Link(a="b", b="c", kind="xgmi"), Link(a="a", b="c", kind="pcie")]
    assert off_fabric_member_errors(chain, [hive]) == []  # c reaches a through b
    assert off_fabric_member_errors([], [hive]) == []  # linked to none of each other: not judged
    mesh = hive.model_copy(update={"kind": "other"})
    assert off_fabric_member_errors([Link(a="a", b="b", kind="pcie")], [mesh]) == []
    switch = Domain(kind="nvswitch", id="sw", size=2, members=["a", "b"])
    assert off_fabric_member_errors([Link(a="a", b="b", kind="nvlink")], [switch]) == []
    one_off = [Link(a="a", b="b", kind="xgmi"), Link(a="b", b="c", kind="pcie")]  # c on PCIe alone
    said = off_fabric_member_errors(one_off, [hive])
    assert len(said) == 1 and "1 of its 3 members here (c) has no path of xgmi links to a" in said[0], said
