"""Derived and recomputed expectations stay complete (issue 43): the fixture ``rayaccel sku add`` derives for a
96 GiB card states the machine's readings of that card (RAC206 grades it), RAC206 names a stale value's
source, and ``rayaccel fixture expect --write`` proposes values for every key a fixture states, never
dropping one, keeping the file's comments.

Everything runs on a copy of the ACME onboarding plugin in a temporary directory.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml

from rayaccel.catalog import load_catalog
from rayaccel.errors import FixtureError
from rayaccel.onboarding.catalog_file import build_sku_record
from rayaccel.onboarding.new_sku import add_sku
from rayaccel.plugins.manager import PluginManager
from rayaccel_conformance.checks import all_checks
from rayaccel_conformance.harness.subject import Subject
from rayaccel_testplugins import acme, acme_onboard

GIB = 2**30
RAC206 = next(c for c in all_checks() if c.id == "RAC206")
IDS = [f"ACME-000{i}-5e1f-4c2a-9d3b-00000000000{i}" for i in range(4)]


@pytest.fixture
def plugin_root(tmp_path: Path) -> Path:
    """The onboarding plugin's catalog and acme-4, whose expectation states the metrics the machine reads."""
    root = tmp_path / "plugin"
    (root / "acme_fixtures").mkdir(parents=True)
    shutil.copy(Path(acme_onboard.__file__), root / "acme_onboard_copy.py")
    shutil.copy(acme.HERE / "acme-skus.yaml", root / "acme-skus.yaml")
    data = yaml.safe_load((acme.HERE / "acme_fixtures" / "acme-4.yaml").read_text())
    data["expected"]["metrics"] = ["memory_total"]
    data["expected"]["metric_values"] = {device: {"memory_total": 64 * GIB} for device in IDS}
    (root / "acme_fixtures" / "acme-4.yaml").write_text("# the lab's 64 GiB node: keep this comment\n"
                                                         + yaml.safe_dump(data, sort_keys=False))
    return root


def manager_for(root: Path) -> PluginManager:
    hooks = {name: getattr(acme_onboard, name) for name in dir(acme_onboard) if name.startswith("rayaccel_")}
    hooks["rayaccel_sku_catalog"] = lambda: load_catalog(root / "acme-skus.yaml")
    hooks["rayaccel_fixture_dirs"] = lambda: [str(root / "acme_fixtures")]
    manager = PluginManager(autoload=False)
    assert manager.register(SimpleNamespace(**hooks), "acme"), manager.problems
    return manager


def test_a_derived_fixture_states_the_new_cards_readings_and_rac206_grades_it(plugin_root: Path) -> None:
    manager = manager_for(plugin_root)
    sku = build_sku_record(sku_id="acme-r1-96g", marketing_name="ACME Roadrunner R1 96G", accelerator_type="R1-96G",
                           product_names=["ACME Roadrunner R1 96G"], memory_mib=96 * 1024)
    done = add_sku(manager, "acme", sku)
    expected = done.fixture_data["expected"]
    assert expected["metric_values"] == {device: {"memory_total": 96 * GIB} for device in IDS}
    assert expected["metrics"] == ["memory_total"]
    assert expected["labels"]["rayaccel.io/memory-mib"] == "98304"

    outcome = Subject("acme", manager).run(RAC206, "acme/acme-r1-96g")
    assert outcome.outcome == "passed", outcome.evidence

    # The base card's value left in (what sku add wrote before): RAC206 blames the fixture, not the plugin.
    stale = yaml.safe_load(done.fixture_path.read_text())
    stale["expected"]["metric_values"][IDS[0]]["memory_total"] = 64 * GIB
    done.fixture_path.write_text(yaml.safe_dump(stale, sort_keys=False))
    outcome = Subject("acme", manager_for(plugin_root)).run(RAC206, "acme/acme-r1-96g")
    assert outcome.outcome == "failed"
    [line] = outcome.evidence
    assert "agrees with the device's 98304 MiB, so the fixture's value is stale (derived by rayaccel sku add" in line
    assert "rayaccel fixture expect acme/acme-r1-96g --write" in line and "conversion" not in line


def test_the_catalogs_interconnect_names_a_fabric_of_kind_other(plugin_root: Path) -> None:
    """ACME's links are of kind 'other': a SKU whose catalog entry names its fabric labels the node with it."""
    sku = build_sku_record(sku_id="acme-q1", marketing_name="ACME Q1", accelerator_type="Q1",
                           product_names=["ACME Q1"], interconnect="qlink")
    done = add_sku(manager_for(plugin_root), "acme", sku, dry_run=True)  # the new fixture's inventory agreed
    assert done.fixture_data["expected"]["labels"]["rayaccel.io/interconnect"] == "qlink"


