"""Day-zero SKU onboarding: a new chip SKU becomes catalog data and a simulated fixture, checked first.

``rayaccel sku add`` is a thin front end to :func:`add_sku`. The order is: build and validate the SKU
record, append it to the plugin's catalog (in memory), let the plugin rewrite one of its fixtures for
the SKU (``rayaccel_fixture_for_sku``), give that fixture the expectation the SKU implies, run the
inventory on it with the new catalog, and only when everything agrees write the two files (each to a
temporary file renamed into place). A refusal leaves both files as they were.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rayaccel.catalog import parse_catalog
from rayaccel.errors import CatalogError, FixtureError
from rayaccel.files import reading
from rayaccel.files.atomic import write_atomically
from rayaccel.hosts.expectations import compare_expected, expectation_differences
from rayaccel.hosts.fixtures import Fixture, fixture_name_problem, fixture_text, parse_fixture
from rayaccel.inventory.builder import InventoryBuilder
from rayaccel.onboarding.catalog_file import (
    appended_catalog_text,
    catalog_of,
    check_pci_ids,
    conflicts,
    record_data,
)
from rayaccel.onboarding.fleet import FleetDevice, fleet_devices, retyped_devices
from rayaccel.onboarding.sku_fixture import (
    choose_base_fixture,
    derived_expectation,
    derived_faults,
    is_plugin_label,
    misnamed_devices,
    observed_label_keys,
    plugin_fixtures,
    recorded_metric_values,
    with_plugin_resources,
)
from rayaccel.plugins.manager import MISSING, PluginManager
from rayaccel.records import NodeInventory, Problem, SkuCatalog, SkuRecord
from rayaccel.simulation.host_factory import simulated_host


@dataclass(frozen=True)
class SkuAddition:
    """What :func:`add_sku` wrote."""

    plugin: str
    sku: SkuRecord
    catalog_path: Path
    fixture_path: Path
    fixture_ref: str
    base_fixture: str
    #: Labels only the plugin (or the device) decides: recorded from the plugin's answer on the new fixture.
    recorded_labels: dict[str, str] = field(default_factory=dict)
    #: True when the catalog could not be appended to as text and was written out again (comments lost).
    catalog_rewritten: bool = False
    #: False for a dry run: everything was checked, nothing written.
    written: bool = True
    #: The new fixture, as written (or as it would be).
    fixture_data: dict[str, Any] = field(default_factory=dict)


class _CatalogOverride(InventoryBuilder):
    """An inventory builder that sees the new catalog before it is written."""

    def __init__(self, manager: PluginManager, plugin: str, catalog: SkuCatalog) -> None:
        super().__init__(manager, [plugin])
        self._plugin = plugin
        self._new_catalog = catalog

    def catalog(self, plugin: str, problems: list[Problem]) -> SkuCatalog | None:
        return self._new_catalog if plugin == self._plugin else super().catalog(plugin, problems)


def _inventory(builder: InventoryBuilder, fixture: Fixture, faults: Sequence[str] = (),
               with_metrics: bool = False) -> NodeInventory:
    return builder.build(simulated_host(fixture, faults=faults), with_metrics=with_metrics)


# Adding a SKU -------------------------------------------------------------------------------------


def add_sku(manager: PluginManager, plugin: str, sku: SkuRecord, from_fixture: str | None = None,
            fixture_name: str | None = None, dry_run: bool = False, check_fixtures: Sequence[Path] = (),
            allow_retype: bool = False,
            fleet: Callable[[], Sequence[FleetDevice]] | None = None) -> SkuAddition:
    """Append ``sku`` to ``plugin``'s catalog and write a fixture of it; both or neither.

    Refused when the new SKU would take a device another SKU matched before, on any fixture the plugin ships
    or in ``check_fixtures`` (recorded ones), unless ``allow_retype``.
    ``dry_run``: every check is made (the new fixture is built and its inventory compared, faults included),
    nothing is written.
    ``fleet``: gives those devices as ``fleet_devices(manager, plugin, check_fixtures)`` discovers them, where the
    caller remembers them (RAC230 asks for one plugin's every fixture against the same fleet); else discovered."""
    manager.plugin(plugin)  # a clear error for an unknown plugin name
    check_pci_ids(sku)
    catalog = catalog_of(manager, plugin)
    conflict = conflicts(catalog, sku)
    if conflict:
        raise CatalogError(f"plugin {plugin!r}: {conflict}")
    catalog_path = Path(str(catalog.source_path))
    fmt = "json" if catalog_path.suffix == ".json" else "yaml"
    old_text = reading.read_text(catalog_path, "SKU catalog", CatalogError)
    old_data = reading.parse(old_text, str(catalog_path), "SKU catalog", fmt, CatalogError)
    new_text, rewritten = appended_catalog_text(catalog_path, old_text, old_data, record_data(sku))
    new_data = json.loads(new_text) if catalog_path.suffix == ".json" else reading.safe_load_yaml(new_text)
    new_catalog = parse_catalog(new_data, str(catalog_path))
    devices = fleet() if fleet is not None else fleet_devices(manager, plugin, check_fixtures)
    retyped = retyped_devices(devices, catalog, new_catalog, sku)
    if retyped and not allow_retype:
        more = f" (and {len(retyped) - 3} more)" if len(retyped) > 3 else ""
        raise CatalogError(
            f"plugin {plugin!r}: SKU {sku.id} would take {len(retyped)} device{'s' if len(retyped) > 1 else ''} "
            f"another SKU matched before: {'; '.join(retyped[:3])}{more}. Match it by what tells its devices "
            "apart (--match-field FIELD=VALUE, --pci-device-id; a --product-name rule outranks every field rule), "
            "or pass --allow-retype if those devices really are this SKU; nothing was written")

    base = choose_base_fixture(manager, plugin, catalog, sku, from_fixture)
    base_path = plugin_fixtures(manager, plugin).get(base.ref)
    name = fixture_name or sku.id
    problem = fixture_name_problem(name)
    if problem:
        raise FixtureError(f"--fixture-name: {problem}")
    directory = base_path.parent if base_path else Path(manager.fixture_dirs(plugin)[0])
    suffix = base_path.suffix if base_path else ".yaml"
    fixture_path = directory / f"{name}{suffix}"
    if f"{plugin}/{name}" in plugin_fixtures(manager, plugin) or fixture_path.exists():
        raise FixtureError(f"fixture {plugin}/{name} already exists ({fixture_path}); choose another --fixture-name")

    if not manager.implements(plugin, "rayaccel_fixture_for_sku"):
        raise FixtureError(f"plugin {plugin!r} does not implement rayaccel_fixture_for_sku, so rayaccel cannot write "
                           "a fixture for the new SKU (only the plugin knows its vendor formats); implement it, "
                           "see docs/onboarding.md")
    problems: list[Problem] = []
    rewritten_data = manager.call(plugin, "rayaccel_fixture_for_sku", problems,
                                  fixture=base.model_dump(mode="json", by_alias=True), sku=sku)
    if rewritten_data is None or rewritten_data is MISSING:
        why = problems[0].message if problems else "it returned nothing"
        raise FixtureError(f"plugin {plugin!r}: rayaccel_fixture_for_sku failed on {base.ref}: {why}")

    data = copy.deepcopy(rewritten_data)
    data.update({
        "schema": "rayaccel-fixture/1", "plugin": plugin, "name": name,
        "description": f"{base.description}; as SKU {sku.marketing_name} ({sku.id})",
        "source": f"derived from {base.ref} by rayaccel sku add (day-zero: not recorded on hardware)",
        "expected": derived_expectation(base, sku),
        "faults": derived_faults(base, data.get("faults"), sku),
    })
    builder = _CatalogOverride(manager, plugin, new_catalog)
    fixture = parse_fixture(data, f"the fixture for {sku.id}")
    inventory = _inventory(builder, fixture)
    family_resource = manager.family(plugin).resource_name
    if data["expected"]["resources"]:
        data["expected"]["resources"] = with_plugin_resources(data["expected"]["resources"], inventory.resources,
                                                               family_resource)
    for fault in data["faults"]:
        if fault["expected"].get("resources") is not None:
            faulted = _inventory(builder, fixture, [fault["name"]])
            fault["expected"]["resources"] = with_plugin_resources(fault["expected"]["resources"],
                                                                    faulted.resources, family_resource)
    fixture = parse_fixture(data, f"the fixture for {sku.id}")
    observed = observed_label_keys(sku)
    recorded = {k: v for k, v in inventory.labels.items() if k in observed or is_plugin_label(k)}
    if data["expected"]["labels"]:
        sdk_labels = {k: v for k, v in data["expected"]["labels"].items()
                      if k not in observed and not is_plugin_label(k)}
        data["expected"]["labels"] = {**sdk_labels, **recorded}
        fixture = parse_fixture(data, f"the fixture for {sku.id}")
    diffs = compare_expected(inventory, fixture)
    built = inventory.family(manager.family(plugin).name)
    diffs += misnamed_devices(built.devices if built else [], sku, data["host"])
    if data["expected"].get("metric_values"):  # what the machine reads, recomputed for the SKU (RAC206 grades it)
        family = next((f for f in _inventory(builder, fixture, with_metrics=True).families if f.plugin == plugin),
                      None)
        samples = {(m.device, m.name): m.value for m in (family.metrics if family else [])}
        data["expected"]["metric_values"], wrong = recorded_metric_values(data["expected"]["metric_values"],
                                                                          samples, sku)
        diffs += wrong
        fixture = parse_fixture(data, f"the fixture for {sku.id}")
    for fault in fixture.faults:
        # Built without metrics (no metric hook runs here), so problems a fault expects of them cannot show, nor
        # can the problems be held to exactly the expected ones, or to their severities.
        expected = fault.expected.model_copy(update={"problem_codes": [], "problems_exactly": False,
                                                     "problem_severities": {}})
        diffs += [f"with fault {fault.name}: {d}" for d in
                  expectation_differences(_inventory(builder, fixture, [fault.name]), plugin, expected)]
    if diffs:
        raise FixtureError(
            f"the fixture plugin {plugin!r} derived from {base.ref} does not behave as SKU {sku.id} must: "
            + "; ".join(diffs[:4]) + (f" (and {len(diffs) - 4} more)" if len(diffs) > 4 else "")
            + ". Derive it from a fixture of a similar device (--from-fixture), or make the plugin's "
              "rayaccel_fixture_for_sku rewrite what differs; nothing was written")

    if dry_run:
        return SkuAddition(plugin=plugin, sku=sku, catalog_path=catalog_path, fixture_path=fixture_path,
                           fixture_ref=f"{plugin}/{name}", base_fixture=base.ref, recorded_labels=recorded,
                           catalog_rewritten=rewritten, written=False, fixture_data=data)
    try:
        write_atomically(fixture_path, fixture_text(data, suffix))
    except OSError as e:
        raise FixtureError(f"cannot write {fixture_path}: {e.strerror or e}; nothing was written (is the plugin "
                           "installed read-only? onboard SKUs in the plugin's source checkout)") from None
    try:
        write_atomically(catalog_path, new_text)
    except BaseException as e:
        fixture_path.unlink(missing_ok=True)  # both or neither
        if isinstance(e, OSError):
            raise CatalogError(f"cannot write {catalog_path}: {e.strerror or e}; nothing was written") from None
        raise
    return SkuAddition(plugin=plugin, sku=sku, catalog_path=catalog_path, fixture_path=fixture_path,
                       fixture_ref=f"{plugin}/{name}", base_fixture=base.ref, recorded_labels=recorded,
                       catalog_rewritten=rewritten, fixture_data=data)
