"""Corpus mutants whose extra resource counts the family's cards again under another name (issue 46, held-out round
12's ``c1``: a command-csv bake offering ``FOXHOLLOW_X1``, one per device given, beside ``FOXHOLLOW``). Ray gives
per-unit ids, and the visible-devices variable, only for the family's resource, so a task asking for the second name
sees no card, and each card is offered twice. Their fixtures expect what the code answers (the vendor edited the
expectation with the code), so only RAC111's ``devices-are-counted-once`` sees it: withholding each card in turn drops
the resource by one card, and it is the sum of those drops.

Two shapes: one resource per model, counting every card of it (c1's), and one per NUMA node, counting the cards
attached there (each resource a part of the cards).

Imported by tests/conformance/test_conformance_corpus.py (``corpus.MUTANT_MODULES``); each is bound here under its
name so a Ray node or a fresh process loads it (``c-cards-per-model-resource`` as ``c_cards_per_model_resource``).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from rayaccel import Device, to_label_value
from rayaccel_testplugins.corpus import Healthy, add_import_defect, read_machine, write_machine


def _expect_extras(plugin: str, per_state: dict[str, dict[str, float]]) -> None:
    """acme-4 expecting the extra resources as the code answers them: ``per_state`` maps the healthy machine ('')
    and each fault with resources to the extra resources it offers."""
    data: dict[str, Any] = read_machine(plugin)
    data["expected"]["resources"].update(per_state[""])
    for fault in data["faults"]:
        if fault["expected"].get("resources"):
            fault["expected"]["resources"].update(per_state[fault["name"]])
    write_machine(plugin, "acme-4", data)


class CardsPerModelResource(Healthy):
    DEFECT = ("a resource per model ('<RES>_R1'), one for each card of it given, beside the family's resource: a "
              "second name for the same cards, which a task asking for it gets none of in the visible-devices "
              "variable, and each card offered twice")
    KILLED_BY = ("RAC111", "invariant devices-are-counted-once")

    def __init__(self, name: str) -> None:
        super().__init__(name)
        model = f"{self.family.resource_name}_R1"
        # acme-4's four R1 cards; fatal-2 withholds card 2, lost-3 takes card 3 off the host.
        _expect_extras(name, {"": {model: 4.0}, "fatal-2": {model: 3.0}, "lost-3": {model: 3.0}})

    def extra(self, devices: list[Device]) -> dict[str, float]:
        models = Counter(to_label_value(d.product_name.split()[-1]).upper() for d in devices if d.product_name.split())
        return {f"{self.family.resource_name}_{model}": float(count) for model, count in models.items()}


class CardsPerNumaNode(Healthy):
    DEFECT = ("a resource per NUMA node ('<RES>_NUMA0'), one for each card given attached there, beside the family's "
              "resource: a second name for part of the cards, which a task asking for it gets none of in the "
              "visible-devices variable, and each card offered twice")
    KILLED_BY = ("RAC111", "invariant devices-are-counted-once")

    def __init__(self, name: str) -> None:
        super().__init__(name)
        res = self.family.resource_name
        # acme-4: cards 0 and 1 on NUMA node 0, cards 2 and 3 on node 1.
        _expect_extras(name, {"": {f"{res}_NUMA0": 2.0, f"{res}_NUMA1": 2.0},
                              "fatal-2": {f"{res}_NUMA0": 2.0, f"{res}_NUMA1": 1.0},
                              "lost-3": {f"{res}_NUMA0": 2.0, f"{res}_NUMA1": 1.0}})

    def extra(self, devices: list[Device]) -> dict[str, float]:
        nodes = Counter(d.numa_node for d in devices if d.numa_node is not None)
        return {f"{self.family.resource_name}_NUMA{node}": float(count) for node, count in sorted(nodes.items())}


MUTANTS = (CardsPerModelResource, CardsPerNumaNode)
for _cls in MUTANTS:
    _plugin = add_import_defect(_cls)
    globals()[_plugin.name.replace("-", "_")] = _plugin
