{% set kind = cookiecutter.probe_kind %}
"""Day-zero fixtures: rewrite a recorded fixture so its devices are of another SKU (``rayaccel sku add``).

Only this plugin knows where its vendor interface states the product name, PCI device id and memory, so
only it can change them consistently. The SDK sets the fixture's name, description and expectation.
"""

from __future__ import annotations

import copy
{% if kind == "command-csv" %}
import csv
import io
{% endif %}
{% if kind == "command-json" %}
import json
{% endif %}
{% if kind in ("command-json", "command-csv") %}
import shlex
{% endif %}
from typing import Any

from rayaccel import SkuRecord

from {{ cookiecutter.__module }} import probe


def _product_name(sku: SkuRecord) -> str:
    return str(sku.match.product_names[0] if sku.match.product_names else sku.marketing_name)


{% if kind in ("command-json", "command-csv") %}
def _patched_commands(fault: dict[str, Any]) -> dict[str, Any]:
    """The command answers a fault's patch gives (empty when it patches none)."""
    commands = (fault.get("patch") or {}).get("commands")
    return commands if isinstance(commands, dict) else {}


{% endif %}
def fixture_for_sku(fixture: dict[str, Any], sku: SkuRecord) -> dict[str, Any]:
    data = copy.deepcopy(fixture)
    host = data.setdefault("host", {})
    name = _product_name(sku)
    pci = sku.match.pci_device_ids[0].lower() if sku.match.pci_device_ids else None
{% if kind == "sysfs" %}
    files: dict[str, str] = host.get("files") or {}
    devices = 0
    for path in list(files):
        parts = path[len(probe.SYSFS) + 1:].split("/") if path.startswith(probe.SYSFS + "/") else []
        if len(parts) != 2 or not parts[0].startswith(probe.CLASS):
            continue
        attribute = parts[1]
        if attribute == "product":
            files[path] = name + "\n"
            devices += 1
        elif attribute == "device" and pci:
            files[path] = pci + "\n"
        elif attribute == "memory_mib" and sku.memory_mib is not None:
            files[path] = f"{sku.memory_mib}\n"
    if not devices:
        raise ValueError(f"the fixture has no devices under {probe.SYSFS} to rewrite")
{% elif kind == "command-json" %}
    commands = host.get("commands") or {}
    asked = probe.QUERIES["devices"]
    line = shlex.join(asked.argv)
    if line not in commands:
        raise ValueError(f"the fixture has no answer for {line!r} to rewrite")
    # The listing as recorded, and as each fault that restates it (a device lost) answers it: all of this SKU.
    for answers in [commands, *(_patched_commands(fault) for fault in data.get("faults") or [])]:
        if line not in answers:
            continue
        doc = json.loads(answers[line]["stdout"])
        for device in probe.select(doc, asked).get("devices", []):
            device["product"] = name
            if pci:
                device["pci_device_id"] = pci
            if sku.memory_mib is not None:
                device["memory_mib"] = sku.memory_mib
        answers[line]["stdout"] = json.dumps(doc, indent=2) + "\n"
{% elif kind == "command-csv" %}
    commands = host.get("commands") or {}
    line = shlex.join(probe.query("device", probe.DEVICE_COLUMNS))
    if line not in commands:
        raise ValueError(f"the fixture has no answer for {line!r} to rewrite")
    # The listing as recorded, and as each fault that restates it (a device lost) answers it: all of this SKU.
    for answers in [commands, *(_patched_commands(fault) for fault in data.get("faults") or [])]:
        if line not in answers:
            continue
        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\n")
        for row in probe.parse_rows(answers[line]["stdout"], probe.DEVICE_COLUMNS):
            row["product"] = name
            if pci:
                row["pci_device_id"] = pci
            if sku.memory_mib is not None:
                row["memory_mib"] = str(sku.memory_mib)
            writer.writerow([row[column] for column in probe.DEVICE_COLUMNS])
        answers[line]["stdout"] = out.getvalue()
{% else %}
    library = (host.get("libraries") or {}).get(probe.LIBRARY)
    if not isinstance(library, dict) or not library.get("devices"):
        raise ValueError(f"the fixture has no {probe.LIBRARY} library data to rewrite")
    for device in library["devices"].values():
        device["product"] = name
        if pci:
            device["pci_device_id"] = pci
        if sku.memory_mib is not None:
            device["memory_mib"] = sku.memory_mib
{% endif %}
    return data
