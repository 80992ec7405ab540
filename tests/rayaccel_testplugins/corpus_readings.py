"""Corpus mutants of a device fact read from the host (issue 46: RAC245), two shapes each: a NUMA node right on the
fixture's machine, because the rule it is computed by happens to agree there, and wrong on the next.

Imported by tests/conformance/test_conformance_corpus.py (``corpus.MUTANT_MODULES``); each is bound here under its
name (``c-numa-by-index-half`` as ``c_numa_by_index_half``) so a Ray node loads it by ``RAYACCEL_PLUGINS``.
"""

from __future__ import annotations

from rayaccel import Device, Host
from rayaccel_testplugins import acme
from rayaccel_testplugins.corpus import SYSFS, Healthy, add_import_defect


class NumaByIndexHalf(Healthy):
    DEFECT = ("a card's NUMA node is computed from its place on the node (the first half of the cards on socket 0, "
              "the rest on socket 1), not read: right on a machine cabled that way, wrong on the next")
    KILLED_BY = ("RAC245", "invariant numa-node-read-from-the-host")

    def rayaccel_discover(self, host: Host) -> list[Device]:
        devices = super().rayaccel_discover(host)
        return [d.model_copy(update={"numa_node": i * 2 // len(devices)}) for i, d in enumerate(devices)]


class NumaFromFirstCard(Healthy):
    DEFECT = "every card's NUMA node is read from card 0's entry (one read for the node, as if all shared a socket)"
    KILLED_BY = ("RAC245", "invariant numa-node-read-from-the-host")

    def device(self, host: Host, path: str, driver: str | None) -> Device:
        card = super().device(host, path, driver)
        return card.model_copy(update={"numa_node": acme._number(host, f"{SYSFS}/acme0/numa_node")})


for _cls in (NumaByIndexHalf, NumaFromFirstCard):
    _plugin = add_import_defect(_cls)
    globals()[_plugin.name.replace("-", "_")] = _plugin
