"""Corpus mutants that read a card at the number discovery gave it, in a vendor listing that numbers the cards anew
once one is lost (issue 46, held-out round 19's ``l1``: a python-library bake polling its library by discovery's
index, so after a middle card is lost each later card read its neighbour's values and the last one raised
IndexError). Every suite build discovers and polls the same host; a health monitor discovers once and polls on.
RAC210's ``invariant a-poll-after-a-loss-reads-each-device-by-its-id`` asks health and metrics with the devices
discovered before a loss, on the host after it.

Both on a machine of their own (acme-4 with ACME's stats library, ``acmestats``, added: each card's utilization and
power, the cards numbered 0..count-1 as found, anew once one is lost, as NVML and amdsmi do; the recorded loss is
the last card, which the suite moves to the first and a middle one), two shapes: the library read at the device's
index with no bound, so the poll raises past the end (l1's shape: the whole metrics answer lost), and the library's
number for each card looked up by uuid once, at discovery, kept in the device record and read within the library's
count (the cards after the lost one read their neighbour's readings, silently).

Imported by tests/conformance/test_conformance_corpus.py (``corpus.MUTANT_MODULES``); each is bound here under
its name so a Ray node or a fresh process loads it (``c-stats-at-discovery-index`` as
``c_stats_at_discovery_index``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rayaccel import Device, Host, LibraryAdapter, LibraryUnavailable, MetricSample
from rayaccel_testplugins.corpus import SYSFS, Healthy, add_import_defect, read_machine, write_machine

LIBRARY = "acmestats"
LIBRARY_MACHINE = "acme-4-stats"


def _stats(i: int, card: str) -> dict[str, Any]:
    """Card ``i``'s live readings as the vendor reports them: the values acme-4's driver files hold."""
    return {"uuid": card, "busy_percent": 10 * i, "power_mw": 250000 + 1000 * i}


def add_stats_machine(plugin: str) -> None:
    """acme-4 with each card's utilization and power in the stats library, where a lost card is listed no more:
    the machine's recorded loss (the last card) takes its key out of the library too."""
    data = read_machine(plugin)
    files = data["host"]["files"]
    cards = [files[f"{SYSFS}/acme{i}/uuid"].strip() for i in range(4)]
    data["name"] = LIBRARY_MACHINE
    data["perturbations"] = []  # a reorder or a card pulled would have to renumber the library too
    data["host"]["libraries"] = {LIBRARY: {"cards": {str(i): _stats(i, card) for i, card in enumerate(cards)}}}
    loss = next(f for f in data["faults"] if f["kind"] == "device-lost")
    lost = int(next(iter(loss["patch"]["files"])).split("/acme")[-1].split("/")[0])
    loss["patch"] = {**loss["patch"], "libraries": {LIBRARY: {"cards": {str(lost): None}}}}
    data["description"] = f"{data['description']}, each card's utilization and power in a library numbering anew"
    write_machine(plugin, data["name"], data)


class StatsLibrary:
    """ACME's stats library, simulated: the cards it finds, numbered 0..count-1 in the order of the fixture's keys
    (a lost card's key gone, the rest numbered on without a gap)."""

    def __init__(self, data: Mapping[str, Any]) -> None:
        cards = data.get("cards") or {}
        self._cards = [dict(cards[key]) for key in sorted(cards, key=int)]

    def card_count(self) -> int:
        return len(self._cards)

    def card_stats(self, index: int) -> dict[str, Any]:
        """The readings of the card numbered ``index`` now; IndexError past the end (the C library's
        ACMESTATS_ERROR_INVALID_ARGUMENT, as the bindings raise it)."""
        return dict(self._cards[index])


def _no_real_library() -> Any:
    raise LibraryUnavailable(f"{LIBRARY}: simulated only")


STATS_LIBRARY = LibraryAdapter(LIBRARY, _no_real_library, StatsLibrary)


def stats_library(host: Host) -> StatsLibrary | None:
    try:
        library: StatsLibrary = host.library(STATS_LIBRARY)
    except LibraryUnavailable:
        return None
    return library


def with_listed_stats(samples: list[MetricSample], device: Device, stats: dict[str, Any] | None) -> list[MetricSample]:
    """The driver files' samples with utilization and power from the library's ``stats`` for the card, where the
    machine has the library (acme-4 has none: its files' samples stand)."""
    if stats is None:
        return samples
    listed = {"utilization": ("percent", stats.get("busy_percent"), 1.0),
              "power": ("watts", stats.get("power_mw"), 1e-3)}
    kept = [s for s in samples if s.name not in listed]
    return kept + [MetricSample(device=device.id, name=name, unit=unit, value=value * factor)
                   for name, (unit, value, factor) in listed.items() if isinstance(value, int | float)]


class StatsAtDiscoveryIndex(Healthy):
    DEFECT = ("acmestats is read at the index discovery gave each card (acmestats_card_stats(index) takes it): once a "
              "card is lost the library numbers the rest anew, so each later card reads its neighbour's readings and "
              "the last one's index is out of range, raising")
    KILLED_BY = ("RAC210", "invariant a-poll-after-a-loss-reads-each-device-by-its-id")

    def __init__(self, name: str) -> None:
        super().__init__(name)
        add_stats_machine(name)

    def samples(self, host: Host, device: Device) -> list[MetricSample]:
        library = stats_library(host)
        stats = None if library is None else library.card_stats(device.index)  # the defect: found by uuid was meant
        return with_listed_stats(super().samples(host, device), device, stats)


class StatsAtKeptHandle(Healthy):
    DEFECT = ("each card's acmestats number is looked up by uuid once, at discovery, and kept in the device record "
              "(attribute stats-handle, as NVML code keeps a handle) for every later poll, read within the library's "
              "count: once a card is lost the library numbers the rest anew, so each later card reads its "
              "neighbour's readings and the last one none")
    KILLED_BY = ("RAC210", "invariant a-poll-after-a-loss-reads-each-device-by-its-id")
    HANDLE = "stats-handle"

    def __init__(self, name: str) -> None:
        super().__init__(name)
        add_stats_machine(name)

    def rayaccel_discover(self, host: Host) -> list[Device]:
        devices = super().rayaccel_discover(host)
        library = stats_library(host)
        if library is None:
            return devices
        numbers = {str(library.card_stats(i).get("uuid")): i for i in range(library.card_count())}
        return [d.model_copy(update={"attributes": {**d.attributes, self.HANDLE: numbers[d.id]}})
                if d.id in numbers else d for d in devices]

    def samples(self, host: Host, device: Device) -> list[MetricSample]:
        library = stats_library(host)
        handle = device.attributes.get(self.HANDLE)
        stats = None
        if library is not None and isinstance(handle, int) and handle < library.card_count():
            stats = library.card_stats(handle)  # the defect: the card found by uuid in the listing now was meant
        return with_listed_stats(super().samples(host, device), device, stats)


for _cls in (StatsAtDiscoveryIndex, StatsAtKeptHandle):
    _plugin = add_import_defect(_cls)
    globals()[_plugin.name.replace("-", "_")] = _plugin
