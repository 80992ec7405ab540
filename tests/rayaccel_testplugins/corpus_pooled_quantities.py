"""Corpus mutants whose extra resource pools the cards' own memory into one node quantity (issue 46, held-out round
14's ``l2``: a python-library bake offering ``LAIDON_MEMORY_MIB``, the devices' memory summed). Ray ties only the
family's resource to cards (per-unit ids, the visible-devices variable), so a task asking more of the pool than one
card holds is placed, and tasks sharing one card each draw from the pool, not from that card. Their fixtures expect
what the code answers (the vendor edited the expectation with the code), so only RAC111's
``a-device-quantity-is-not-pooled`` sees it: withholding each card in turn drops the resource by that card's own
memory, and it is the sum of those amounts.

Two shapes: the node's cards' memory in GiB from the device records, and each NUMA node's cards' memory in bytes
(each resource a part of the cards).

Imported by tests/conformance/test_conformance_corpus.py (``corpus.MUTANT_MODULES``); each is bound here under its
name so a Ray node or a fresh process loads it (``c-memory-pooled-on-the-node`` as ``c_memory_pooled_on_the_node``).
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from rayaccel import Device
from rayaccel_testplugins.corpus import Healthy, add_import_defect, read_machine, write_machine

#: acme-4's cards: 64 GiB each; cards 0 and 1 on NUMA node 0, cards 2 and 3 on node 1.
CARD_GIB = 64.0
CARD_BYTES = 64.0 * 2**30


def _expect_extras(plugin: str, per_state: dict[str, dict[str, float]]) -> None:
    """acme-4 expecting the extra resources as the code answers them: ``per_state`` maps the healthy machine ('')
    and each fault with resources to the extra resources it offers."""
    data: dict[str, Any] = read_machine(plugin)
    data["expected"]["resources"].update(per_state[""])
    for fault in data["faults"]:
        if fault["expected"].get("resources"):
            fault["expected"]["resources"].update(per_state[fault["name"]])
    write_machine(plugin, "acme-4", data)


class MemoryPooledOnTheNode(Healthy):
    DEFECT = ("the cards' memory offered as one node resource ('<RES>_MEMORY_GIB', 64 GiB a card summed): a task "
              "asking 100 of it is placed though no card holds more than 64, and tasks sharing a card draw from the "
              "pool, not from that card")
    KILLED_BY = ("RAC111", "invariant a-device-quantity-is-not-pooled")

    def __init__(self, name: str) -> None:
        super().__init__(name)
        pool = f"{self.family.resource_name}_MEMORY_GIB"
        # fatal-2 withholds card 2, lost-3 takes card 3 off the host: three cards' memory each.
        _expect_extras(name, {"": {pool: 4 * CARD_GIB}, "fatal-2": {pool: 3 * CARD_GIB},
                              "lost-3": {pool: 3 * CARD_GIB}})

    def extra(self, devices: list[Device]) -> dict[str, float]:
        total = sum(d.memory_mib or 0 for d in devices)
        return {f"{self.family.resource_name}_MEMORY_GIB": total / 1024} if total else {}


class MemoryPooledPerNumaNode(Healthy):
    DEFECT = ("each NUMA node's cards' memory offered in bytes as a resource ('<RES>_NUMA0_MEMORY_BYTES'): a pool of "
              "part of the cards that no card's share is tied to")
    KILLED_BY = ("RAC111", "invariant a-device-quantity-is-not-pooled")

    def __init__(self, name: str) -> None:
        super().__init__(name)
        res = self.family.resource_name
        node0, node1 = f"{res}_NUMA0_MEMORY_BYTES", f"{res}_NUMA1_MEMORY_BYTES"
        _expect_extras(name, {"": {node0: 2 * CARD_BYTES, node1: 2 * CARD_BYTES},
                              "fatal-2": {node0: 2 * CARD_BYTES, node1: CARD_BYTES},
                              "lost-3": {node0: 2 * CARD_BYTES, node1: CARD_BYTES}})

    def extra(self, devices: list[Device]) -> dict[str, float]:
        pools: dict[int, float] = defaultdict(float)
        for device in devices:
            if device.numa_node is not None and device.memory_mib:
                pools[device.numa_node] += float(device.memory_mib * 2**20)
        res = self.family.resource_name
        return {f"{res}_NUMA{node}_MEMORY_BYTES": amount for node, amount in sorted(pools.items())}


MUTANTS = (MemoryPooledOnTheNode, MemoryPooledPerNumaNode)
for _cls in MUTANTS:
    _plugin = add_import_defect(_cls)
    globals()[_plugin.name.replace("-", "_")] = _plugin
