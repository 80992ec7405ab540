"""Corpus mutants found by grading held-out broken plugins (issue 46, lane H: RAC240-RAC244; round 5's: RAC203's
label counts, RAC267's stated links): defects their own fixture cannot show because each answer is right on the
poll or the layout the fixture gives, two shapes each.

Imported by tests/conformance/test_conformance_corpus.py (``corpus.MUTANT_MODULES``); each is bound here under
its name so a Ray node or a fresh process loads it (``c-health-kept-per-card`` as ``c_health_kept_per_card``).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable

from rayaccel import Device, FamilyInventory, HealthReport, Host, MetricSample, Topology
from rayaccel_testplugins import acme
from rayaccel_testplugins.corpus import (
    FIXTURE_ROOT,
    LABEL_PREFIX,
    SYSFS,
    Healthy,
    add_import_defect,
    read_machine,
    write_machine,
)

# Health from the host, not from the polls before (RAC240) -------------------------------------------------------


class HealthKeptPerCard(Healthy):
    DEFECT = ("each card's health is read on its first poll and kept for the process's life (a cache keyed on the "
              "card), so a fault that starts later is never seen by the monitor that polls on")
    KILLED_BY = ("RAC240", "invariant health-answers-the-host")

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.kept: dict[str, HealthReport] = {}

    def rayaccel_health(self, host: Host, devices: list[Device]) -> list[HealthReport]:
        unseen = [d for d in devices if d.id not in self.kept]
        self.kept.update({r.device: r for r in acme.rayaccel_health(host, unseen)} if unseen else {})
        return [self.kept[d.id] for d in devices if d.id in self.kept]


class HealthFromCounterDelta(Healthy):
    DEFECT = ("a card is unhealthy only on the poll where its fatal-error counter grew: the next poll of the same "
              "dead card says healthy again (health flaps while the fault lasts)")
    KILLED_BY = ("RAC240", "invariant health-holds-while-the-fault-does")

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.last: dict[str, int] = {}

    def rayaccel_health(self, host: Host, devices: list[Device]) -> list[HealthReport]:
        reports = []
        for report, device in zip(acme.rayaccel_health(host, devices), devices, strict=True):
            count = acme._number(host, f"{SYSFS}/acme{device.index}/fatal_errors")
            grew = count is not None and count > self.last.get(device.id, 0)
            self.last[device.id] = count or 0
            if report.reasons and report.reasons[0].code == "acme-fatal" and not grew:
                report = HealthReport(device=device.id, state="healthy")
            elif grew and report.state == "healthy":
                report = acme.health_from_count(device.id, count)
            reports.append(report)
        return reports


# Per-device answers on every layout of the machine (RAC241) -----------------------------------------------------


class SizeResourceFromFirstCard(Healthy):
    DEFECT = ("an extra resource named for the first card's memory ('<RES>-64G') counts every card: on a machine "
              "with a smaller card listed first, one name stands for both sizes")
    KILLED_BY = ("RAC241", "property resources-free-of-device-order")

    def __init__(self, name: str) -> None:
        super().__init__(name)
        # Its fixture recorded from the plugin itself: the size resource is what the machine's four 64G cards give.
        data = read_machine(name)
        size = f"{self.family.resource_name}-64G"
        for expected in (data["expected"], *(f["expected"] for f in data["faults"])):
            units = (expected.get("resources") or {}).get(self.family.resource_name)
            if units is not None:
                expected["resources"][size] = units
        write_machine(name, "acme-4", data)

    def extra(self, devices: list[Device]) -> dict[str, float]:
        if not devices or devices[0].memory_mib is None:
            return {}
        return {f"{self.family.resource_name}-{devices[0].memory_mib // 1024}G": float(len(devices))}


class MetricsPairedByListing(Healthy):
    DEFECT = ("metrics are read entry by entry in the driver's listing and paired with the devices sorted by id: "
              "right while the listing's order is the ids' order, another card's readings otherwise")
    KILLED_BY = ("RAC241", "invariant metric-read-from-its-own-device")

    def rayaccel_metrics(self, host: Host, devices: list[Device]) -> list[MetricSample]:
        entries = sorted(host.glob(f"{SYSFS}/acme*"), key=lambda path: int(path.rsplit("acme", 1)[1]))
        samples = []
        for device, entry in zip(sorted(devices, key=lambda d: d.id), entries, strict=False):
            index = int(entry.rsplit("acme", 1)[1])
            for sample in self.samples(host, device.model_copy(update={"index": index})):
                samples.append(sample.model_copy(update={"device": device.id}))
        return samples


# Every hook answers the host, not the process environment (RAC242) --------------------------------------------


def _visible(variable: str) -> set[str] | None:
    value = os.environ.get(variable)
    return None if value is None else {part.strip() for part in value.split(",")}


class HealthOnlyVisibleCards(Healthy):
    DEFECT = ("health answers only for the cards the process's visible-devices variable lists (the others get no "
              "report): the monitor's view of a card depends on which worker asked")
    KILLED_BY = ("RAC242", "rayaccel_health answers otherwise")

    def rayaccel_health(self, host: Host, devices: list[Device]) -> list[HealthReport]:
        visible = _visible(self.family.visible_devices_env_var)
        return super().rayaccel_health(host, [d for d in devices if visible is None or str(d.index) in visible])


class MetricsOnlyVisibleCards(Healthy):
    DEFECT = ("metrics are sampled only for the cards the process's visible-devices variable lists, as a worker "
              "library would: the node's exporter loses every other card's samples where the variable is set")
    KILLED_BY = ("RAC242", "rayaccel_metrics answers otherwise")

    def rayaccel_metrics(self, host: Host, devices: list[Device]) -> list[MetricSample]:
        visible = _visible(self.family.visible_devices_env_var)
        return super().rayaccel_metrics(host, [d for d in devices if visible is None or str(d.index) in visible])


# Ranges in a visible-devices value hold both their ends (RAC243) -------------------------------------------------

_RANGE = re.compile(r"^(\d+)-(\d+)$")


def _with_ranges(ids: list[str], expand: Callable[[int, int], list[int]]) -> list[str]:
    """Ids as the healthy parser gave them, with each ``a-b`` (a <= b) expanded by ``expand``."""
    out: list[str] = []
    for token in ids:
        match = _RANGE.match(token)
        out += [str(i) for i in expand(int(match[1]), int(match[2]))] if match and int(match[1]) <= int(
            match[2]) else [token]
    return out


class VisibleRangeEndExclusive(Healthy):
    DEFECT = "a visible-devices range 'a-b' is expanded as Python's range(a, b): its last unit is lost"
    KILLED_BY = ("RAC243", "property visible-range-inclusive")

    def rayaccel_parse_visible(self, value: str) -> list[str]:
        return _with_ranges(super().rayaccel_parse_visible(value), lambda low, high: list(range(low, high)))


class VisibleRangeEndsOnly(Healthy):
    DEFECT = "a visible-devices range 'a-b' is read as its two ends, a and b, the units between them lost"
    KILLED_BY = ("RAC243", "property visible-range-inclusive")

    def rayaccel_parse_visible(self, value: str) -> list[str]:
        return _with_ranges(super().rayaccel_parse_visible(value), lambda low, high: sorted({low, high}))


class VisibleRangeOneAsText(Healthy):
    DEFECT = ("a visible-devices range is expanded only when its ends differ ('low < high'): '3-3' stays the id "
              "'3-3', a unit the node does not have, so the process sees no device")
    KILLED_BY = ("RAC243", "property visible-range-inclusive")

    def rayaccel_parse_visible(self, value: str) -> list[str]:
        out: list[str] = []
        for token in super().rayaccel_parse_visible(value):
            match = _RANGE.match(token)
            expand = match is not None and int(match[1]) < int(match[2])
            out += [str(i) for i in range(int(match[1]), int(match[2]) + 1)] if match and expand else [token]
        return out


class VisibleIdsAsIntegers(Healthy):
    DEFECT = ("visible-devices ids normalised with int() ('03' -> '3'): a range ('0-3') raises ValueError, and the "
              "SDK's stand-in, Ray's comma split, keeps it as one id, so the raise looks like a parser without ranges")
    KILLED_BY = ("RAC243", "invariant visible-range-answered")

    def rayaccel_parse_visible(self, value: str) -> list[str]:
        return [str(int(token)) for token in super().rayaccel_parse_visible(value)]


class VisibleRangeSpacedOnly(Healthy):
    DEFECT = ("a visible-devices range is unpacked from 'a - b' as a person types it: '0-3', as launchers and the "
              "runtimes write it, raises on the unpacking")
    KILLED_BY = ("RAC243", "invariant visible-range-answered")

    def rayaccel_parse_visible(self, value: str) -> list[str]:
        out: list[str] = []
        for token in (t.strip() for t in value.split(",") if t.strip()):
            if "-" in token:
                low, high = token.split(" - ")
                out += [str(i) for i in range(int(low), int(high) + 1)]
            else:
                out.append(token)
        return out


class VisibleRangeReversedDropped(Healthy):
    DEFECT = "a reversed visible-devices range ('3-0') expands to range(3, 1), no unit, without a word"
    KILLED_BY = ("RAC243", "invariant visible-range-reversed-not-dropped")

    def rayaccel_parse_visible(self, value: str) -> list[str]:
        out: list[str] = []
        for token in super().rayaccel_parse_visible(value):
            match = _RANGE.match(token)
            out += [str(i) for i in range(int(match[1]), int(match[2]) + 1)] if match else [token]
        return out


class VisibleNonNumericDropped(Healthy):
    DEFECT = ("visible-devices ranges expanded, then every id that is not a number dropped without a word: a "
              "reversed range ('3-0') or any text no runtime reads vanishes instead of being kept or refused")
    KILLED_BY = ("RAC243", "invariant visible-range-reversed-not-dropped")

    def rayaccel_parse_visible(self, value: str) -> list[str]:
        return [u for u in _with_ranges(super().rayaccel_parse_visible(value), lambda low, high: list(
            range(low, high + 1))) if u.isdigit()]


class VisibleRangeOneDropped(Healthy):
    DEFECT = "a visible-devices range whose ends are equal ('3-3') expands to no unit at all"
    KILLED_BY = ("RAC243", "property visible-range-inclusive")

    def rayaccel_parse_visible(self, value: str) -> list[str]:
        return _with_ranges(super().rayaccel_parse_visible(value),
                            lambda low, high: list(range(low, high + 1)) if low < high else [])


# One partition name, one size on every node (RAC244) -------------------------------------------------------------

#: The machine's memory mode, in its environment (as a boot parameter): how many partitions each card's memory is
#: split into (as AMD's NPS1/NPS4), 2 when unset.
MEMORY_MODE = "ACME_MEMORY_PARTITIONS"


def _add_quartered_machine(plugin: str) -> None:
    """The plugin's acme-4 machine a second time, its cards' memory in four partitions: another node's fixture."""
    data = read_machine(plugin)
    data["name"], data["description"] = "acme-4-quartered", f"{data['description']}, memory in 4 partitions per card"
    data["host"]["env"] = {**(data["host"].get("env") or {}), MEMORY_MODE: "4"}
    write_machine(plugin, "acme-4-quartered", data)


