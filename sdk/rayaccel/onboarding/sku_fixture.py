"""The fixture of a new SKU, derived from one of the plugin's: which fixture to start from, and the
expectation and faults the SKU record implies (``rayaccel sku add``)."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

from rayaccel.errors import FixtureError
from rayaccel.hosts.fixtures import FIXTURE_SUFFIXES, Fixture, installed_fixtures, load_fixture
from rayaccel.labels import VOCABULARY_PREFIX, to_label_value
from rayaccel.plugins.manager import PluginManager
from rayaccel.records import LINK_KINDS, STANDARD_METRICS, Device, SkuCatalog, SkuRecord
from rayaccel.support.raycompat import RAY_ACCELERATOR_TYPE_LABEL, RAY_LABEL_PREFIX


def plugin_fixtures(manager: PluginManager, plugin: str) -> dict[str, Path]:
    return {ref: path for ref, path in installed_fixtures(manager).items() if ref.split("/", 1)[0] == plugin}


def choose_base_fixture(manager: PluginManager, plugin: str, catalog: SkuCatalog, sku: SkuRecord,
                        requested: str | None) -> Fixture:
    """The fixture to derive from: the one asked for, else the plugin's first of the SKU's architecture,
    else its first (a fixture of the same architecture is what a new SKU of a known chip resembles)."""
    fixtures = plugin_fixtures(manager, plugin)
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
        interconnect = labels.get(f"{VOCABULARY_PREFIX}interconnect")
        if interconnect is not None and (interconnect == "other" or interconnect not in (*LINK_KINDS, "none")):
            # Links of kind 'other' are labelled with the catalog's name of the fabric: the new SKU's.
            labels[f"{VOCABULARY_PREFIX}interconnect"] = to_label_value(sku.interconnect or "") or "other"
    if sku.memory_mib is not None:  # what the machine reads follows from the SKU's memory, not the base card's
        exp["metric_values"] = {device: {name: (float(sku.memory_mib * 2**20) if name == "memory_total" else value)
                                         for name, value in values.items()}
                                for device, values in exp["metric_values"].items()}
    exp["device_fields"] = sku_device_fields(exp["device_fields"], sku)
    # The base card may be one the catalog lacked (the very card being onboarded): the new fixture's is catalogued.
    exp["problems"] = [code for code in exp["problems"] if code != UNKNOWN_SKU]
    return exp


#: The problem a device of no catalogued SKU raises (the inventory builder's).
UNKNOWN_SKU = "unknown-sku"

#: Stated partition facts that follow from the product, not the SKU record (an AMD GPU's XCDs, a MIG profile's
#: slices): a new SKU's are not the base card's, and the record cannot say them, so they are not carried over.
_PRODUCT_PARTITION_FIELDS = ("compute_slices", "memory_slices", "memory_mib")


def sku_device_fields(stated: dict[str, dict[str, Any]], sku: SkuRecord) -> dict[str, dict[str, Any]]:
    """Stated device fields for the new SKU: those the SKU record decides are the SKU's (a PCI id the rewrite
    gave the devices), slice counts of the device's partitions dropped (:data:`_PRODUCT_PARTITION_FIELDS`), the
    rest as stated."""
    decided = {"pci_device_id": sku.match.pci_device_ids[0] if sku.match.pci_device_ids else None,
               "memory_mib": sku.memory_mib, "architecture": sku.architecture}
    return {device: {name: decided[name] if decided.get(name) is not None else value
                     for name, value in fields.items()
                     if not name.startswith("partition_capacity.") and not (
                         name.startswith("partition.") and name.rsplit(".", 1)[1] in _PRODUCT_PARTITION_FIELDS)}
            for device, fields in stated.items()}


def misnamed_devices(devices: list[Device], sku: SkuRecord, host: dict[str, Any]) -> list[str]:
    """Product names the new fixture's host states for its devices (a file, a tool's output) that the SKU's product
    rules do not match: the rewrite wrote another name (the marketing name) where the driver prints the product's,
    so the devices resolve to the SKU by their PCI device id alone and the fixture misstates the driver. A name the
    plugin makes itself (from a PCI id or a generation: no text of the host's) is the plugin's answer."""
    names, patterns = sku.match.product_names, sku.match.product_patterns
    if not names and not patterns:
        return []
    text = json.dumps(host)
    misnamed: dict[str, list[str]] = {}
    for device in devices:
        name = device.product_name.strip()
        if name and json.dumps(name)[1:-1] in text and name not in names and not any(
                re.search(p, name) for p in patterns):
            misnamed.setdefault(name, []).append(device.id)
    rules = " or ".join(rule for rule in (f"product names {names}" if names else "",
                                          f"product patterns {patterns}" if patterns else "") if rule)
    return [f"the host states the product of {len(ids)} device(s) ({', '.join(ids[:3])}"
            f"{' ...' if len(ids) > 3 else ''}) as {name!r}, which SKU {sku.id} does not match by its {rules}: "
            "they resolve to it by their PCI device id alone (is the marketing name "
            f"{sku.marketing_name!r} written where the driver prints the product's?)"
            for name, ids in misnamed.items()]


def recorded_metric_values(stated: dict[str, dict[str, float]], samples: dict[tuple[str, str], float],
                           sku: SkuRecord) -> tuple[dict[str, dict[str, float]], list[str]]:
    """The new fixture's ``metric_values``: what the SKU decides (``memory_total``, from its ``memory_mib``)
    checked against the plugin's samples on the new fixture, every other stated value as the plugin samples
    it there (the rewrite changed the machine). Returns the values and the differences."""
    values: dict[str, dict[str, float]] = {}
    wrong = []
    for device, metrics in stated.items():
        values[device] = {}
        for name, want in metrics.items():
            if STANDARD_METRICS.get(name) == "bytes_per_second":
                values[device][name] = want  # a rate needs two polls (conformance RAC246); the traffic is the same
                continue
            got = samples.get((device, name))
            decided = name == "memory_total" and sku.memory_mib is not None
            if got is None:
                wrong.append(f"metric {name} of {device}: the plugin gives no sample on the new fixture, which "
                             "the base fixture states (expected.metric_values)")
            elif decided and abs(got - want) > 0.01 * want:
                wrong.append(f"metric memory_total of {device}: SKU {sku.id} has {sku.memory_mib} MiB = {want:g} "
                             f"bytes, the plugin samples {got:g} on the new fixture (does its rewrite change the "
                             "memory the vendor interface reports, and convert MiB to bytes?)")
            values[device][name] = want if decided else got if got is not None else want
    return values, wrong


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
        if "device_fields" in expected:
            expected["device_fields"] = sku_device_fields(expected["device_fields"], sku)
        if "problem_codes" in expected:
            expected["problem_codes"] = [code for code in expected["problem_codes"] if code != UNKNOWN_SKU]
        faults.append({**fault.model_dump(mode="json"), "patch": copy.deepcopy(patch), "expected": expected})
    return faults


def with_plugin_resources(expected: dict[str, float], observed: dict[str, float],
                           family_resource: str) -> dict[str, float]:
    """The family's resource and the accelerator type as expected; any other resource (a TPU slice's head
    resource names the chip generation) as the plugin answered on the new fixture."""
    decided = {k: v for k, v in expected.items() if k == family_resource or k.startswith("accelerator_type:")}
    return {**decided, **{k: v for k, v in observed.items()
                          if k != family_resource and not k.startswith("accelerator_type:")}}


def is_plugin_label(key: str) -> bool:
    """A label the plugin decides from the device, not the SKU record: its own (under its prefix), Ray's
    generation-specific ones (``ray.io/tpu-pod-type``: a new chip generation has its own), the scale-up
    domain (its size and kind follow from the generation too), and the partition profiles (a profile names its
    partition's size, which follows from the product: :data:`_PRODUCT_PARTITION_FIELDS`)."""
    if key.startswith(RAY_LABEL_PREFIX):
        return key != RAY_ACCELERATOR_TYPE_LABEL
    return not key.startswith(VOCABULARY_PREFIX) or key.startswith(
        (f"{VOCABULARY_PREFIX}scale-up-domain", f"{VOCABULARY_PREFIX}partition-"))


def observed_label_keys(sku: SkuRecord) -> set[str]:
    """Vocabulary labels the SKU record leaves to the device: what it reports on the new fixture is kept."""
    keys = set()
    if sku.architecture is None:
        keys.add(f"{VOCABULARY_PREFIX}architecture")
    if sku.memory_mib is None:
        keys.add(f"{VOCABULARY_PREFIX}memory-mib")
    return keys
