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
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from rayaccel import inputfiles
from rayaccel.atomicwrite import write_atomically
from rayaccel.catalog import parse_catalog, resolve_sku
from rayaccel.errors import CatalogError, FixtureError
from rayaccel.expectations import compare_expected, expectation_differences
from rayaccel.fixtures import FIXTURE_SUFFIXES, Fixture, installed_fixtures, load_fixture, parse_fixture
from rayaccel.host import Host
from rayaccel.hosts import simulated_host
from rayaccel.inventory import InventoryBuilder
from rayaccel.labels import VOCABULARY_PREFIX
from rayaccel.manager import MISSING, PluginManager
from rayaccel.raycompat import RAY_ACCELERATOR_TYPE_LABEL, RAY_LABEL_PREFIX
from rayaccel.records import Device, NodeInventory, Problem, SkuCatalog, SkuMatch, SkuRecord

#: SkuRecord field -> the ``rayaccel sku add`` option that sets it (for error messages).
OPTION_FOR_FIELD = {
    "id": "--id", "marketing_name": "--marketing-name", "accelerator_type": "--accelerator-type",
    "architecture": "--architecture", "memory_mib": "--memory-mib", "interconnect": "--interconnect",
    "match.pci_device_ids": "--pci-device-id", "match.product_names": "--product-name",
}


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


@dataclass(frozen=True)
class CatalogCheck:
    plugin: str
    path: str | None
    skus: int
    error: str | None

    @property
    def ok(self) -> bool:
        return self.error is None


# The SKU record -----------------------------------------------------------------------------------


def build_sku_record(*, sku_id: str, marketing_name: str, accelerator_type: str, product_names: Sequence[str],
                     pci_device_ids: Sequence[str] = (), memory_mib: int | None = None,
                     architecture: str | None = None, interconnect: str | None = None) -> SkuRecord:
    """A validated SKU record; a CatalogError naming the option otherwise."""
    if not product_names and not pci_device_ids:
        raise CatalogError("a SKU needs something to match devices by: give --product-name (as the driver reports "
                           "it) and, if known, --pci-device-id")
    try:
        return SkuRecord(id=sku_id, marketing_name=marketing_name, accelerator_type=accelerator_type,
                         architecture=architecture, memory_mib=memory_mib, interconnect=interconnect,
                         match=SkuMatch(pci_device_ids=[p.lower() for p in pci_device_ids],
                                        product_names=list(product_names)))
    except ValidationError as e:
        err = e.errors()[0]
        where = ".".join(str(p) for p in err["loc"] if not isinstance(p, int))
        option = OPTION_FOR_FIELD.get(where, where)
        value = err.get("input")
        raise CatalogError(f"{option} {value!r}: {err['msg']}") from None


def _check_pci_ids(sku: SkuRecord) -> None:
    for pci in sku.match.pci_device_ids:
        if not re.fullmatch(r"0x[0-9a-f]{4}", pci):
            raise CatalogError(f"--pci-device-id {pci!r}: must be 0x followed by 4 hex digits, e.g. 0x2901")


def record_data(sku: SkuRecord) -> dict[str, Any]:
    """The record as catalog data: no nulls, no empty match lists (as people write catalogs)."""
    data = sku.model_dump(mode="json", exclude_none=True)
    data["match"] = {k: v for k, v in data["match"].items() if v}
    return data


# The catalog file ---------------------------------------------------------------------------------


def _catalog_of(manager: PluginManager, plugin: str) -> SkuCatalog:
    if not manager.implements(plugin, "rayaccel_sku_catalog"):
        raise CatalogError(f"plugin {plugin!r} has no SKU catalog (it does not implement rayaccel_sku_catalog); "
                           "add one: return rayaccel.catalog.load_catalog(<path of skus.yaml>)")
    problems: list[Problem] = []
    catalog = manager.sku_catalog(plugin, problems)
    if catalog is None:
        why = problems[0].message if problems else "it returned nothing"
        raise CatalogError(f"plugin {plugin!r}: its SKU catalog cannot be read: {why.removeprefix('raised ')}")
    if catalog.source_path is None:
        raise CatalogError(f"plugin {plugin!r} builds its SKU catalog in code, so there is no file to add to; "
                           "load it with rayaccel.catalog.load_catalog(<file>) instead")
    return catalog


