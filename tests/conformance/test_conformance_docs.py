"""docs/conformance.md keeps up with the check registry: every check has its anchor, ID, tier and title
there, the docs name no check that does not exist, and every check is shown failing or passing by a test."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from rayaccel_conformance.checks import all_checks
from rayaccel_conformance.registry import TIERS

ROOT = Path(__file__).parents[2]
DOCS = (ROOT / "docs" / "conformance.md").read_text(encoding="utf-8")
CHECKS = all_checks()


def section(check_id: str) -> str:
    start = DOCS.index(f'<a id="{check_id.lower()}"></a>')
    end = DOCS.find('<a id="', start + 1)
    return DOCS[start:end if end != -1 else None]


@pytest.mark.parametrize("check", CHECKS, ids=lambda c: c.id)
def test_every_check_has_its_docs_entry_with_tier_and_title(check) -> None:  # type: ignore[no-untyped-def]
    assert f'<a id="{check.anchor}"></a>' in DOCS, f"{check.id} has no anchor in docs/conformance.md"
    text = section(check.id)
    assert f"### {check.id}: {check.title}" in text
    assert f"Tier: **{check.tier}**" in text


@pytest.mark.parametrize("check", CHECKS, ids=lambda c: c.id)
def test_every_check_has_a_tier_matching_its_id_and_a_help_text(check) -> None:  # type: ignore[no-untyped-def]
    assert check.tier in TIERS
    assert check.tier == TIERS[int(check.id[3]) - 1]
    assert len(check.help.splitlines()) > 2 and "Fix:" in check.help, f"{check.id}: the help must say how to fix it"


def test_the_docs_name_no_unknown_check() -> None:
    known = {c.id for c in CHECKS}
    assert set(re.findall(r"\bRAC\d{3}\b", DOCS)) <= known


def test_every_check_is_exercised_by_a_test() -> None:
    tests = "".join(p.read_text(encoding="utf-8") for p in Path(__file__).parent.glob("test_conformance_*.py"))
    untested = [c.id for c in CHECKS if f'"{c.id}"' not in tests]
    assert not untested, f"no test names {untested}"
