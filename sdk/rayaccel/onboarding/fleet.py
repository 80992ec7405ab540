"""The fleet a catalog change can re-type: every device of a plugin's fixtures (those it ships and recorded
ones given by path) as discovery reports it, resolved against a catalog before and after a change.

``rayaccel sku add`` refuses a SKU that takes devices another SKU matched before (a product-name rule
outranks every field rule, so a new SKU matched by the name a tool prints for every card would re-type the
whole fleet); ``rayaccel sku check`` reports devices two SKUs match by the deciding rule (ambiguous) and
SKUs whose rule a device satisfies but another SKU's more specific rule wins (shadowed).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from rayaccel import hookspec
from rayaccel.catalog import every_match, matching_skus, resolve_sku, unreachable_skus
from rayaccel.errors import FixtureError
from rayaccel.hosts.fixtures import Fixture, load_fixture
from rayaccel.onboarding.sku_fixture import plugin_fixtures
from rayaccel.plugins.manager import PluginManager
from rayaccel.records import Device, Problem, SkuCatalog, SkuRecord
from rayaccel.simulation.host_factory import simulated_host


@dataclass(frozen=True)
class FleetDevice:
    """One device of a fixture, as the plugin's discovery reported it (before the SDK resolved its SKU)."""

    fixture: str
    device: Device
    #: The SKU the fixture states the device resolves to (``expected.skus``), if it states one.
    stated_sku: str | None = None

    def describe(self) -> str:
        what = f"{self.device.product_name!r}" if self.device.product_name else "no product name"
        if self.device.memory_mib is not None:
            what += f", {self.device.memory_mib} MiB"
        return f"{self.fixture}: {self.device.id} ({what})"


def _fixtures(manager: PluginManager, plugin: str, recorded: Sequence[Path]) -> list[Fixture]:
    fixtures = [load_fixture(path) for _, path in sorted(plugin_fixtures(manager, plugin).items())]
    for path in recorded:
        if not path.is_file():
            why = "is not a regular file" if path.exists() else "does not exist"
            raise FixtureError(f"--check-fixture {path} {why}; give a fixture file recorded with rayaccel record")
        fixture = load_fixture(path)
        if fixture.plugin != plugin:
            raise FixtureError(f"--check-fixture {path}: that fixture is plugin {fixture.plugin!r}'s, not {plugin!r}'s")
        fixtures.append(fixture)
    return fixtures


def fleet_devices(manager: PluginManager, plugin: str, recorded: Sequence[Path] = ()) -> list[FleetDevice]:
    """Every device of the plugin's fixtures and of the ``recorded`` fixture files, as discovered."""
    fleet = []
    for fixture in _fixtures(manager, plugin, recorded):
        problems: list[Problem] = []
        devices = manager.answer(plugin, hookspec.DISCOVER, problems, host=simulated_host(fixture)) or []
        fleet += [FleetDevice(fixture.ref, d, fixture.expected.skus.get(d.id))
                  for d in devices]
    return fleet


def retyped_devices(fleet: Sequence[FleetDevice], before: SkuCatalog, after: SkuCatalog,
                    new_sku: SkuRecord) -> list[str]:
    """Devices of the fleet a SKU matched before that ``after`` resolves otherwise, or to a tie with the new
    SKU: one line each, naming the device and both SKUs."""
    lines = []
    for member in fleet:
        old = resolve_sku(before, member.device) or _stated(before, member)
        if old is None:
            continue
        new = resolve_sku(after, member.device)
        if new is None or new.id != old.id:
            lines.append(f"{member.describe()} was SKU {old.id}, would be {new.id if new else 'unknown'}")
            continue
        found = matching_skus(after, member.device)
        if found is not None and new_sku.id in {s.id for s in found[1]} and len(found[1]) > 1:
            lines.append(f"{member.describe()} would match SKUs {old.id} and {new_sku.id} alike ({found[0]})")
    return lines


def _stated(catalog: SkuCatalog, member: FleetDevice) -> SkuRecord | None:
    return next((s for s in catalog.skus if s.id == member.stated_sku), None)


def resolution_findings(catalog: SkuCatalog, fleet: Sequence[FleetDevice]) -> tuple[list[str], list[str]]:
    """(errors, notes) of the catalog over the fleet: a device two SKUs match by the deciding rule, or that
    resolves to another SKU than its fixture states, or a SKU told apart by fields that a card stating them would
    not resolve to (:func:`~rayaccel.catalog.unreachable_skus`), is an error; a SKU whose rule a device satisfies while
    another SKU's more specific rule wins is a note (a broad pattern under exact names is meant that way)."""
    errors, notes = [], []
    for member in fleet:
        matches = every_match(catalog, member.device)
        if not matches:
            continue
        how, winner = matches[0]
        tied = [s.id for rule, s in matches if rule == how]
        if len(tied) > 1:
            errors.append(f"ambiguous: {member.describe()} matches SKUs {', '.join(tied)} by {how}; the first "
                          "wins by catalog order: give one of them a rule that tells the devices apart")
        elif member.stated_sku and member.stated_sku != winner.id and not member.device.sku:
            errors.append(f"{member.describe()} resolves to SKU {winner.id} by {how}, but the fixture states "
                          f"{member.stated_sku}")
        shadowed = {s.id: rule for rule, s in matches if rule != how and s.id not in tied}
        for sku_id, rule in shadowed.items():
            notes.append(f"shadowed: {member.describe()} matches SKU {sku_id} by {rule}, but SKU {winner.id} "
                         f"wins by {how}")
    # A SKU told apart by fields that no card of it can reach is an error though no fixture has such a card.
    errors += unreachable_skus(catalog, [member.device for member in fleet])
    return errors, notes
