"""Held-out grading, round 10 (issue 46, lane F3): a device with every link of its fabric gone is no member of the
fabric's domain (``invariant a-member-without-links-is-no-member``).

The Gaudi wrapper ``g2`` put every present module in the box's scale-up domain, also one whose 21 internal RoCE
ports are all DOWN (hls-gaudi2's fault ``scale-up-ports-all-down``, whose expectation states health only). Two
corpus shapes reach the same defect on ACME's mesh: every card given, and the cards whose state reads ok.
"""

from __future__ import annotations

import pytest
from mutant_grading import evidence, failure, mutant

from rayaccel.records import Domain, Link
from rayaccel_conformance.checks.linked_members import INVARIANT, unlinked_member_errors
from rayaccel_testplugins.corpus_linked_members import MACHINE, MeshOfEveryCard, MeshOfHealthyCards, MeshOfLinkedCards

CARD2 = "ACME-0002-5e1f-4c2a-9d3b-000000000002"


@pytest.mark.parametrize("shape", [MeshOfEveryCard, MeshOfHealthyCards])
def test_a_card_without_links_kept_in_the_mesh_is_named(shape: type[MeshOfEveryCard]) -> None:
    said = failure(mutant(shape), "RAC203", MACHINE)
    assert f"fault links-gone-2: device {CARD2} is a member of domain other " in said, said
    assert "but has no link to any of its 3 other members" in said and INVARIANT in said, said


def test_the_mesh_of_linked_cards_passes() -> None:
    right = MeshOfLinkedCards("c-mesh-of-linked-cards")
    assert "links-gone-2" in evidence(right, "RAC203", MACHINE)
    evidence(right, "RAC202", MACHINE)


def test_a_domain_whose_members_share_no_link_here_is_not_judged() -> None:
    """A slice known from metadata, its chips' links not reported: nothing says a member is cut off."""
    domain = Domain(kind="other", id="slice", size=4, members=["a", "b"])
    assert unlinked_member_errors([], [domain]) == []
    linked = [Link(a="a", b="b", kind="other")]
    assert unlinked_member_errors(linked, [domain]) == []
    three = domain.model_copy(update={"members": ["a", "b", "c"]})
    assert [INVARIANT in e and "device c " in e for e in unlinked_member_errors(linked, [three])] == [True]
