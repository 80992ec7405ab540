"""Held-out grading, round 10 (issue 46, lane Yb): a device left out by its product's name.

``l1`` (a python-library bake) kept only the products it was qualified on (``{"Ivybridge X1"}``): RAC230's day-zero
fixture, which changes the product name, PCI device id and memory at once, named only the symptom ("devices:
expected 4, discovered 0"). RAC225's ``invariant an-unknown-product-is-a-device`` changes the product name alone,
wherever the host states it, and every device must still be found. Two corpus shapes (an allow-list of names, the
catalog taken for the family's cards) and the AMD plugin with an allow-list over amdsmi's library data.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from mutant_grading import evidence, failure, mutant, replaced

import rayaccel
from rayaccel.catalog import load_catalog
from rayaccel_amd import plugin as amd
from rayaccel_conformance.checks import all_checks
from rayaccel_conformance.checks.unknown_products import INVARIANT, newer_product, renamed_host
from rayaccel_conformance.registry import CHECKS
from rayaccel_testplugins import corpus
from rayaccel_testplugins.corpus_unknown_products import CardsOfCataloguedSkus, CardsOfListedProducts


def test_a_product_is_renamed_wherever_the_host_states_it() -> None:
    name, new = "ACME Roadrunner R1", newer_product("ACME Roadrunner R1")
    assert new == "ACME Roadrunner R1Z9"
    host = {"files": {"/sys/class/acme/acme0/product": f"{name}\n"},
            "libraries": {"lib": {"devices": [{"product": name}]}},
            "commands": {"smi --json": {"stdout": json.dumps({"cards": [{"name": name}]})},
                         "smi --csv": {"stdout": f"0, {name}, 42\n"}}}
    renamed = renamed_host(host, name, new)
    assert renamed["files"]["/sys/class/acme/acme0/product"] == f"{new}\n"
    assert renamed["libraries"]["lib"]["devices"][0]["product"] == new
    assert json.loads(renamed["commands"]["smi --json"]["stdout"])["cards"][0]["name"] == new
    assert renamed["commands"]["smi --csv"]["stdout"] == f"0, {new}, 42\n"


@pytest.mark.parametrize("cls", [CardsOfListedProducts, CardsOfCataloguedSkus], ids=["allow-list", "catalog"])
def test_a_card_left_out_by_its_product_fails_naming_the_invariant(cls: type[corpus.Healthy]) -> None:
    plugin = mutant(cls)
    said = failure(plugin, "RAC225", "acme-4")
    assert (f"{INVARIANT}, {plugin.name}/acme-4 with the product 'ACME Roadrunner R1' written 'ACME Roadrunner R1Z9' "
            "wherever the host states it") in said, said
    assert "discovery finds 0 of its 4 devices" in said and "left out by its product's name" in said, said


def test_the_healthy_plugin_finds_a_newer_products_cards() -> None:
    said = evidence(corpus.PLUGINS["c-healthy"], "RAC225", "acme-4")
    assert "every device found with its product written as a newer one's" in said, said


def test_amd_with_an_allow_list_over_its_library_fails() -> None:
    def qualified_only(host: Any) -> list[rayaccel.Device]:
        return [d for d in amd.rayaccel_discover(host) if d.product_name == "AMD Instinct MI300X"]

    here = Path(amd.__file__).parent
    all_checks()
    subject = replaced(amd, "amd", rayaccel_discover=qualified_only,
                       rayaccel_fixture_dirs=lambda: [str(here / "fixtures")],
                       rayaccel_sku_catalog=lambda: load_catalog(here / "skus.yaml"))
    result = subject.run(CHECKS["RAC225"], "amd/mi300x-8")
    assert result.outcome == "failed", result.evidence
    said = " ".join(result.evidence)
    assert f"{INVARIANT}, amd/mi300x-8 with the product 'AMD Instinct MI300X' written 'AMD Instinct MI300XZ9'" in said
    assert "discovery finds 0 of its 8 devices" in said, said
