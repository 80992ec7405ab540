"""Held-out grading, round 13 (issue 46, lane J4): a SKU's catalog ``interconnect`` names the fabric its devices'
links are (``invariant interconnect-names-the-links-fabric``, RAC232).

The command-csv bake ``c3`` named its SKU's interconnect ``pcie5-x16``, the card's host interface as a datasheet
lists it, for cards joined by a full mesh of 200 GB/s links of their own (kind ``other``). Where a node's links are
of kind ``other`` the SDK labels it ``rayaccel.io/interconnect`` with the catalog's name, so the node said its
cards talk PCIe; only the fixture's expected label said otherwise, and ``c3e``, that expectation edited, passed
``supported``. Where the links joining a SKU's devices are all of kind ``other``, the catalog's name must now read as
none of the link vocabulary's kinds: two corpus shapes (the host bus, the node's network) and the Gaudi plugin
reporting its RoCE ports as ``other`` are named; a fabric of the vendor's own name, and a catalog's ``pcie4`` over
an NVLink bridge (the label takes the links' kind there), pass.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from mutant_grading import evidence, failure, graded, mutant, wrapped

from rayaccel.hosts.fixtures import installed_fixtures, load_fixture
from rayaccel.inventory.builder import InventoryBuilder
from rayaccel.records import Device, Topology
from rayaccel.simulation.host_factory import simulated_host
from rayaccel_conformance.checks.fabric_names import named_link_kind
from rayaccel_conformance.registry import CHECKS, CheckFailed
from rayaccel_gaudi import plugin as gaudi
from rayaccel_nvidia import plugin as nvidia
from rayaccel_testplugins import corpus, corpus_fabric_names as fabric

INVARIANT = "invariant interconnect-names-the-links-fabric, "


@pytest.mark.parametrize(("shape", "name", "kind"), [
    (fabric.InterconnectNamesHostBus, "pcie4-x16", "pcie"),
    (fabric.InterconnectNamesNetwork, "infiniband-ndr", "infiniband")], ids=["host-bus", "network"])
def test_a_catalog_naming_another_fabric_than_the_links_is_named(shape: type[corpus.Healthy], name: str,
                                                                 kind: str) -> None:
    plugin = mutant(shape)
    said = failure(plugin, "RAC232", "acme-4")
    assert f"{INVARIANT}{plugin.name}/acme-4: the 6 links joining SKU acme-r1's 4 devices are all of kind 'other'" \
        in said, said
    assert f"the catalog names that fabric {name!r}, which reads as the kind {kind!r}" in said, said
    assert f"labelled rayaccel.io/interconnect={name!r}" in said and "expected" not in said, said


@pytest.mark.parametrize(("shape", "warned"), [
    (fabric.InterconnectNamesHostBus, "'pcie4-x16', which reads as link kind 'pcie'"),
    (corpus.Healthy, None)], ids=["host-bus", "healthy"])
def test_the_inventory_warns_where_the_catalog_names_a_link_kind_over_links_of_kind_other(
        shape: type[corpus.Healthy], warned: str | None) -> None:
    """The SDK says so itself, before any conformance run (a vendor onboarding a SKU with `sku add --interconnect
    pcie5` on a plugin whose links are `other` sees it in the inventory)."""
    plugin = mutant(shape) if shape is not corpus.Healthy else corpus.PLUGINS["c-healthy"]
    subject = graded(plugin)
    inventory = InventoryBuilder(subject.manager, [plugin.name]).build(
        simulated_host(load_fixture(installed_fixtures(subject.manager)[f"{plugin.name}/acme-4"])))
    said = [f"{problem.message} (fix: {problem.fix})" for problem in inventory.problems
            if problem.code == "interconnect-names-a-link-kind"]
    if warned is None:
        assert said == []
    else:
        (line,) = said
        assert warned in line and "links between its devices as kind 'other'" in line, line


def test_the_healthy_plugin_naming_its_fabric_other_passes() -> None:
    said = evidence(corpus.PLUGINS["c-healthy"], "RAC232", "acme-4")
    assert "SKU acme-r1's 6 links of kind 'other' are named 'other', no kind the vocabulary has" in said, said


@pytest.mark.parametrize(("name", "kind"), [
    ("pcie5-x16", "pcie"), ("PCIe Gen5 x16", "pcie"), ("pcie4", "pcie"), ("nvlink4-nvswitch", "nvlink"),
    ("neuronlink-v3", "neuronlink"), ("gaudi-roce", "gaudi-roce"), ("roce-v2", "roce"), ("xgmi", "xgmi"),
    ("other", None), ("qlink", None), ("rydal-fabric-2", None), ("", None)])
def test_a_fabric_name_reads_as_the_kind_it_begins_with(name: str, kind: str | None) -> None:
    assert named_link_kind(name) == kind


def as_other(host: Any, devices: list[Device]) -> Topology:
    """Gaudi's topology with every link reported as kind ``other`` (its catalog names them ``gaudi-roce``)."""
    topology: Topology = gaudi.rayaccel_topology(host, devices)
    return topology.model_copy(update={"links": [link.model_copy(update={"kind": "other"})
                                                 for link in topology.links]})


def test_links_of_a_kind_the_vocabulary_has_reported_as_other_are_named() -> None:
    subject = wrapped(gaudi, "gaudi", str(Path(gaudi.__file__).parent), rayaccel_topology=as_other)
    with pytest.raises(CheckFailed) as failed:
        CHECKS["RAC232"].function(subject, "gaudi/hls-gaudi2")
    said = str(failed.value)
    assert f"{INVARIANT}gaudi/hls-gaudi2: the 28 links joining SKU gaudi2-hl-225's 8 devices are all of kind " \
           "'other'" in said, said
    assert "the catalog names that fabric 'gaudi-roce', which reads as the kind 'gaudi-roce'" in said, said


def test_a_catalog_bus_over_a_bridge_of_another_kind_passes() -> None:
    # A100 PCIe cards paired by an NVLink bridge: the catalog's pcie4 is the product's, the label the links' nvlink.
    subject = wrapped(nvidia, "nvidia", str(Path(nvidia.__file__).parent))
    said = str(CHECKS["RAC232"].function(subject, "nvidia/a100-pcie-nvlink-bridge"))
    assert "interconnect-names" not in said and "nvlink link" in said, said
