"""Corpus mutants whose extra resource counts every card the driver lists, an unhealthy one too (issue 46, held-out
round 11's ``s3``: a sysfs bake offering device memory summed over the driver's listing, not over the healthy
devices ``rayaccel_resources`` is given). Their fixtures expect what the code answers (the vendor edited the
expectation with the code: fatal-2 still offers card 2's share), so only RAC203's
``resources-count-the-devices-given`` sees it: under lost-3 the resource drops by card 3's share, and with card 3
on the host but not given (as the SDK gives an unhealthy card) it does not.

Two shapes: device memory summed over the cards discovery finds again (s3's), and a fixed number of streams per
card counted from the driver's state files (a directory listing, no device record).

Imported by tests/conformance/test_conformance_corpus.py (``corpus.MUTANT_MODULES``); each is bound here under its
name so a Ray node or a fresh process loads it (``c-memory-of-every-listed-card`` as
``c_memory_of_every_listed_card``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rayaccel import Device, Host, ResourceContribution, Topology
from rayaccel_testplugins.corpus import SYSFS, Healthy, add_import_defect, read_machine, write_machine

#: Streams each card offers (the family's resource counts cards; a task may ask for a share of one).
STREAMS_PER_CARD = 16


def _expect_extra(plugin: str, name: str, per_state: dict[str, float]) -> None:
    """acme-4 expecting the extra resource ``name`` as the code answers it: ``per_state`` maps the healthy machine
    ('') and each fault with resources to the quantity."""
    data: dict[str, Any] = read_machine(plugin)
    data["expected"]["resources"][name] = per_state[""]
    for fault in data["faults"]:
        if fault["expected"].get("resources"):
            fault["expected"]["resources"][name] = per_state[fault["name"]]
    write_machine(plugin, "acme-4", data)


class MemoryOfDevicesGiven(Healthy):
    """Device memory as a resource, summed over the devices given: the right devices for RAC203 (a contrast, not in
    the corpus), though the pool itself is what RAC111's a-device-quantity-is-not-pooled names."""

    def __init__(self, name: str) -> None:
        super().__init__(name)
        # 64 GiB a card; fatal-2 takes card 2 out of the devices given, lost-3 card 3 off the host.
        _expect_extra(name, self.extra_name, {"": 256.0, "fatal-2": 192.0, "lost-3": 192.0})

    @property
    def extra_name(self) -> str:
        return f"{self.family.resource_name}_MEMORY_GIB"

    def rayaccel_resources(self, host: Host, devices: Sequence[Device], topology: Topology) -> ResourceContribution:
        total = sum(d.memory_mib or 0 for d in devices)
        return ResourceContribution(extra={self.extra_name: float(total // 1024)})


class MemoryOfEveryListedCard(Healthy):
    DEFECT = ("device memory offered as a resource summed over every card discovery finds again on the host (the "
              "driver's listing), not over the healthy devices given: an unhealthy card's memory is still offered")
    KILLED_BY = ("RAC203", "invariant resources-count-the-devices-given")

    def __init__(self, name: str) -> None:
        super().__init__(name)
        _expect_extra(name, self.extra_name, {"": 256.0, "fatal-2": 256.0, "lost-3": 192.0})

    @property
    def extra_name(self) -> str:
        return f"{self.family.resource_name}_MEMORY_GIB"

    def rayaccel_resources(self, host: Host, devices: Sequence[Device], topology: Topology) -> ResourceContribution:
        total = sum(d.memory_mib or 0 for d in self.rayaccel_discover(host))  # the defect: not `devices`
        return ResourceContribution(extra={self.extra_name: float(total // 1024)})


class StreamsOfEveryPresentCard(Healthy):
    DEFECT = (f"{STREAMS_PER_CARD} streams offered per card whose driver state file does not read 'lost' (a "
              "directory listing), not per healthy device given: an unhealthy card's streams are still offered")
    KILLED_BY = ("RAC203", "invariant resources-count-the-devices-given")

    def __init__(self, name: str) -> None:
        super().__init__(name)
        per = float(STREAMS_PER_CARD)
        _expect_extra(name, self.extra_name, {"": 4 * per, "fatal-2": 4 * per, "lost-3": 3 * per})

    @property
    def extra_name(self) -> str:
        return f"{self.family.resource_name}_STREAMS"

    def rayaccel_resources(self, host: Host, devices: Sequence[Device], topology: Topology) -> ResourceContribution:
        states = [f"{card}/state" for card in host.glob(f"{SYSFS}/acme*")]
        present = [p for p in states if host.exists(p) and host.read_text(p).strip() != "lost"]
        return ResourceContribution(extra={self.extra_name: float(STREAMS_PER_CARD * len(present))})


for _cls in (MemoryOfEveryListedCard, StreamsOfEveryPresentCard):
    _plugin = add_import_defect(_cls)
    globals()[_plugin.name.replace("-", "_")] = _plugin
