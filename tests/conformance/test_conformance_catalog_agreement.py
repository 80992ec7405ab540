"""RAC231 (a device's PCI device id is one its SKU lists) and RAC232 (the fastest link of a healthy node reaches
the SKU's declared link bandwidth), on ACME with a catalog that declares both: the plugin as it reads the
machine passes; two defects of different shape each fail naming the invariant and the values."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from mutant_grading import replaced

from rayaccel import Device, Topology
from rayaccel.catalog import load_catalog
from rayaccel_conformance.checks import all_checks
from rayaccel_conformance.harness.subject import Subject
from rayaccel_testplugins import acme, acme_onboard

CHECKS = {c.id: c for c in all_checks()}
PCI_ID = "0x0a01"  # the card's id in the catalog below
Discover = Callable[[Any], list[Device]]
TopologyHook = Callable[[Any, list[Device]], Topology]


def pci_ids(ids: Callable[[Device], str]) -> Discover:
    def discover(host: Any) -> list[Device]:
        return [d.model_copy(update={"pci_device_id": ids(d)}) for d in acme.rayaccel_discover(host)]
    return discover


def links(change: Callable[[Any], dict[str, Any]]) -> TopologyHook:
    def topology(host: Any, devices: list[Device]) -> Topology:
        found = acme.rayaccel_topology(host, devices)
        return Topology(links=[link.model_copy(update=change(link)) for link in found.links])
    return topology


def acme_declaring(tmp_path: Path, declared: float, **hooks: Callable[..., Any]) -> Subject:
    """ACME (its sysfs links read 100 GB/s) with a catalog listing its PCI id and declaring its fastest link."""
    catalog = yaml.safe_load((acme.HERE / "acme-skus.yaml").read_text())
    catalog["skus"][0]["match"]["pci_device_ids"] = [PCI_ID]
    catalog["skus"][0]["link_bandwidth_gbytes_per_s"] = declared
    (tmp_path / "acme-skus.yaml").write_text(yaml.safe_dump(catalog))
    shutil.copytree(acme.HERE / "acme_fixtures", tmp_path / "acme_fixtures")
    return replaced(acme_onboard, "acme", **{"rayaccel_sku_catalog": lambda: load_catalog(tmp_path / "acme-skus.yaml"),
                                             "rayaccel_fixture_dirs": lambda: [str(tmp_path / "acme_fixtures")],
                                             "rayaccel_discover": pci_ids(lambda d: PCI_ID), **hooks})


def test_the_plugin_as_it_reads_the_machine_passes_both(tmp_path: Path) -> None:
    subject = acme_declaring(tmp_path, 100.0)
    identity = subject.run(CHECKS["RAC231"], "acme/acme-4")
    assert identity.outcome == "passed" and "PCI device id of 4 device(s) is one their SKU lists" in \
        identity.evidence[0], identity.evidence
    fabric = subject.run(CHECKS["RAC232"], "acme/acme-4")
    assert fabric.outcome == "passed" and "the fastest other link is 100 GB/s, the 100 GB/s SKU acme-r1" in \
        fabric.evidence[0], fabric.evidence


@pytest.mark.parametrize(("ids", "said"), [
    (lambda d: "0x1de5", "reports PCI device id 0x1de5, but its SKU acme-r1"),            # the vendor's half
    (lambda d: PCI_ID if d.index < 3 else "0x0a02", "reports PCI device id 0x0a02"),      # one card misread
])
def test_a_pci_id_no_sku_lists_fails_naming_the_invariant(tmp_path: Path, ids: Callable[[Device], str],
                                                          said: str) -> None:
    result = acme_declaring(tmp_path, 100.0, rayaccel_discover=pci_ids(ids)).run(CHECKS["RAC231"], "acme/acme-4")
    assert result.outcome == "failed", result.evidence
    text = " ".join(result.evidence)
    assert "invariant 'a device's PCI device id is one its SKU lists' broken on acme/acme-4" in text
    assert said in text and "resolved by the SDK from its product name 'ACME Roadrunner R1'" in text, text


@pytest.mark.parametrize(("declared", "change", "said"), [
    (100.0, lambda link: {"bandwidth_gbps": link.bandwidth_gbps / 2},                      # halved
     "is 50.0 GB/s: 50 GB/s is half the 100 GB/s due"),                                  # the ratio, no cause
    (400.0, lambda link: {"lanes": 4},                                                      # one lane of four
     "4 lane(s)) is 100.0 GB/s: 100 GB/s is 1/4 of the 400 GB/s due: one lane's figure taken for the link's 4 "
     "lanes (not multiplied by them)"),
    (800.0, lambda link: {},                                                                # bytes taken for bits
     "is 100.0 GB/s: 100 GB/s is 1/8 of the 800 GB/s due: a bits-for-bytes mix-up: divided by 8 once too often"),
    (300.0, lambda link: {}, "1 lane(s)) is 100.0 GB/s"),                                     # no relation to name
])
def test_links_below_the_declared_fastest_link_fail_naming_the_invariant(
        tmp_path: Path, declared: float, change: Callable[[Any], dict[str, Any]], said: str) -> None:
    subject = acme_declaring(tmp_path, declared, rayaccel_topology=links(change))
    result = subject.run(CHECKS["RAC232"], "acme/acme-4")
    assert result.outcome == "failed", result.evidence
    text = result.evidence[0]
    assert "invariant 'the fastest link of a healthy node reaches its SKU's declared link bandwidth' broken" in text
    assert f"SKU acme-r1 declares {declared:g} GB/s one way" in text and said in text, text
    assert declared not in (100.0, 300.0) or text.endswith(said), text  # a ratio that is no mix-up is not named as one
