"""RAC230: a fixture the plugin rewrites for a new SKU (``rayaccel_fixture_for_sku``) is of that SKU. ACME's
rewrite passes; two defects of different shape fail naming the invariant (a memory size left as the base
card's; only the first card rewritten); a plugin without the hook is not applicable. A plugin whose memory metric
has a source of its own (amdgpu's ``mem_info_vram_total``, bytes) fails where the rewrite leaves that source as
the base card's or writes it in MiB, on a fixture stating no metric values."""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from mutant_grading import replaced

from rayaccel import MetricSample, SkuRecord, hookimpl
from rayaccel_conformance.checks import all_checks
from rayaccel_conformance.harness.subject import Subject
from rayaccel_testplugins import acme_onboard
from rayaccel_testplugins.acme import SYSFS

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
    return replaced(acme_onboard, "acme", rayaccel_fixture_for_sku=rewrite)  # None: the hook left out


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

    subject = replaced(acme_onboard, "acme", rayaccel_discover=rayaccel_discover,
                       rayaccel_fixture_dirs=hookimpl(lambda: [str(tmp_path)]))

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


# The memory metric's own source: amdgpu's sysfs ``mem_info_vram_total`` (bytes) beside the card's size -------------

VRAM_TOTAL = "mem_info_vram_total"


@hookimpl
def vram_file_metrics(host: Any, devices: list[Any]) -> list[MetricSample]:
    """ACME's memory_total read from the driver's byte count, as amdgpu's sysfs gives it, not from memory_mib."""
    return [MetricSample(device=d.id, name="memory_total", unit="bytes",
                         value=float(host.read_text(f"{SYSFS}/acme{d.index}/{VRAM_TOTAL}").strip())) for d in devices]


def with_vram_file(rewrite_vram: Callable[[SkuRecord], str] | None) -> Rewrite:
    """ACME's rewrite, and the byte count written by ``rewrite_vram`` (None: left as the base card's)."""
    def rewrite(fixture: dict[str, Any], sku: SkuRecord) -> dict[str, Any]:
        data: dict[str, Any] = acme_onboard.rayaccel_fixture_for_sku(fixture, sku)
        files: dict[str, str] = data["host"]["files"]
        for path in [p for p in files if p.endswith(f"/{VRAM_TOTAL}")]:
            if rewrite_vram is not None:
                files[path] = rewrite_vram(sku)
        return data
    return rewrite


def acme_with_vram_file(tmp_path: Path, rewrite: Rewrite) -> Subject:
    shipped = yaml.safe_load((Path(acme_onboard.__file__).parent / "acme_fixtures" / "acme-4.yaml").read_text(
        encoding="utf-8"))
    cards = [p.rsplit("/", 1)[0] for p in shipped["host"]["files"] if p.endswith("/memory_mib")]
    shipped["host"]["files"].update({f"{card}/{VRAM_TOTAL}": f"{65536 * 2**20}\n" for card in cards})
    (tmp_path / "acme-4.yaml").write_text(yaml.safe_dump(shipped), encoding="utf-8")
    return replaced(acme_onboard, "acme", rayaccel_fixture_for_sku=rewrite, rayaccel_metrics=vram_file_metrics,
                    rayaccel_fixture_dirs=hookimpl(lambda: [str(tmp_path)]))


@pytest.mark.parametrize(("vram", "said"), [
    (None, "memory_total 6.87195e+10 bytes, but memory_mib 132096"),  # the byte count left as the base card's
    (lambda sku: f"{sku.memory_mib}\n", "memory_total 132096 bytes, but memory_mib 132096"),  # MiB where bytes
])
def test_a_rewrite_that_misses_a_metrics_source_fails_naming_the_invariant(
        tmp_path: Path, vram: Callable[[SkuRecord], str] | None, said: str) -> None:
    # The shipped fixture states no metric values, so the dry run compares none: the metric against the
    # rewritten device's own size (RAC218's invariant, on the rewritten machine) is what names the miss.
    result = acme_with_vram_file(tmp_path, with_vram_file(vram)).run(RAC230, "acme/acme-4")
    assert result.outcome == "failed", result.evidence
    text = result.evidence[0]
    assert "the rewritten machine's metrics disagree with its devices: invariant memory-total-is-the-device's, " \
           "acme/acme-4 rewritten for zz-rac230-day-zero" in text and said in text, text


def test_a_rewrite_of_the_metrics_source_in_its_own_unit_passes(tmp_path: Path) -> None:
    whole = with_vram_file(lambda sku: f"{(sku.memory_mib or 0) * 2**20}\n")
    result = acme_with_vram_file(tmp_path, whole).run(RAC230, "acme/acme-4")
    assert result.outcome == "passed", result.evidence