def _partitioned(host: Host, path: str, card: Device, name: Callable[[int, int], str]) -> Device:
    """``card`` with its memory mode's partitions, one compute slice each, named ``name(k, parts)``."""
    parts = 4 if host.getenv(MEMORY_MODE) == "4" else 2
    memory = None if card.memory_mib is None else card.memory_mib // parts
    return Device.model_validate({
        **card.model_dump(), "partition_capacity": {"compute_slices": parts, "memory_slices": parts},
        "partitions": [{"id": f"{card.id}-p{k}", "kind": "compute-partition", "profile": name(k, parts),
                        "compute_slices": 1, "memory_slices": 1, "memory_mib": memory} for k in range(parts)]})


def _record_from(plugin: Healthy) -> None:
    """Rewrite what the plugin's fixtures expect (devices, resources, labels; each fault's resources) as the
    plugin itself builds them: fixtures recorded from the plugin, so only the invariant can tell."""
    from rayaccel.hosts.fixtures import load_fixture
    from rayaccel.inventory.builder import InventoryBuilder
    from rayaccel.plugins.manager import PluginManager
    from rayaccel.simulation.host_factory import simulated_host

    manager = PluginManager(autoload=False)
    manager.register(plugin, plugin.name)
    for path in sorted((FIXTURE_ROOT / plugin.name).glob("*.yaml")):
        data = read_machine(plugin.name, path.stem)
        fixture = load_fixture(path)
        built = InventoryBuilder(manager, [plugin.name]).build(simulated_host(fixture), with_metrics=False)
        data["expected"]["resources"] = dict(built.family(plugin.name).resources)  # type: ignore[union-attr]
        data["expected"]["labels"] = dict(built.labels)
        for fault in data["faults"]:
            if fault["expected"].get("resources"):
                faulty = InventoryBuilder(manager, [plugin.name]).build(
                    simulated_host(fixture, faults=[fault["name"]]), with_metrics=False)
                fault["expected"]["resources"] = dict(faulty.family(plugin.name).resources)  # type: ignore[union-attr]
        write_machine(plugin.name, path.stem, data)


