"""RAC225's ``an-unknown-product-is-a-device`` (issue 46, held-out round 10's ``l1``: a python-library bake keeping
only the products it was qualified on, ``{"Ivybridge X1"}``; RAC230's day-zero SKU fixture named only the symptom,
"devices: expected 4, discovered 0", its rewrite changing the product name, PCI device id and memory at once).

A family's devices are the ones its driver or library lists; the product name tells the SKU, and a product the
catalog does not list is a device with an unknown SKU (``rayaccel.io/sku-known: false``), the day-zero case
``rayaccel sku add`` exists for. So the product name, written as a newer product's wherever the host states it (a
file, a library's or a tool's JSON string, a CSV cell: every other reading as it was), must leave discovery finding
every device it found, each with its id. A plugin that filters devices by product (an allow-list, or the catalog's
SKUs taken for the family's devices) loses them. Pure but for the builds.
"""

from __future__ import annotations

import json
from typing import Any

from rayaccel.hosts.fixtures import Fixture, HostState
from rayaccel.records import FamilyInventory
from rayaccel.simulation.host_factory import simulated_host
from rayaccel_conformance.harness.subject import Subject

INVARIANT = "invariant an-unknown-product-is-a-device"


def newer_product(name: str) -> str:
    """A product one the catalog cannot know yet: the name's model word extended (``Ivybridge X1`` -> ``Ivybridge
    X1Z9``), the vendor's words kept."""
    words = name.split()
    return " ".join([*words[:-1], f"{words[-1]}Z9"]) if words else name


def renamed_host(host: dict[str, Any], name: str, new: str) -> dict[str, Any]:
    """The host with every string that is ``name``, or holds it as a tool's output holds it (a CSV cell, a JSON
    string in a command's stdout), written ``new``."""
    text = json.dumps(host)
    escaped, replacement = json.dumps(name)[1:-1], json.dumps(new)[1:-1]
    # A tool's JSON output is a string inside the host's JSON: its quotes are escaped once more.
    changed: dict[str, Any] = json.loads(text.replace(escaped, replacement))
    return changed


def unknown_product_findings(subject: Subject, fx: Fixture, fam: FamilyInventory) -> tuple[list[str], list[str]]:
    """``invariant an-unknown-product-is-a-device`` on ``fx``: each product name its devices have, written as a
    newer product's wherever the host states it, leaves every device found. (What went wrong, the names tried.)"""
    host = fx.host.model_dump(mode="json")
    family = subject.family().name
    wrong, tried = [], []
    for name in sorted({d.product_name for d in fam.devices if d.product_name.strip()}):
        new = newer_product(name.strip())
        state = renamed_host(host, name.strip(), new)
        if state == host:
            continue  # the name is no text of the host's (made from a table, a PCI id): nothing to rename
        tried.append(name.strip())
        variant = fx.model_copy(update={"host": HostState.model_validate(state), "faults": []})
        inventory = subject.build(simulated_host(variant))
        built = inventory.family(family)
        found = {d.id for d in built.devices} if built is not None else set()
        had = [d.id for d in fam.devices if d.product_name == name]
        lost = [d for d in had if d not in found]
        if not lost:
            continue
        where = (f"{INVARIANT}, {fx.ref} with the product {name.strip()!r} written {new!r} wherever the host states "
                 "it (a newer product's name, every other reading as it was): ")
        said = (f"discovery finds {len(had) - len(lost)} of its {len(had)} devices ({', '.join(lost[:4])}"
                f"{' ...' if len(lost) > 4 else ''} gone): a device is left out by its product's name (an allow-list "
                "of products, or the catalog's SKUs taken for the family's devices); a product the catalog does not "
                "list is a device of an unknown SKU (rayaccel.io/sku-known false), which `rayaccel sku add` then "
                "names")
        wrong += subject.blamed(inventory, [said], where)
    return wrong, tried
