"""RAC215: a link bandwidth off by the bit/byte factor from the SKU catalog's declared link bandwidth fails,
naming the slip, on every variant of the fixture; the reference NVIDIA plugin's NVLink bandwidths (GB/s) pass
against its catalog. RAC215 owns every comparison with the catalog; RAC217 (the kind's fastest product) none."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml
from mutant_grading import replaced

from rayaccel.catalog import load_catalog
from rayaccel.plugins.manager import PluginManager
from rayaccel_conformance.checks import all_checks
from rayaccel_conformance.harness.subject import Subject
from rayaccel_testplugins import acme, acme_onboard

RAC215 = next(c for c in all_checks() if c.id == "RAC215")


def acme_with_declared(tmp_path: Path, declared_gbytes_per_s: float) -> PluginManager:
    """ACME (its sysfs links read 100) with a catalog declaring the SKU's fastest link."""
    catalog = yaml.safe_load((acme.HERE / "acme-skus.yaml").read_text())
    catalog["skus"][0]["link_bandwidth_gbytes_per_s"] = declared_gbytes_per_s
    (tmp_path / "acme-skus.yaml").write_text(yaml.safe_dump(catalog))
    shutil.copytree(acme.HERE / "acme_fixtures", tmp_path / "acme_fixtures")
    return replaced(acme_onboard, "acme", rayaccel_sku_catalog=lambda: load_catalog(tmp_path / "acme-skus.yaml"),
                    rayaccel_fixture_dirs=lambda: [str(tmp_path / "acme_fixtures")]).manager


@pytest.mark.parametrize(("declared", "outcome", "said"), [
    (100.0, "passed", "6 links within the catalog's declared GB/s as recorded"),
    (12.5, "failed", "is 100 GB/s, 8x the 12.5 GB/s SKU acme-r1 declares: Gbit/s taken for GB/s? divide by 8"),
    (800.0, "failed", "an eighth of the 800 GB/s SKU acme-r1 declares: is the catalog's link_bandwidth_gbytes_per_s "
                      "in Gbit/s?"),
    (50.0, "failed", "invariant link-within-sku-maximum, acme/acme-4 as recorded: link"),  # twice: no direction
    (50.0, "failed", "is 100 GB/s, twice the 50 GB/s SKU acme-r1 declares (link_bandwidth_gbytes_per_s)"),
    (75.0, "failed", "faster than the 75 GB/s SKU acme-r1 declares"),
])
def test_a_link_off_by_the_bit_byte_factor_is_named(tmp_path: Path, declared: float, outcome: str, said: str) -> None:
    result = Subject("acme", acme_with_declared(tmp_path, declared)).run(RAC215, "acme/acme-4")
    assert result.outcome == outcome, result.evidence
    assert any(said in str(line) for line in result.evidence), result.evidence


def test_a_catalog_without_a_declared_bandwidth_is_not_applicable_and_nvidia_passes() -> None:
    manager = PluginManager(autoload=True)
    graded = {ref: Subject("nvidia", manager).run(RAC215, ref) for ref in ("nvidia/dgx-h100", "nvidia/hgx-b200")}
    assert {ref: r.outcome for ref, r in graded.items()} == {"nvidia/dgx-h100": "passed", "nvidia/hgx-b200": "passed"}
    assert "28 links within" in graded["nvidia/dgx-h100"].evidence[0]
    skipped = Subject("amd", manager).run(RAC215, "amd/mi300x-8")
    assert skipped.outcome == "skipped" and "declares no link_bandwidth_gbytes_per_s" in skipped.evidence[0]


def test_the_catalog_comparison_is_rac215s_alone(tmp_path: Path) -> None:
    """RAC217 holds links to their kind's fastest product only: a link the catalog calls 8x too fast is RAC215's
    finding, not a second failure of RAC217 (ACME's links are of kind 'other', which has no known fastest product)."""
    rac217 = next(c for c in all_checks() if c.id == "RAC217")
    subject = Subject("acme", acme_with_declared(tmp_path, 12.5))
    assert subject.run(RAC215, "acme/acme-4").outcome == "failed"
    result = subject.run(rac217, "acme/acme-4")
    assert result.outcome == "skipped" and "no link of a kind with a known fastest product" in result.evidence[0]