class PartitionNamedByCompute(Healthy):
    DEFECT = ("a card's partitions are named by their compute share alone ('c1') while the card's memory mode "
              "splits its memory in two or in four: one name for 32 GiB on one node and 16 GiB on another")
    KILLED_BY = ("RAC244", "invariant one-partition-name-one-size")

    def __init__(self, name: str) -> None:
        super().__init__(name)
        _add_quartered_machine(name)

    def device(self, host: Host, path: str, driver: str | None) -> Device:
        return _partitioned(host, path, super().device(host, path, driver), lambda k, parts: "c1")


class PartitionNamedByPlace(Healthy):
    DEFECT = ("a card's partitions are named by their position on the card ('p0', 'p1', ...), so 'p0' is half a "
              "card on a node in one memory mode and a quarter on a node in another")
    KILLED_BY = ("RAC244", "invariant one-partition-name-one-size")

    def __init__(self, name: str) -> None:
        super().__init__(name)
        _add_quartered_machine(name)

    def device(self, host: Host, path: str, driver: str | None) -> Device:
        return _partitioned(host, path, super().device(host, path, driver), lambda k, parts: f"p{k}")


# Every link the host states between two discovered cards in the topology (RAC267) -----------------------------------


class IdsLowerCasedLinksLost(Healthy):
    DEFECT = ("card ids lower-cased ('the id is case-insensitive'); the link files keep the driver's spelling of the "
              "peer, which names no discovered card, so every link is dropped")
    KILLED_BY = ("RAC267", "invariant stated-link-in-topology")

    def device(self, host: Host, path: str, driver: str | None) -> Device:
        found = super().device(host, path, driver)
        return found.model_copy(update={"id": found.id.lower()})


