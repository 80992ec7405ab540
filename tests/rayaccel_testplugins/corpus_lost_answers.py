"""Corpus mutants stating a default where a query that failed would have given a value (issue 46, held-out round 18's
``a1``: an AMD wrapper naming a partitioned GPU's mode CPX whenever ``amd-smi partition --current`` fails, so a DPX
GPU's partitions became ``cpx.4xcd.96gb``). Each machine states a mode of each card through a tool; nothing expects
an attribute, so every fixture and fault passes as written; RAC203 (under a fault the fixture declares) and RAC204
(every command failing or hanging) hold what the plugin still states where answers are only taken away to what the
machine's full answers give (``invariant a-lost-answer-is-no-other-answer``). Two shapes: a tool's JSON records
(``acme-smi static --json``, a declared fault where it exits 1), the compute and memory modes then assumed an
unpartitioned card's; and a tool's CSV table (``acme-smi query --csv``, no fault declared), a card's ECC mode taken
as enabled whenever the table is not printed. (A driver file gone is RAC211's: a missing file's value is unknown.)

Imported by tests/conformance/test_conformance_corpus.py (``corpus.MUTANT_MODULES``); each is bound here under its
name (``c-failed-modes-as-defaults`` as ``c_failed_modes_as_defaults``) so a Ray node loads it by
``RAYACCEL_PLUGINS``.
"""

from __future__ import annotations

import csv
import io
import json
from typing import Any

from rayaccel import Device, Host
from rayaccel_testplugins.corpus import SYSFS, Healthy, add_import_defect, read_machine, tool_output, write_machine

#: Each card's compute and memory modes (a card split in four, its memory in four NUMA ranges).
MODES = {"compute_mode": "QPX", "memory_mode": "NPS4"}
#: What the mutants assume where they cannot read a mode: the modes of an unpartitioned card.
DEFAULTS = {"compute_mode": "SPX", "memory_mode": "NPS1"}
JSON_MACHINE = "acme-4-modes-query"
CSV_MACHINE = "acme-4-ecc-query"
STATIC_ARGV = ("acme-smi", "static", "--json")
QUERY_ARGV = ("acme-smi", "query", "--csv")


def add_json_machine(plugin: str) -> None:
    """acme-4 with ``acme-smi static --json`` stating each card's modes, and a fault where that query fails."""
    data = read_machine(plugin)
    data["name"], data["description"] = JSON_MACHINE, f"{data['description']}, acme-smi static --json"
    records = [{"card": i, "uuid": data["host"]["files"][f"{SYSFS}/acme{i}/uuid"].strip(), "modes": dict(MODES)}
               for i in range(4)]
    data["host"]["commands"] = {**(data["host"].get("commands") or {}),
                                " ".join(STATIC_ARGV): {"stdout": json.dumps(records, indent=1) + "\n"}}
    data["faults"].append({
        "name": "static-query-fails", "kind": "other",
        "description": "`acme-smi static --json` exits 1 (the driver is busy): the modes are unknown, the cards not",
        "patch": {"commands": {" ".join(STATIC_ARGV): {
            "stdout": "", "stderr": "acme-smi: static: failed to query the driver: resource busy\n", "returncode": 1}}},
        "expected": {"devices": 4}})
    write_machine(plugin, JSON_MACHINE, data)


def add_csv_machine(plugin: str) -> None:
    """acme-4 with ``acme-smi query --csv`` stating each card's ECC mode (cards 1 and 3 run without); no fault
    declared: RAC204 makes every command fail and hang."""
    data = read_machine(plugin)
    data["name"], data["description"] = CSV_MACHINE, f"{data['description']}, acme-smi query --csv"
    uuids = [data["host"]["files"][f"{SYSFS}/acme{i}/uuid"].strip() for i in range(4)]
    rows = "".join(f"{i}, {uuid}, {'Disabled' if i % 2 else 'Enabled'}\n" for i, uuid in enumerate(uuids))
    data["host"]["commands"] = {**(data["host"].get("commands") or {}),
                                " ".join(QUERY_ARGV): {"stdout": "card, uuid, ecc_mode\n" + rows}}
    write_machine(plugin, CSV_MACHINE, data)


def _with(device: Device, attributes: dict[str, str]) -> Device:
    return device.model_copy(update={"attributes": {**device.attributes, **attributes}}) if attributes else device


class FailedModesAsDefaults(Healthy):
    DEFECT = ("the cards' modes assumed SPX/NPS1 whenever `acme-smi static --json` fails ('the tool answers once "
              "the card is partitioned'): a partitioned card's modes named wrong while the query fails")
    KILLED_BY = ("RAC203", "invariant a-lost-answer-is-no-other-answer")
    #: Whether a failed query gives the defaults (the defect) or no modes.
    assume_defaults = True

    def __init__(self, name: str) -> None:
        super().__init__(name)
        add_json_machine(name)

    def modes(self, host: Host) -> dict[str, dict[str, str]] | None:
        """Each card's modes by its uuid; None where the tool fails or is not installed."""
        stdout = tool_output(host, STATIC_ARGV)
        try:
            records: Any = json.loads(stdout) if stdout else None
        except ValueError:
            return None
        if not isinstance(records, list):
            return None
        return {str(r.get("uuid")): {k: v for k, v in r["modes"].items() if k in MODES and isinstance(v, str)}
                for r in records if isinstance(r, dict) and isinstance(r.get("modes"), dict)}

    def rayaccel_discover(self, host: Host) -> list[Device]:
        devices = super().rayaccel_discover(host)
        modes = self.modes(host)
        if modes is None:
            return [_with(d, dict(DEFAULTS)) for d in devices] if self.assume_defaults else devices
        return [_with(d, modes.get(d.id, {})) for d in devices]


class UnansweredEccModeAsEnabled(Healthy):
    DEFECT = ("a card's ECC mode taken as 'Enabled' whenever `acme-smi query --csv` does not answer ('ECC is on by "
              "default'): while the tool hangs or fails, cards running without ECC are said to have it")
    KILLED_BY = ("RAC204", "invariant a-lost-answer-is-no-other-answer")
    #: Whether an unanswered query gives the default (the defect) or no attribute.
    assume_default = True

    def __init__(self, name: str) -> None:
        super().__init__(name)
        add_csv_machine(name)

    def ecc_modes(self, host: Host) -> dict[str, str] | None:
        """Each card's ECC mode by its uuid; None where the tool does not answer."""
        stdout = tool_output(host, QUERY_ARGV)
        if stdout is None:
            return None
        rows = csv.DictReader(io.StringIO(stdout), skipinitialspace=True)
        return {row["uuid"]: row["ecc_mode"] for row in rows if row.get("uuid") and row.get("ecc_mode")}

    def rayaccel_discover(self, host: Host) -> list[Device]:
        devices = super().rayaccel_discover(host)
        modes = self.ecc_modes(host)
        if modes is None:
            return [_with(d, {"ecc_mode": "Enabled"}) for d in devices] if self.assume_default else devices
        return [_with(d, {"ecc_mode": modes[d.id]} if d.id in modes else {}) for d in devices]


for _cls in (FailedModesAsDefaults, UnansweredEccModeAsEnabled):
    _plugin = add_import_defect(_cls)
    globals()[_plugin.name.replace("-", "_")] = _plugin
