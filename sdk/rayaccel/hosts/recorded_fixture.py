"""A recording as a fixture: the expectation a recorded inventory implies, the ``source`` line, and the views
that tell whether a fixture replays as recorded (``rayaccel record``, ``rayaccel fixture expect``)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from rayaccel.hosts.expectations import Expected, FaultExpectation, reported_problem_codes
from rayaccel.hosts.fixtures import parse_fixture
from rayaccel.records import NodeInventory


def expected_from_inventory(inventory: NodeInventory, plugin: str) -> dict[str, Any]:
    """A fixture's ``expected`` block: what this inventory is, for ``plugin``'s family."""
    family = next((f for f in inventory.families if f.plugin == plugin), None)
    devices = family.devices if family else []
    expected: dict[str, Any] = {"devices": len(devices), "device_ids": [d.id for d in devices]}
    if family and family.accelerator_type:
        expected["accelerator_type"] = family.accelerator_type
    expected["resources"] = dict(inventory.resources)
    expected["labels"] = dict(inventory.labels)
    health = {h.device: h.state for h in (family.health if family else []) if h.state != "healthy"}
    expected["health"] = {d.id: health[d.id] for d in devices if d.id in health}
    expected["skus"] = {d.id: d.sku for d in devices if d.sku}
    if family:
        expected["links"] = len(family.topology.links)
    if problems := reported_problem_codes(inventory, plugin):
        expected["problems"] = problems
    Expected.model_validate(expected)
    return expected


#: What a stated key proposes when the current plugins give nothing for it: the key stays, empty.
_EMPTY: dict[str, Any] = {"problems": [], "health": {}, "skus": {}, "labels": {}, "resources": {}, "links": 0,
                          "device_ids": [], "metrics": [], "metric_values": {}}


def updated_expectation(stated: Mapping[str, Any], inventory: NodeInventory, plugin: str) -> dict[str, Any]:
    """A fixture's ``expected`` recomputed from ``inventory`` (built with metrics), key by key: every key the
    fixture states gets its current value and none is removed (``rayaccel fixture expect``: dropping
    ``metrics`` would silently weaken RAC206). A fixture stating only ``devices`` gets everything.

    ``metrics``: the standard metrics every device reports; ``metric_values``: each stated (device, metric)
    as sampled now, a value the plugin no longer samples kept as stated."""
    from rayaccel.records import STANDARD_METRICS

    current = expected_from_inventory(inventory, plugin)
    family = next((f for f in inventory.families if f.plugin == plugin), None)
    samples = {(m.device, m.name): m.value for m in (family.metrics if family else [])}
    ids = [d.id for d in family.devices] if family else []
    reported = [{name for (device, name) in samples if device == d} for d in ids]
    current["metrics"] = sorted(set.intersection(*reported) & set(STANDARD_METRICS)) if reported else []
    current["metric_values"] = {device: {name: samples.get((device, name), value) for name, value in values.items()}
                                for device, values in stated.get("metric_values", {}).items()}
    if not set(stated) - {"devices"}:  # a full recording states everything
        current.pop("metric_values")
        return current
    updated = {key: current.get(key, _EMPTY.get(key, value)) for key, value in stated.items()}
    updated.setdefault("devices", current["devices"])
    Expected.model_validate(updated)
    return updated


def fault_expectation(inventory: NodeInventory, plugin: str) -> dict[str, Any]:
    family = next((f for f in inventory.families if f.plugin == plugin), None)
    health = {h.device: h.state for h in (family.health if family else []) if h.state != "healthy"}
    fatal = any(r.fatal for h in (family.health if family else []) for r in h.reasons)
    expected = {"health": health, "resources": dict(inventory.resources),
                "devices": len(family.devices) if family else 0, "fatal": fatal,
                "problem_codes": sorted({p.code for p in inventory.problems if p.plugin == plugin})}
    FaultExpectation.model_validate(expected)
    return expected


def merge_diff(base: Any, new: Any) -> Any:
    """The JSON merge patch (RFC 7386) that turns ``base`` into ``new``."""
    if not isinstance(base, dict) or not isinstance(new, dict):
        return new
    patch: dict[str, Any] = {}
    for key in base:
        if key not in new:
            patch[key] = None
    for key, value in new.items():
        if key not in base:
            patch[key] = value
        elif base[key] != value:
            patch[key] = merge_diff(base[key], value) if isinstance(value, dict) and isinstance(base[key], dict) \
                else value
    return patch



def source_line(inventory: NodeInventory, plugin_versions: Mapping[str, str | None], hostname: str,
                simulated: bool) -> str:
    from rayaccel import __version__

    drivers = sorted({f"{d.driver_version}" for f in inventory.families for d in f.devices if d.driver_version})
    when = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    plugins = ", ".join(f"{name} {version or '(unversioned)'}" for name, version in plugin_versions.items())
    return (f"recorded by rayaccel record at {when} on {'simulated host ' if simulated else ''}{hostname}; "
            f"plugins: {plugins or 'none'}; driver: {', '.join(drivers) or 'not visible'}; "
            f"rayaccel SDK {__version__}")


def inventory_view(inventory: NodeInventory) -> dict[str, Any]:
    """What a replay must reproduce: devices, topology, health, resources and labels (not the host's name, not
    metric values, which change from one reading to the next)."""
    families = {f.plugin: {"devices": [d.model_dump(mode="json") for d in f.devices],
                           "topology": f.topology.model_dump(mode="json"),
                           "health": [h.model_dump(mode="json") for h in f.health],
                           "accelerator_type": f.accelerator_type, "resources": f.resources, "labels": f.labels,
                           "metrics": sorted({(m.device, m.name) for m in f.metrics})}
                for f in inventory.families}
    return {"families": families, "resources": inventory.resources, "labels": inventory.labels}


def shape_view(inventory: NodeInventory) -> dict[str, Any]:
    """The structure an anonymised recording keeps: device counts, health states, link and domain counts."""
    return {f.plugin: {"devices": len(f.devices), "health": [h.state for h in f.health],
                       "links": sorted(link.kind for link in f.topology.links),
                       "domains": [(d.kind, d.size) for d in f.topology.domains],
                       "resources": sorted(f.resources.items())} for f in inventory.families}


def first_difference(a: Any, b: Any, where: str = "") -> str | None:
    if isinstance(a, dict) and isinstance(b, dict):
        for key in sorted(set(a) | set(b), key=str):
            found = first_difference(a.get(key), b.get(key), f"{where}.{key}" if where else str(key))
            if found:
                return found
        return None
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            found = first_difference(x, y, f"{where}[{i}]")
            if found:
                return found
        return None
    return None if a == b else f"{where or '(top level)'}: recorded {a!r}, replayed {b!r}"


def validate_fixture_data(data: dict[str, Any], origin: str) -> None:
    """The recording must load with the project's loader; a failure here is the recorder's, named."""
    json.dumps(data, allow_nan=False)
    parse_fixture(json.loads(json.dumps(data)), origin)