def test_a_catalog_interconnect_reading_as_a_link_kind_over_links_of_kind_other_is_refused(plugin_root: Path) -> None:
    """ACME's links are of kind 'other': a SKU whose catalog calls its fabric `pcie5` would label the node as if
    its cards talked PCIe. The inventory warns (interconnect-names-a-link-kind), so sku add refuses, writing nothing."""
    sku = build_sku_record(sku_id="acme-q2", marketing_name="ACME Q2", accelerator_type="Q2",
                           product_names=["ACME Q2"], interconnect="pcie5")
    before = sorted(path.name for path in (plugin_root / "acme_fixtures").iterdir())
    with pytest.raises(FixtureError) as refused:
        add_sku(manager_for(plugin_root), "acme", sku)
    said = str(refused.value)
    assert "interconnect-names-a-link-kind" in said and "'pcie5', which reads as link kind 'pcie'" in said, said
    assert "nothing was written" in said
    assert sorted(path.name for path in (plugin_root / "acme_fixtures").iterdir()) == before


def test_fixture_expect_write_keeps_every_stated_key_and_comment(plugin_root: Path) -> None:
    path = plugin_root / "acme_fixtures" / "acme-4.yaml"
    data = yaml.safe_load(path.read_text())
    data["expected"]["metric_values"][IDS[1]]["memory_total"] = 48 * GIB  # stale: the card has 64 GiB
    data["expected"]["problems"] = ["unknown-sku"]  # stated, and no longer reported
    path.write_text("# the lab's 64 GiB node: keep this comment\n" + yaml.safe_dump(data, sort_keys=False)
                    .replace("  metrics:\n", "  # RAC206 grades these\n  metrics:\n"))
    env = {**os.environ, "RAYACCEL_NO_AUTOLOAD": "1", "RAYACCEL_PLUGINS": "acme=acme_onboard_copy",
           "PYTHONPATH": os.pathsep.join([str(plugin_root), os.environ.get("PYTHONPATH", "")])}
    shown = subprocess.run([sys.executable, "-m", "rayaccel", "fixture", "expect", str(path)], env=env,
                           capture_output=True, text=True, timeout=120)
    assert shown.returncode == 0, shown.stderr
    assert f'-      "memory_total": {48 * GIB}' in shown.stdout and f'+      "memory_total": {64 * GIB}' in shown.stdout
    assert '-    "metrics"' not in shown.stdout  # proposed as it is, never removed

    written = subprocess.run([sys.executable, "-m", "rayaccel", "fixture", "expect", str(path), "--write"], env=env,
                             capture_output=True, text=True, timeout=120)
    assert written.returncode == 0, written.stderr
    text = path.read_text()
    assert text.startswith("# the lab's 64 GiB node: keep this comment\n") and "# RAC206 grades these" in text
    expected = yaml.safe_load(text)["expected"]
    assert expected["metrics"] == ["memory_total"]
    assert expected["metric_values"] == {device: {"memory_total": 64 * GIB} for device in IDS}
    assert expected["problems"] == []  # the stated key stays, with the recomputed value
    assert expected["labels"]["rayaccel.io/sku"] == "acme-r1"


def test_stated_device_fields_follow_the_new_sku_and_partition_slices_are_not_carried_over() -> None:
    """What the SKU record decides is the SKU's; an AMD GPU's XCDs or a MIG profile's slices follow from the
    product, which a new SKU's record cannot say, so they are dropped; anything else is kept (a fault's too)."""
    from rayaccel.onboarding.sku_fixture import sku_device_fields
    from rayaccel.records import SkuRecord

    sku = SkuRecord.model_validate({"id": "zz", "marketing_name": "ACME Z", "accelerator_type": "ACME-Z",
                                    "memory_mib": 4096, "match": {"pci_device_ids": ["0xfe30"]}})
    stated = {"GPU-0": {"pci_device_id": "0x74a1", "memory_mib": 196592, "serial": "0x1",
                        "partition_capacity.compute_slices": 8, "partition.3.compute_slices": 1,
                        "partition.3.memory_mib": 24574, "partition.3.uuid": "1a03"}}
    assert sku_device_fields(stated, sku) == {"GPU-0": {"pci_device_id": "0xfe30", "memory_mib": 4096,
                                                        "serial": "0x1", "partition.3.uuid": "1a03"}}
