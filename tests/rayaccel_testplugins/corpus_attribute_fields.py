"""Corpus mutants publishing a device attribute under the name of one field of the machine's records with the value of
another (issue 46, held-out round 17's ``a1``: an AMD wrapper taking a partitioned GPU's compute partition mode,
attribute ``compute_partition`` and the partitions' profiles, from amdsmi's ``memory_partition``, ``NPS4`` beside the
``CPX`` amdsmi states). Each machine states each card's compute and memory modes side by side, as amdsmi and amd-smi
do; nothing expects an attribute, so every fixture passes; RAC216 holds an attribute named as a field to what the
card's records state for it (``invariant an-attribute-holds-its-field``). Two shapes: the driver's files
(``/sys/class/acme/acmeN/compute_mode``, ``memory_mode``), the compute mode read from the memory mode's file; and a
tool's JSON records (``acme-smi static --json``, a ``modes`` section), its two modes taken by position.

Imported by tests/conformance/test_conformance_corpus.py (``corpus.MUTANT_MODULES``); each is bound here under its
name (``c-compute-mode-from-memory-file`` as ``c_compute_mode_from_memory_file``) so a Ray node loads it by
``RAYACCEL_PLUGINS``.
"""

from __future__ import annotations

import json
from typing import Any

from rayaccel import Device, Host, HostError
from rayaccel_testplugins.corpus import SYSFS, Healthy, add_import_defect, read_machine, tool_output, write_machine

#: Each card's compute and memory modes (an MI300X-like card split in four, its memory in four NUMA ranges).
MODES = {"compute_mode": "QPX", "memory_mode": "NPS4"}
FILES_MACHINE = "acme-4-mode-files"
JSON_MACHINE = "acme-4-mode-json"
STATIC_ARGV = ("acme-smi", "static", "--json")


def add_files_machine(plugin: str) -> None:
    """The plugin's acme-4 with each card's modes in its driver directory."""
    data = read_machine(plugin)
    data["name"], data["description"] = FILES_MACHINE, f"{data['description']}, each card's modes in sysfs"
    for i in range(4):
        data["host"]["files"].update({f"{SYSFS}/acme{i}/{name}": f"{value}\n" for name, value in MODES.items()})
    write_machine(plugin, FILES_MACHINE, data)


def add_json_machine(plugin: str) -> None:
    """The plugin's acme-4 with ``acme-smi static --json`` stating each card's modes in a ``modes`` section."""
    data = read_machine(plugin)
    data["name"], data["description"] = JSON_MACHINE, f"{data['description']}, acme-smi static --json"
    records = [{"card": i, "uuid": data["host"]["files"][f"{SYSFS}/acme{i}/uuid"].strip(), "modes": dict(MODES)}
               for i in range(4)]
    data["host"]["commands"] = {**(data["host"].get("commands") or {}),
                                " ".join(STATIC_ARGV): {"stdout": json.dumps(records, indent=1) + "\n"}}
    write_machine(plugin, JSON_MACHINE, data)


def _file(host: Host, path: str) -> str | None:
    try:
        return host.read_text(path).strip() or None if host.exists(path) else None
    except (OSError, HostError):
        return None


class ComputeModeFromMemoryFile(Healthy):
    DEFECT = ("a card's compute_mode attribute read from its memory_mode file ('the memory split decides the "
              "partitions'): both attributes hold the memory mode")
    KILLED_BY = ("RAC216", "invariant an-attribute-holds-its-field")
    #: The file the compute mode is read from (the defect: memory_mode).
    compute_file = "memory_mode"

    def __init__(self, name: str) -> None:
        super().__init__(name)
        add_files_machine(name)

    def device(self, host: Host, path: str, driver: str | None) -> Device:
        device = super().device(host, path, driver)
        compute = _file(host, f"{path}/{self.compute_file}")
        memory = _file(host, f"{path}/memory_mode")
        attributes = {k: v for k, v in (("compute_mode", compute), ("memory_mode", memory)) if v}
        return device.model_copy(update={"attributes": {**device.attributes, **attributes}}) if attributes else device


class ModesByPosition(Healthy):
    DEFECT = ("a card's two modes taken by their position in the tool's JSON 'modes' section, memory first, as an "
              "older tool printed them: compute_mode holds the memory mode and memory_mode the compute mode")
    KILLED_BY = ("RAC216", "invariant an-attribute-holds-its-field")
    #: Whether the modes are read by position (the defect) or by their keys.
    by_position = True

    def __init__(self, name: str) -> None:
        super().__init__(name)
        add_json_machine(name)

    def modes(self, host: Host) -> dict[str, dict[str, str]]:
        """Each card's modes by its uuid, as the attributes name them; none where the tool is not installed."""
        stdout = tool_output(host, STATIC_ARGV)
        try:
            records: Any = json.loads(stdout) if stdout else []
        except ValueError:
            return {}
        found = {}
        for record in records if isinstance(records, list) else []:
            modes = record.get("modes") if isinstance(record, dict) else None
            if not isinstance(modes, dict) or not all(isinstance(v, str) for v in modes.values()):
                continue
            values = list(modes.values())
            found[str(record.get("uuid"))] = (dict(zip(("memory_mode", "compute_mode"), values, strict=False))
                                              if self.by_position else dict(modes))
        return found

    def rayaccel_discover(self, host: Host) -> list[Device]:
        devices = super().rayaccel_discover(host)
        modes = self.modes(host)
        return [d.model_copy(update={"attributes": {**d.attributes, **modes[d.id]}}) if d.id in modes else d
                for d in devices]


for _cls in (ComputeModeFromMemoryFile, ModesByPosition):
    _plugin = add_import_defect(_cls)
    globals()[_plugin.name.replace("-", "_")] = _plugin