def _conflicts(catalog: SkuCatalog, sku: SkuRecord) -> str | None:
    for other in catalog.skus:
        if other.id == sku.id:
            return f"SKU id {sku.id!r} is already in the catalog ({other.marketing_name}); choose another --id"
        shared = set(sku.match.pci_device_ids) & {p.lower() for p in other.match.pci_device_ids}
        if shared:
            return (f"PCI device id {sorted(shared)[0]} is already matched by SKU {other.id!r}, so devices would "
                    "keep resolving to it; correct the existing SKU instead, or give the right --pci-device-id")
    if not sku.match.pci_device_ids:
        for name in sku.match.product_names:
            probe = Device(index=0, id="probe", product_name=name)
            other_sku = resolve_sku(catalog, probe)
            if other_sku is not None:
                return (f"product name {name!r} already resolves to SKU {other_sku.id!r}; give the new SKU's "
                        "--pci-device-id so its devices can be told apart")
    return None


def appended_catalog_text(path: Path, text: str, data: dict[str, Any], record: dict[str, Any]) -> tuple[str, bool]:
    """The catalog file's new text with ``record`` appended, and whether it had to be written out again.

    JSON keeps its indentation. YAML gets the record appended as text after the last entry of ``skus``, so
    comments and the style of the other entries stay; if the result would not read back as exactly the old
    data plus the record (an unusual layout), the whole file is written out again instead.
    """
    new_data = {**data, "skus": [*data.get("skus", []), record]}
    if path.suffix == ".json":
        indent = next((len(line) - len(line.lstrip(" ")) for line in text.splitlines()[1:] if line.startswith(" ")), 2)
        return json.dumps(new_data, indent=indent, ensure_ascii=False) + "\n", False
    appended = _append_yaml_item(text, record)
    if appended is not None:
        try:
            if yaml.safe_load(appended) == new_data:
                return appended, False
        except yaml.YAMLError:
            pass
    return yaml.safe_dump(new_data, sort_keys=False, allow_unicode=True, width=120), True


def _append_yaml_item(text: str, record: dict[str, Any]) -> str | None:
    lines = text.splitlines(keepends=True)
    start = next((i for i, line in enumerate(lines) if re.match(r"^skus:\s*(#.*)?$", line)), None)
    if start is None:
        return None  # flow style (skus: [...]) or no list yet: let the caller write the file out again
    end = next((j for j in range(start + 1, len(lines))
                if lines[j].strip() and not lines[j][0].isspace() and not lines[j].startswith(("#", "-"))), len(lines))
    items = [j for j in range(start + 1, end) if lines[j].lstrip().startswith("- ")]
    if not items:
        return None
    indent = len(lines[items[0]]) - len(lines[items[0]].lstrip())
    last = max(j for j in range(start + 1, end) if lines[j].strip() and not lines[j].lstrip().startswith("#"))
    dumped = yaml.safe_dump([record], sort_keys=False, allow_unicode=True, width=120)
    block = "".join((" " * indent + line) if line.strip() else line for line in dumped.splitlines(keepends=True))
    head = lines[: last + 1]
    if not head[-1].endswith("\n"):
        head[-1] += "\n"
    return "".join([*head, block, *lines[last + 1:]])


# The fixture --------------------------------------------------------------------------------------


class _FixtureDumper(yaml.SafeDumper):
    """Multi-line strings (recorded command output) as literal blocks, as people write fixtures."""


def _represent_str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style="|" if "\n" in value.rstrip("\n") else None)


_FixtureDumper.add_representer(str, _represent_str)


def fixture_text(data: dict[str, Any], suffix: str) -> str:
    if suffix == ".json":
        return json.dumps(data, indent=2, ensure_ascii=False) + "\n"
    return yaml.dump(data, Dumper=_FixtureDumper, sort_keys=False, allow_unicode=True, width=120)


