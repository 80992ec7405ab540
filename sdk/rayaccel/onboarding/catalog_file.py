"""A plugin's SKU catalog as a file: a new SKU record, appended to the file as people write it, and the checks
``rayaccel sku check`` runs on every installed catalog."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from rayaccel import hookspec
from rayaccel.catalog import resolve_sku
from rayaccel.errors import CatalogError, FixtureError
from rayaccel.files.reading import safe_load_yaml
from rayaccel.onboarding.fleet import fleet_devices, resolution_findings
from rayaccel.plugins.manager import PluginManager
from rayaccel.records import Device, Problem, SkuCatalog, SkuMatch, SkuRecord
from rayaccel.support.safe_text import control_characters, excerpt

#: SkuRecord field -> the ``rayaccel sku add`` option that sets it (for error messages).
OPTION_FOR_FIELD = {
    "id": "--id", "marketing_name": "--marketing-name", "accelerator_type": "--accelerator-type",
    "architecture": "--architecture", "memory_mib": "--memory-mib", "interconnect": "--interconnect",
    "match.pci_device_ids": "--pci-device-id", "match.product_names": "--product-name", "match.fields": "--match-field",
}


@dataclass(frozen=True)
class CatalogCheck:
    plugin: str
    path: str | None
    skus: int
    error: str | None
    #: Shadowed matches on the plugin's fixtures: a SKU's rule a device satisfies while another SKU wins.
    notes: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        return self.error is None


# The SKU record -----------------------------------------------------------------------------------


def parse_match_fields(items: Sequence[str]) -> dict[str, str]:
    """``--match-field KEY=VALUE`` options as a ``fields`` rule; a CatalogError for a malformed one."""
    fields: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key or not value:
            raise CatalogError(f"--match-field {item[:80]!r}: give FIELD=VALUE, e.g. model=X1-48G or memory_mib=49152")
        if key in fields:
            raise CatalogError(f"--match-field {key!r} is given twice; give each field once")
        fields[key] = value
    return fields


#: The longest name a catalog takes from an option (a product or marketing name is tens of characters).
MAX_TEXT_OPTION = 256


def free_text_problem(text: str) -> str | None:
    """Why ``text`` cannot be a name written into a catalog (None when it can): too long, blank, or holding
    control characters (a newline would be a second YAML line to whoever reads the catalog by eye or tool)."""
    if len(text) > MAX_TEXT_OPTION:
        return f"is {len(text)} characters long (at most {MAX_TEXT_OPTION})"
    if not text.strip():
        return "is blank"
    if control_characters(text):
        return f"holds control characters ({', '.join(control_characters(text))})"
    return None


def build_sku_record(*, sku_id: str, marketing_name: str, accelerator_type: str, product_names: Sequence[str],
                     pci_device_ids: Sequence[str] = (), memory_mib: int | None = None,
                     architecture: str | None = None, interconnect: str | None = None,
                     fields: dict[str, str] | None = None) -> SkuRecord:
    """A validated SKU record; a CatalogError naming the option otherwise."""
    texts = [("--marketing-name", marketing_name), ("--architecture", architecture),
             ("--interconnect", interconnect), *(("--product-name", name) for name in product_names),
             *(("--match-field", value) for value in (fields or {}).values())]
    for option, text in texts:
        why = free_text_problem(text) if text is not None else None
        if why is not None:
            raise CatalogError(f"{option} {excerpt(text)} {why}; give the name as the vendor prints it")
    if not product_names and not pci_device_ids and not fields:
        raise CatalogError("a SKU needs something to match devices by: give --product-name (as the driver reports "
                           "it), --pci-device-id, or --match-field FIELD=VALUE for what the vendor tool prints")
    try:
        return SkuRecord(id=sku_id, marketing_name=marketing_name, accelerator_type=accelerator_type,
                         architecture=architecture, memory_mib=memory_mib, interconnect=interconnect,
                         match=SkuMatch(pci_device_ids=[p.lower() for p in pci_device_ids],
                                        product_names=list(product_names), fields=dict(fields or {})))
    except ValidationError as e:
        err = e.errors()[0]
        where = ".".join(str(p) for p in err["loc"] if not isinstance(p, int))
        if where.startswith(("fields.", "match.fields.")):  # a key of the fields rule
            where = "match.fields"
        option = OPTION_FOR_FIELD.get(where, where)
        value = err.get("input")
        raise CatalogError(f"{option} {value!r}: {err['msg']}") from None


def check_pci_ids(sku: SkuRecord) -> None:
    for pci in sku.match.pci_device_ids:
        if not re.fullmatch(r"0x[0-9a-f]{4}", pci):
            raise CatalogError(f"--pci-device-id {pci!r}: must be 0x followed by 4 hex digits, e.g. 0x2901")


def record_data(sku: SkuRecord) -> dict[str, Any]:
    """The record as catalog data: no nulls, no empty match lists (as people write catalogs)."""
    data = sku.model_dump(mode="json", exclude_none=True)
    data["match"] = {k: v for k, v in data["match"].items() if v}
    return data


# The catalog file ---------------------------------------------------------------------------------


def catalog_of(manager: PluginManager, plugin: str) -> SkuCatalog:
    if not manager.implements(plugin, "rayaccel_sku_catalog"):
        raise CatalogError(f"plugin {plugin!r} has no SKU catalog (it does not implement rayaccel_sku_catalog); "
                           "add one: return rayaccel.catalog.load_catalog(<path of skus.yaml>)")
    problems: list[Problem] = []
    catalog = manager.answer(plugin, hookspec.SKU_CATALOG, problems)
    if catalog is None:
        why = problems[0].message if problems else "it returned nothing"
        raise CatalogError(f"plugin {plugin!r}: its SKU catalog cannot be read: {why.removeprefix('raised ')}")
    if catalog.source_path is None:
        raise CatalogError(f"plugin {plugin!r} builds its SKU catalog in code, so there is no file to add to; "
                           "load it with rayaccel.catalog.load_catalog(<file>) instead")
    return catalog


def conflicts(catalog: SkuCatalog, sku: SkuRecord) -> str | None:
    for other in catalog.skus:
        if other.id == sku.id:
            return f"SKU id {sku.id!r} is already in the catalog ({other.marketing_name}); choose another --id"
        shared = set(sku.match.pci_device_ids) & {p.lower() for p in other.match.pci_device_ids}
        if shared:
            return (f"PCI device id {sorted(shared)[0]} is already matched by SKU {other.id!r}, so devices would "
                    "keep resolving to it; correct the existing SKU instead, or give the right --pci-device-id")
        if sku.match.fields and sku.match.fields == other.match.fields:
            return (f"SKU {other.id!r} already matches devices by the same fields {sku.match.fields}; add a field "
                    "that tells the two apart")
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
            if safe_load_yaml(appended) == new_data:
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


# Checking catalogs --------------------------------------------------------------------------------


def check_catalogs(manager: PluginManager, plugins: Sequence[str] | None = None) -> list[CatalogCheck]:
    """Every plugin's catalog: readable, valid, of the plugin's family, no PCI id claimed by two SKUs, and
    on the plugin's fixtures no device matched by two SKUs alike or resolving otherwise than stated (shadowed
    matches are notes)."""
    results = []
    for plugin in plugins or manager.plugin_names():
        manager.plugin(plugin)
        if not manager.implements(plugin, "rayaccel_sku_catalog"):
            continue
        problems: list[Problem] = []
        catalog = manager.answer(plugin, hookspec.SKU_CATALOG, problems)
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
        notes: list[str] = []
        if error is None:  # how the plugin's own fixtures resolve: ambiguous and shadowed matches
            try:
                errors, notes = resolution_findings(catalog, fleet_devices(manager, plugin))
            except FixtureError as e:
                errors = [f"its fixtures cannot be read: {e}"]
            if errors:
                error = errors[0] + (f" (and {len(errors) - 1} more)" if len(errors) > 1 else "")
        if error is not None and catalog.source_path:
            error = f"{catalog.source_path}: {error}"
        results.append(CatalogCheck(plugin, catalog.source_path, len(catalog.skus), error, tuple(notes)))
    return results
