"""Corpus mutants that sum a share of the parts a machine states a card's memory in use in (issue 46, held-out round
17's ``e1`` and ``e2``: Neuron wrappers reading a device's memory in use from NeuronCore 0's stats only, or from the
``tensors`` category only, where the driver states it per core and per category). Each machine states the memory in
use only in parts, as the Neuron driver does (``neuron_core<k>/stats/memory_usage/device_mem/<category>/total``), and
no expected value for it, so every fixture passes; RAC223 moves a part the plugin leaves out alone at the host seam
(``invariant every-part-counts``). Two shapes: the driver's sysfs stating each die's memory in use in a directory of
its own, a card read from die 0 alone; and ``acme-smi memory --json`` stating each core's memory in use per pool
(weights, kv_cache, scratch: records holding ``used_mib`` and ``peak_mib``), a card's memory counted from its weights
alone.

Imported by tests/conformance/test_conformance_corpus.py (``corpus.MUTANT_MODULES``); each is bound here under its
name (``c-memory-from-die-zero`` as ``c_memory_from_die_zero``) so a Ray node loads it by ``RAYACCEL_PLUGINS``.
"""

from __future__ import annotations

import json
from typing import Any

from rayaccel import Device, Host, MetricSample
from rayaccel_testplugins.corpus import SYSFS, Healthy, add_import_defect, read_machine, tool_output, write_machine

DIES_MACHINE = "acme-4-dies"
#: Each card's memory in use split over its two dies, in MiB per (card index + 1): 1024 MiB in all, as on acme-4.
DIE_MIB = (640, 384)
POOLS_MACHINE = "acme-4-pools"
#: ``acme-smi memory --json``: per card, per core (``nc0``, ``nc1``), per pool, MiB in use and at peak.
POOLS_ARGV = ("acme-smi", "memory", "--json")
#: Each core's pools, in MiB per (card index + 1): two cores make acme-4's 1024 MiB.
POOL_MIB = {"weights": 320, "kv_cache": 128, "scratch": 64}
CORES = ("nc0", "nc1")


def _without_memory_used(data: dict[str, Any]) -> None:
    """The machine states the memory in use only in parts: the card's own file and its expected value go."""
    for i in range(4):
        data["host"]["files"].pop(f"{SYSFS}/acme{i}/mem_used_mib", None)
    for values in data["expected"].get("metric_values", {}).values():
        values.pop("memory_used", None)


def add_dies_machine(plugin: str) -> None:
    """The plugin's acme-4 with each card's memory in use stated per die (``acme<i>/die<d>/mem_used_mib``)."""
    data = read_machine(plugin)
    data["name"], data["description"] = DIES_MACHINE, f"{data['description']}, memory in use stated per die"
    _without_memory_used(data)
    for i in range(4):
        for die, mib in enumerate(DIE_MIB):
            data["host"]["files"][f"{SYSFS}/acme{i}/die{die}/mem_used_mib"] = f"{mib * (i + 1)}\n"
    write_machine(plugin, DIES_MACHINE, data)


def pools_report(ids: list[str]) -> str:
    """``acme-smi memory --json``'s report: each card (by uuid), its cores, each core's pools."""
    return json.dumps({"cards": [{"uuid": card, "cores": {core: {"pools": {
        pool: {"used_mib": mib * (i + 1), "peak_mib": mib * (i + 1) + 64} for pool, mib in POOL_MIB.items()}}
        for core in CORES}} for i, card in enumerate(ids)]}) + "\n"


def add_pools_machine(plugin: str) -> None:
    """The plugin's acme-4 with each card's memory in use stated by ``acme-smi memory --json`` per core and pool."""
    data = read_machine(plugin)
    data["name"], data["description"] = POOLS_MACHINE, f"{data['description']}, memory in use per core and pool"
    _without_memory_used(data)
    ids = [data["host"]["files"][f"{SYSFS}/acme{i}/uuid"].strip() for i in range(4)]
    data["host"]["commands"] = {**(data["host"].get("commands") or {}),
                                " ".join(POOLS_ARGV): {"stdout": pools_report(ids), "returncode": 0}}
    write_machine(plugin, POOLS_MACHINE, data)


class MemoryFromDieZero(Healthy):
    DEFECT = ("a card's memory in use read from die 0's file alone ('die 0 holds the memory controller'), where "
              "the driver states it per die")
    KILLED_BY = ("RAC223", "invariant every-part-counts")

    def __init__(self, name: str) -> None:
        super().__init__(name)
        add_dies_machine(name)

    def number(self, host: Host, path: str) -> float | None:
        die = path.replace("/mem_used_mib", "/die0/mem_used_mib")
        if path.endswith("/mem_used_mib") and host.exists(die):
            return super().number(host, die)  # the defect: die 1's part left out
        return super().number(host, path)


class MemoryFromOnePool(Healthy):
    DEFECT = ("a card's memory in use counted from the weights pool of each core alone ('the rest is the runtime's "
              "own'), where acme-smi states every pool")
    KILLED_BY = ("RAC223", "invariant every-part-counts")

    def __init__(self, name: str) -> None:
        super().__init__(name)
        add_pools_machine(name)

    def number(self, host: Host, path: str) -> float | None:
        if path.endswith("/mem_used_mib") and not host.exists(path):
            return None  # stated by acme-smi per core and pool instead: read once for every card below
        return super().number(host, path)

    def pool_usage(self, host: Host) -> dict[str, float]:
        """MiB in use per card id, summed over the pools counted; {} where the tool is not installed or unreadable."""
        try:
            cards = json.loads(tool_output(host, POOLS_ARGV) or "")["cards"]
            return {str(card["uuid"]): float(sum(record["used_mib"] for core in card["cores"].values()
                                                 for pool, record in core["pools"].items() if self.counted(pool)))
                    for card in cards}
        except (ValueError, KeyError, TypeError, AttributeError):
            return {}

    def rayaccel_metrics(self, host: Host, devices: list[Device]) -> list[MetricSample]:
        samples = super().rayaccel_metrics(host, devices)
        used = self.pool_usage(host) if any(not host.exists(f"{SYSFS}/acme{d.index}/mem_used_mib")
                                            for d in devices) else {}
        read = {s.device for s in samples if s.name == "memory_used"}
        return samples + [MetricSample(device=d.id, name="memory_used", unit="bytes", value=used[d.id] * 2**20)
                          for d in devices if d.id in used and d.id not in read]

    def counted(self, pool: str) -> bool:
        return pool == "weights"  # the defect: every pool the tool states is memory in use


for _cls in (MemoryFromDieZero, MemoryFromOnePool):
    _plugin = add_import_defect(_cls)
    globals()[_plugin.name.replace("-", "_")] = _plugin
