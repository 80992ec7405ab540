"""RAC230: a fixture the plugin rewrites for a new SKU (``rayaccel_fixture_for_sku``) is of that SKU. ACME's
rewrite passes; two defects of different shape fail naming the invariant (a memory size left as the base
card's; only the first card rewritten); a plugin without the hook is not applicable."""

from __future__ import annotations

import copy
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import pytest

from rayaccel import SkuRecord
from rayaccel.plugins.manager import PluginManager
from rayaccel_conformance.checks import all_checks
from rayaccel_conformance.harness.subject import Subject
from rayaccel_testplugins import acme_onboard

RAC230 = next(c for c in all_checks() if c.id == "RAC230")
Rewrite = Callable[[dict[str, Any], SkuRecord], dict[str, Any]]


def names_only(fixture: dict[str, Any], sku: SkuRecord) -> dict[str, Any]:
    """The defect: the product name is rewritten, the memory size stays the base card's."""
    data = copy.deepcopy(fixture)
    for path in [p for p in data["host"]["files"] if p.endswith("/product")]:
        data["host"]["files"][path] = sku.match.product_names[0] + "\n"
    return data


def first_card_only(fixture: dict[str, Any], sku: SkuRecord) -> dict[str, Any]:
    """The defect: the rewrite stops at the first card it meets."""
    whole = acme_onboard.rayaccel_fixture_for_sku(fixture, sku)
    data = copy.deepcopy(fixture)
    card = next(p.rsplit("/", 1)[0] for p in sorted(data["host"]["files"]) if p.endswith("/product"))
    data["host"]["files"].update({p: v for p, v in whole["host"]["files"].items() if p.startswith(card + "/")})
    return data


def acme_with(rewrite: Rewrite | None) -> Subject:
    hooks = {name: getattr(acme_onboard, name) for name in dir(acme_onboard) if name.startswith("rayaccel_")}
    if rewrite is None:
        del hooks["rayaccel_fixture_for_sku"]
    else:
        hooks["rayaccel_fixture_for_sku"] = rewrite
    manager = PluginManager(autoload=False)
    assert manager.register(SimpleNamespace(**hooks), "acme"), manager.problems
    return Subject("acme", manager)


@pytest.mark.parametrize(("rewrite", "said"), [
    (names_only, "memory"),
    (first_card_only, "sku"),
])
def test_a_rewrite_that_misses_a_place_fails_naming_the_invariant(rewrite: Rewrite, said: str) -> None:
    result = acme_with(rewrite).run(RAC230, "acme/acme-4")
    assert result.outcome == "failed", result.evidence
    text = result.evidence[0]
    assert "invariant 'a fixture rewritten for a SKU is of that SKU' broken on acme/acme-4" in text
    assert "rewritten from acme-r1 to zz-rac230-day-zero" in text and said in text.lower(), text


def test_acmes_rewrite_passes_and_a_plugin_without_the_hook_is_not_applicable() -> None:
    passed = acme_with(acme_onboard.rayaccel_fixture_for_sku).run(RAC230, "acme/acme-4")
    assert passed.outcome == "passed", passed.evidence
    assert "acme/acme-4 rewritten from acme-r1 to a new SKU" in passed.evidence[0]
    skipped = acme_with(None).run(RAC230, "acme/acme-4")
    assert skipped.outcome == "skipped" and "does not implement rayaccel_fixture_for_sku" in skipped.evidence[0]
