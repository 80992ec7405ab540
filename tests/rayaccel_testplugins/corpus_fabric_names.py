"""Corpus mutants whose SKU catalog names the cards' fabric by something else than what their links are (issue 46,
held-out round 13's ``c3``: a csv bake's ``interconnect: pcie5-x16``, the card's host interface as a datasheet lists
it, for cards joined by a full mesh of 200 GB/s links of their own, kind ``other``). The SDK labels the node with
the catalog's name where the links are of kind ``other``, so the node says its cards talk over PCIe (or a network).
RAC232's ``interconnect-names-the-links-fabric`` kills both shapes: the host bus (``pcie4-x16``) and the node's
scale-out network (``infiniband-ndr``); each fixture expects the label as the code gives it, as its author believed.

Imported by tests/conformance/test_conformance_corpus.py (``corpus.MUTANT_MODULES``); each is bound here under its name
so a Ray node loads it (``c-interconnect-names-host-bus`` as ``c_interconnect_names_host_bus``).
"""

from __future__ import annotations

from typing import Any

from rayaccel_testplugins.corpus import Healthy, add_import_defect, read_machine, write_machine

INTERCONNECT = "rayaccel.io/interconnect"


def expect_interconnect(plugin: str, value: str) -> None:
    """The plugin's acme-4 expecting the node labelled ``rayaccel.io/interconnect: value`` (written once)."""
    data = read_machine(plugin)
    if data["expected"]["labels"].get(INTERCONNECT) != value:
        data["expected"]["labels"][INTERCONNECT] = value
        write_machine(plugin, "acme-4", data)


def named_fabric(plugin: Healthy, name: str) -> dict[str, Any]:
    """``plugin``'s catalog data with R1's interconnect named ``name``."""
    data = Healthy.catalog_data(plugin)
    data["skus"][0]["interconnect"] = name
    return data


class InterconnectNamesHostBus(Healthy):
    DEFECT = ("the catalog's interconnect for R1 is 'pcie4-x16', the card's host interface as its datasheet lists "
              "it, while the cards are joined by their own links (kind other): the node is labelled as talking PCIe")
    KILLED_BY = ("RAC232", "invariant interconnect-names-the-links-fabric")

    def __init__(self, name: str) -> None:
        super().__init__(name)
        expect_interconnect(name, "pcie4-x16")

    def catalog_data(self) -> dict[str, Any]:
        return named_fabric(self, "pcie4-x16")


class InterconnectNamesNetwork(Healthy):
    DEFECT = ("the catalog's interconnect for R1 is 'infiniband-ndr', the node's scale-out network its cards reach "
              "other nodes' cards through, while the cards are joined by their own links (kind other)")
    KILLED_BY = ("RAC232", "invariant interconnect-names-the-links-fabric")

    def __init__(self, name: str) -> None:
        super().__init__(name)
        expect_interconnect(name, "infiniband-ndr")

    def catalog_data(self) -> dict[str, Any]:
        return named_fabric(self, "infiniband-ndr")


for _cls in (InterconnectNamesHostBus, InterconnectNamesNetwork):
    _plugin = add_import_defect(_cls)
    globals()[_plugin.name.replace("-", "_")] = _plugin
