"""RAC230: a fixture the plugin rewrites for a new SKU (``rayaccel_fixture_for_sku``) is of that SKU. ACME's
rewrite passes; two defects of different shape fail naming the invariant (a memory size left as the base
card's; only the first card rewritten); a plugin without the hook is not applicable."""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from rayaccel import SkuRecord, hookimpl
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


def test_the_fleet_is_discovered_once_per_run_and_afresh_when_a_fixture_changes(tmp_path: Path) -> None:
    # `rayaccel sku add` refuses a SKU that re-types a device of the plugin's fleet (every fixture it ships): the
    # fleet is the same for each of a run's fixtures, so RAC230 discovers it once, and again once a fixture changes.
    shipped = Path(acme_onboard.__file__).parent / "acme_fixtures" / "acme-4.yaml"
    for name in ("acme-4", "acme-4b", "acme-4c"):
        (tmp_path / f"{name}.yaml").write_text(shipped.read_text(encoding="utf-8").replace(
            "name: acme-4\n", f"name: {name}\n"), encoding="utf-8")
    discovered: list[object] = []

    @hookimpl
    def rayaccel_discover(host: Any) -> Any:
        discovered.append(host)
        return acme_onboard.rayaccel_discover(host)

    manager = PluginManager(autoload=False)
    hooks = {name: getattr(acme_onboard, name) for name in dir(acme_onboard) if name.startswith("rayaccel_")}
    hooks.update(rayaccel_discover=rayaccel_discover, rayaccel_fixture_dirs=hookimpl(lambda: [str(tmp_path)]))
    assert manager.register(SimpleNamespace(**hooks), "acme"), manager.problems
    subject = Subject("acme", manager)

    def discoveries(fixture: str) -> int:
        before = len(discovered)
        result = subject.run(RAC230, fixture)
        assert result.outcome == "passed", result.evidence
        return len(discovered) - before

    first = discoveries("acme/acme-4")
    assert discoveries("acme/acme-4b") == discoveries("acme/acme-4c") == first - 3  # the three fixtures' once
    (tmp_path / "acme-4c.yaml").write_text((tmp_path / "acme-4c.yaml").read_text(encoding="utf-8").replace(
        "description: 4 ACME R1 cards", "description: 4 ACME R1 cards, changed"), encoding="utf-8")
    assert discoveries("acme/acme-4b") == first  # a fixture changed: the fleet discovered afresh
