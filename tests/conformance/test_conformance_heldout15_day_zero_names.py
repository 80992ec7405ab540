"""Held-out grading, round 15 (issue 46, lane J1): a day-zero fixture states the product name the driver prints, the one
the new SKU matches, never another of the SKU's names (RAC230, and ``rayaccel sku add`` itself).

The sysfs bake ``s3``'s ``rayaccel_fixture_for_sku`` wrote the SKU's marketing name as each card's ``product``. The
cards still resolved to the new SKU by the PCI device id the rewrite also wrote, and RAC230's made-up SKU had its
marketing name equal to its product name, so nothing could tell: it graded ``supported``. Real catalogs give the two
apart (NVIDIA's "H100 SXM5 80GB" is nvidia-smi's "NVIDIA H100 80GB HBM3", Intel's "Gaudi 3 OAM (HL-325L)" hl-smi's
"HL-325L"), and so does RAC230's SKU now; ``rayaccel sku add`` refuses a rewrite whose host states a product name the
SKU's product rules do not match. Two corpus shapes (the marketing name, a name made from the accelerator type) and
s3's edit on the NVIDIA plugin are named; the right rewrite, the NVIDIA plugin as shipped and a name the plugin makes
itself (no text of the host's) pass.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from mutant_grading import failure, graded, mutant, wrapped

import rayaccel_nvidia.plugin
from rayaccel import Device, SkuRecord
from rayaccel.errors import FixtureError
from rayaccel.onboarding.new_sku import add_sku
from rayaccel.onboarding.sku_fixture import misnamed_devices
from rayaccel.records import SkuMatch
from rayaccel_conformance.checks.sku_rewrite import DAY_ZERO_MARKETING_NAME, DAY_ZERO_NAME, day_zero_sku
from rayaccel_conformance.registry import CHECKS, CheckFailed
from rayaccel_testplugins.corpus import Healthy
from rayaccel_testplugins.corpus_day_zero_names import DayZeroMarketingName, DayZeroNameFromType, DayZeroOnboarding

NAMED = "which SKU zz-rac230-day-zero does not match by its product names ['RAC230 Day Zero Chip']"


@pytest.mark.parametrize(("shape", "written"), [(DayZeroMarketingName, DAY_ZERO_MARKETING_NAME),
                                                (DayZeroNameFromType, "ACME Roadrunner R9Z")])
def test_a_day_zero_fixture_naming_the_product_otherwise_is_named(shape: type[Healthy], written: str) -> None:
    said = failure(mutant(shape), "RAC230", "acme-4")
    assert "the host states the product of 4 device(s) (ACME-0000" in said and f"as {written!r}, {NAMED}" in said, said
    assert "they resolve to it by their PCI device id alone" in said and "expected" not in said, said


def test_the_right_rewrite_passes() -> None:
    plugin = DayZeroOnboarding("c-day-zero-onboarding-right")
    evidence = CHECKS["RAC230"].function(graded(plugin), f"{plugin.name}/acme-4")
    assert "every device is of it" in str(evidence)


def test_sku_add_refuses_the_rewrite_writing_nothing() -> None:
    """The SDK's own door: ``rayaccel sku add --dry-run`` refuses it, with nothing written."""
    subject = graded(mutant(DayZeroMarketingName))
    base = SkuRecord(id="acme-r1", marketing_name="ACME Roadrunner R1", accelerator_type="R1", memory_mib=65536,
                     match=SkuMatch(product_names=["ACME Roadrunner R1"], pci_device_ids=["0x0a01"]))
    sku = base.model_copy(update={"id": "acme-r2", "marketing_name": "ACME Roadrunner R2 OAM", "accelerator_type": "R2",
                                  "match": SkuMatch(pci_device_ids=["0x0a02"], product_names=["ACME R2"])})
    with pytest.raises(FixtureError) as refused:
        add_sku(subject.manager, subject.name, sku, dry_run=True)
    assert "as 'ACME Roadrunner R2 OAM', which SKU acme-r2 does not match by its product names ['ACME R2']" in str(
        refused.value)


def marketing_name_as_product(fixture: dict[str, Any], sku: SkuRecord) -> dict[str, Any]:
    """s3's edit on the NVIDIA plugin: NVML's product name written as the SKU's marketing name."""
    named = sku.model_copy(update={"match": sku.match.model_copy(update={"product_names": [sku.marketing_name]})})
    rewritten: dict[str, Any] = rayaccel_nvidia.plugin.rayaccel_fixture_for_sku(fixture, named)
    return rewritten


def test_s3s_edit_on_the_nvidia_plugin_is_named_and_the_plugin_as_shipped_passes() -> None:
    home = str(Path(rayaccel_nvidia.plugin.__file__).parent)
    broken = wrapped(rayaccel_nvidia.plugin, "nvidia", home, rayaccel_fixture_for_sku=marketing_name_as_product)
    with pytest.raises(CheckFailed) as failed:
        CHECKS["RAC230"].function(broken, "nvidia/dgx-h100")
    assert f"as {DAY_ZERO_MARKETING_NAME!r}, {NAMED}" in str(failed.value), failed.value
    shipped = wrapped(rayaccel_nvidia.plugin, "nvidia", home)
    assert "every device is of it" in str(CHECKS["RAC230"].function(shipped, "nvidia/dgx-h100"))


def test_the_day_zero_sku_is_marketed_under_another_name_than_the_driver_prints() -> None:
    base = SkuRecord(id="x1", marketing_name="X1", accelerator_type="X1", match=SkuMatch(product_names=["X1"]))
    sku = day_zero_sku(base, set())
    assert sku.match.product_names == [DAY_ZERO_NAME] and sku.marketing_name not in sku.match.product_names


def test_a_name_the_plugin_makes_or_a_pattern_matches_is_not_misnamed() -> None:
    sku = SkuRecord(id="x9", marketing_name="Cloud X9", accelerator_type="X9",
                    match=SkuMatch(pci_device_ids=["0x0a09"], product_names=["X9"], product_patterns=["^X9 "]))
    host = {"files": {"/sys/class/x/x0/product": "X9 SXM\n", "/sys/class/x/x1/product": "Cloud X9\n"}}
    devices = [Device(index=0, id="d0", product_name="X9 SXM"), Device(index=1, id="d1", product_name="X9 v9"),
               Device(index=2, id="d2", product_name="Cloud X9")]
    # d0 by its pattern; d1's name is the plugin's own (from a generation, no text of the host's); d2 misnamed.
    wrong = misnamed_devices(devices, sku, host)
    assert len(wrong) == 1 and "1 device(s) (d2) as 'Cloud X9'" in wrong[0], wrong