def _plugin_fixtures(manager: PluginManager, plugin: str) -> dict[str, Path]:
    return {ref: path for ref, path in installed_fixtures(manager).items() if ref.split("/", 1)[0] == plugin}


def choose_base_fixture(manager: PluginManager, plugin: str, catalog: SkuCatalog, sku: SkuRecord,
                        requested: str | None) -> Fixture:
    """The fixture to derive from: the one asked for, else the plugin's first of the SKU's architecture,
    else its first (a fixture of the same architecture is what a new SKU of a known chip resembles)."""
    fixtures = _plugin_fixtures(manager, plugin)
    if requested is not None:
        if "/" not in requested and Path(requested).suffix not in FIXTURE_SUFFIXES:
            requested = f"{plugin}/{requested}"
        if requested in fixtures:
            return load_fixture(fixtures[requested])
        path = Path(requested)
        if path.suffix in FIXTURE_SUFFIXES and path.exists():
            fixture = load_fixture(path)
            if fixture.plugin != plugin:
                raise FixtureError(f"--from-fixture {requested}: that fixture is plugin {fixture.plugin!r}'s, "
                                   f"not {plugin!r}'s")
            return fixture
        raise FixtureError(f"--from-fixture {requested!r}: plugin {plugin!r} has no such fixture; it has: "
                           f"{', '.join(sorted(fixtures)) or 'none'}")
    if not fixtures:
        raise FixtureError(f"plugin {plugin!r} ships no fixtures (rayaccel_fixture_dirs), so there is none to derive "
                           "the new SKU's fixture from; give one with --from-fixture <file>")
    loaded = [load_fixture(fixtures[ref]) for ref in sorted(fixtures)]
    if sku.architecture:
        by_id = {s.id: s for s in catalog.skus}
        for fixture in loaded:
            archs = {by_id[s].architecture for s in fixture.expected.skus.values() if s in by_id}
            if fixture.expected.labels.get(f"{VOCABULARY_PREFIX}architecture") == sku.architecture or \
                    archs == {sku.architecture}:
                return fixture
    return loaded[0]


def _renamed_type(resources: dict[str, float], accelerator_type: str) -> dict[str, float]:
    return {(f"accelerator_type:{accelerator_type}" if k.startswith("accelerator_type:") else k): v
            for k, v in resources.items()}


def derived_expectation(base: Fixture, sku: SkuRecord) -> dict[str, Any]:
    """The base fixture's expectation, with everything the SKU record decides changed to the SKU's."""
    exp = base.expected.model_dump(mode="json")
    exp["accelerator_type"] = sku.accelerator_type
    exp["resources"] = _renamed_type(exp["resources"], sku.accelerator_type)
    device_ids = exp["device_ids"] or list(exp["skus"])
    exp["skus"] = dict.fromkeys(device_ids, sku.id)
    labels: dict[str, str] = exp["labels"]
    if labels:
        labels[RAY_ACCELERATOR_TYPE_LABEL] = sku.accelerator_type
        labels[f"{VOCABULARY_PREFIX}sku-known"] = "true"
        labels[f"{VOCABULARY_PREFIX}sku"] = sku.id
        if sku.memory_mib is not None:
            labels[f"{VOCABULARY_PREFIX}memory-mib"] = str(sku.memory_mib)
        if sku.architecture is not None:
            labels[f"{VOCABULARY_PREFIX}architecture"] = sku.architecture
    return exp