class LinksOfFirstCardOnly(Healthy):
    DEFECT = ("links read from card 0's link files alone ('the mesh is symmetric'): the links between the other "
              "cards, which their own files state, are left out")
    KILLED_BY = ("RAC267", "invariant stated-link-in-topology")

    def rayaccel_topology(self, host: Host, devices: list[Device]) -> Topology:
        found = acme.rayaccel_topology(host, devices)
        first = devices[0].id if devices else None
        return found.model_copy(update={"links": [ln for ln in found.links if first in (ln.a, ln.b)]})


# A label named for the healthy or unhealthy cards, under a fault (RAC203) ------------------------------------------


class HealthyLabelCountsNotLost(Healthy):
    DEFECT = ("label acme.example.com/healthy-cards counts the cards that are not lost (no acme-lost reason), so a "
              "card with a fatal error still counts as healthy: '4' while one of the four is unhealthy")
    KILLED_BY = ("RAC203", "invariant health-count-label-follows-health")

    def labels(self, inventory: FamilyInventory) -> dict[str, str]:
        kept = sum(not any(r.code == "acme-lost" for r in h.reasons) for h in inventory.health)
        return {**super().labels(inventory), f"{LABEL_PREFIX}/healthy-cards": str(kept)}


class UnhealthyLabelCountsMissing(Healthy):
    DEFECT = ("label acme.example.com/unhealthy-cards is the four cards a node is built with less the cards found: "
              "'0' while a card found reports a fatal error")
    KILLED_BY = ("RAC203", "invariant health-count-label-follows-health")

    def labels(self, inventory: FamilyInventory) -> dict[str, str]:
        return {**super().labels(inventory), f"{LABEL_PREFIX}/unhealthy-cards": str(4 - len(inventory.devices))}


for _cls in (HealthKeptPerCard, HealthFromCounterDelta, SizeResourceFromFirstCard, MetricsPairedByListing,
             HealthOnlyVisibleCards, MetricsOnlyVisibleCards, VisibleRangeEndExclusive, VisibleRangeEndsOnly,
             VisibleRangeOneAsText, VisibleRangeOneDropped, VisibleIdsAsIntegers, VisibleRangeSpacedOnly,
             VisibleRangeReversedDropped, VisibleNonNumericDropped, PartitionNamedByCompute, PartitionNamedByPlace,
             HealthyLabelCountsNotLost, UnhealthyLabelCountsMissing, IdsLowerCasedLinksLost, LinksOfFirstCardOnly):
    _plugin = add_import_defect(_cls)
    globals()[_plugin.name.replace("-", "_")] = _plugin
    if _cls in (PartitionNamedByCompute, PartitionNamedByPlace):
        _record_from(_plugin)
