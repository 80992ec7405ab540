"""A label naming a fact of the devices states what the devices' records state (RAC201's
``a-label-agrees-with-its-devices``, held-out round 18's ``e2``).

A plugin often states a device attribute again as a node label, for selectors (AMD's ``amd.com/gpu.compute-partition``
beside each GPU's ``compute_partition``, Neuron's ``aws.amazon.com/neuron.logical-nc-config`` beside each device's
``logical_nc_config``). Both come from the same build of the same machine: where every device holds the attribute the
label's last word names, with one value, the label must hold that value. A label read from elsewhere (a variable
the operator may never have set, a default from a spec sheet) says one thing while the devices run another, and a
task selected by it lands on devices configured otherwise. Nothing is expected: the records are compared with each
other.
"""

from __future__ import annotations

import re
from typing import Any

from rayaccel.hosts.fixtures import Fixture
from rayaccel.records import FamilyInventory


def _name(text: str) -> str:
    """A label's or attribute's name, separators and case dropped (``logical-nc-config``, ``logical_nc_config``)."""
    return re.sub(r"[^a-z0-9]", "", text.lower())


def _text(value: Any) -> str:
    """An attribute's value as a label writes it (a boolean as ``true``/``false``)."""
    return str(value).lower() if isinstance(value, bool) else str(value)


def label_attribute_findings(fx: Fixture, family: FamilyInventory) -> list[str]:
    """Labels whose name after the prefix, or a dotted tail of it (``gpu.compute-partition``, ``compute-partition``),
    names an attribute every device of ``family`` holds alike, with another value."""
    if not family.devices:
        return []
    held: dict[str, tuple[str, set[str], int]] = {}  # name -> (the attribute's key, its values, devices holding it)
    for device in family.devices:
        for key, value in device.attributes.items():
            attr, values, count = held.get(_name(key), (key, set(), 0))
            held[_name(key)] = (attr, values | {_text(value)}, count + 1)
    wrong = []
    for key, value in sorted(family.labels.items()):
        parts = key.rsplit("/", 1)[-1].split(".")  # the name and each dotted tail of it: gpu.compute-partition
        found = next((held[n] for n in (_name(".".join(parts[i:])) for i in range(len(parts))) if n in held), None)
        if found is None:
            continue
        attr, values, count = found
        stated = next(iter(values))
        if count == len(family.devices) and len(values) == 1 and value.lower() != stated.lower():
            wrong.append(f"invariant a-label-agrees-with-its-devices, {fx.ref}: label {key}={value!r}, where every "
                         f"device's attribute {attr} is {stated!r} (the same build's records: state the devices' "
                         "value, read where the attribute is read)")
    return wrong