def derived_faults(base: Fixture, rewritten: Any, sku: SkuRecord) -> list[dict[str, Any]]:
    """The faults as the plugin rewrote them (their patches may restate the device list in the vendor's
    format, now of the new SKU), each with the base fault's expectation and the accelerator type renamed.

    Only the patches come from the plugin: a fault it dropped, renamed or added is refused, because the
    expectation that says what the fault must do is the base fixture's."""
    by_name = {f.get("name"): f for f in rewritten if isinstance(f, dict)} if isinstance(rewritten, list) else {}
    if rewritten is not None and set(by_name) != {f.name for f in base.faults}:
        raise FixtureError(f"rayaccel_fixture_for_sku returned faults {sorted(map(str, by_name))}, but the base "
                           f"fixture {base.ref} has {sorted(f.name for f in base.faults)}; rewrite each fault's patch, "
                           "keep the faults themselves")
    faults = []
    for fault in base.faults:
        patch = by_name[fault.name].get("patch", fault.patch) if fault.name in by_name else fault.patch
        expected = fault.expected.model_dump(mode="json", exclude_none=True)
        if fault.expected.resources is not None:
            expected["resources"] = _renamed_type(fault.expected.resources, sku.accelerator_type)
        faults.append({**fault.model_dump(mode="json"), "patch": copy.deepcopy(patch), "expected": expected})
    return faults


class _CatalogOverride(InventoryBuilder):
    """An inventory builder that sees the new catalog before it is written."""

    def __init__(self, manager: PluginManager, plugin: str, catalog: SkuCatalog) -> None:
        super().__init__(manager, [plugin])
        self._plugin = plugin
        self._new_catalog = catalog

    def catalog(self, plugin: str, problems: list[Problem]) -> SkuCatalog | None:
        return self._new_catalog if plugin == self._plugin else super().catalog(plugin, problems)


def _with_plugin_resources(expected: dict[str, float], observed: dict[str, float],
                           family_resource: str) -> dict[str, float]:
    """The family's resource and the accelerator type as expected; any other resource (a TPU slice's head
    resource names the chip generation) as the plugin answered on the new fixture."""
    decided = {k: v for k, v in expected.items() if k == family_resource or k.startswith("accelerator_type:")}
    return {**decided, **{k: v for k, v in observed.items()
                          if k != family_resource and not k.startswith("accelerator_type:")}}


def _is_plugin_label(key: str) -> bool:
    """A label the plugin decides from the device, not the SKU record: its own (under its prefix), Ray's
    generation-specific ones (``ray.io/tpu-pod-type``: a new chip generation has its own), and the scale-up
    domain (its size and kind follow from the generation too)."""
    if key.startswith(RAY_LABEL_PREFIX):
        return key != RAY_ACCELERATOR_TYPE_LABEL
    return not key.startswith(VOCABULARY_PREFIX) or key.startswith(f"{VOCABULARY_PREFIX}scale-up-domain")


def _observed_label_keys(sku: SkuRecord) -> set[str]:
    """Vocabulary labels the SKU record leaves to the device: what it reports on the new fixture is kept."""
    keys = set()
    if sku.architecture is None:
        keys.add(f"{VOCABULARY_PREFIX}architecture")
    if sku.memory_mib is None:
        keys.add(f"{VOCABULARY_PREFIX}memory-mib")
    return keys


def _inventory(builder: InventoryBuilder, fixture: Fixture, faults: Sequence[str] = ()) -> NodeInventory:
    host: Host = simulated_host(fixture, faults=faults)
    return builder.build(host, with_metrics=False)


# Adding a SKU -------------------------------------------------------------------------------------


def add_sku(manager: PluginManager, plugin: str, sku: SkuRecord, from_fixture: str | None = None,
            fixture_name: str | None = None, dry_run: bool = False) -> SkuAddition:
    """Append ``sku`` to ``plugin``'s catalog and write a fixture of it; both or neither.

    ``dry_run``: every check is made (the new fixture is built and its inventory compared, faults included),
    nothing is written."""
    manager.plugin(plugin)  # a clear error for an unknown plugin name
    _check_pci_ids(sku)
    catalog = _catalog_of(manager, plugin)
    conflict = _conflicts(catalog, sku)
    if conflict:
        raise CatalogError(f"plugin {plugin!r}: {conflict}")
    catalog_path = Path(str(catalog.source_path))
    fmt = "json" if catalog_path.suffix == ".json" else "yaml"
    old_text = inputfiles.read_text(catalog_path, "SKU catalog", CatalogError)
    old_data = inputfiles.parse(old_text, str(catalog_path), "SKU catalog", fmt, CatalogError)
    new_text, rewritten = appended_catalog_text(catalog_path, old_text, old_data, record_data(sku))
    new_data = json.loads(new_text) if catalog_path.suffix == ".json" else yaml.safe_load(new_text)
    new_catalog = parse_catalog(new_data, str(catalog_path))

    base = choose_base_fixture(manager, plugin, catalog, sku, from_fixture)
    base_path = _plugin_fixtures(manager, plugin).get(base.ref)
    name = fixture_name or sku.id
    if not re.fullmatch(r"[a-z0-9][a-z0-9._-]*", name):
        raise FixtureError(f"--fixture-name {name!r}: use lower-case letters, digits, '.', '_' and '-'")
    directory = base_path.parent if base_path else Path(manager.fixture_dirs(plugin)[0])
    suffix = base_path.suffix if base_path else ".yaml"
    fixture_path = directory / f"{name}{suffix}"
    if f"{plugin}/{name}" in _plugin_fixtures(manager, plugin) or fixture_path.exists():
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
        data["expected"]["resources"] = _with_plugin_resources(data["expected"]["resources"], inventory.resources,
                                                               family_resource)
    for fault in data["faults"]:
        if fault["expected"].get("resources") is not None:
            faulted = _inventory(builder, fixture, [fault["name"]])
            fault["expected"]["resources"] = _with_plugin_resources(fault["expected"]["resources"],
                                                                    faulted.resources, family_resource)
    fixture = parse_fixture(data, f"the fixture for {sku.id}")
    observed = _observed_label_keys(sku)
    recorded = {k: v for k, v in inventory.labels.items() if k in observed or _is_plugin_label(k)}
    if data["expected"]["labels"]:
        sdk_labels = {k: v for k, v in data["expected"]["labels"].items()
                      if k not in observed and not _is_plugin_label(k)}
        data["expected"]["labels"] = {**sdk_labels, **recorded}
        fixture = parse_fixture(data, f"the fixture for {sku.id}")
    diffs = compare_expected(inventory, fixture)
    for fault in fixture.faults:
        # Built without metrics (no metric hook runs here), so problems a fault expects of them cannot show.
        expected = fault.expected.model_copy(update={"problem_codes": []})
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


# Checking catalogs --------------------------------------------------------------------------------


def check_catalogs(manager: PluginManager, plugins: Sequence[str] | None = None) -> list[CatalogCheck]:
    """Every plugin's catalog: readable, valid, of the plugin's family, no PCI id claimed by two SKUs."""
    results = []
    for plugin in plugins or manager.plugin_names():
        manager.plugin(plugin)
        if not manager.implements(plugin, "rayaccel_sku_catalog"):
            continue
        problems: list[Problem] = []
        catalog = manager.sku_catalog(plugin, problems)
        if catalog is None:
            why = problems[0].message.removeprefix("raised ") if problems else "rayaccel_sku_catalog returned nothing"
            results.append(CatalogCheck(plugin, None, 0, why.removeprefix("CatalogError: ")))
            continue
        error = None
        family = manager.family(plugin).name
        if catalog.family != family:
            error = f"the catalog is for family {catalog.family!r}, but the plugin's family is {family!r}"
        claimed: dict[str, str] = {}
        for sku in catalog.skus:
            for pci in (p.lower() for p in sku.match.pci_device_ids):
                if error is None and pci in claimed:
                    error = (f"PCI device id {pci} is matched by SKUs {claimed[pci]!r} and {sku.id!r}; the first "
                             "always wins, so keep it on one SKU")
                claimed.setdefault(pci, sku.id)
        if error is None:
            for sku in catalog.skus:
                bad = next((p for p in sku.match.pci_device_ids if not re.fullmatch(r"0x[0-9a-fA-F]{4}", p)), None)
                if bad is not None:
                    error = f"SKU {sku.id!r}: PCI device id {bad!r} is not 0x followed by 4 hex digits"
                    break
        if error is not None and catalog.source_path:
            error = f"{catalog.source_path}: {error}"
        results.append(CatalogCheck(plugin, catalog.source_path, len(catalog.skus), error))
    return results
