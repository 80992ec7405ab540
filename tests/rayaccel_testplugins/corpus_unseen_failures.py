"""Corpus mutants that judge a card's health by one of its records and not the other (issue 46, held-out round 10's
``a1``: an AMD wrapper reporting a partitioned GPU from its primary partition alone, a secondary partition's own
failure unreported; its kill rested on the fixture's expectation, which a vendor edits with the code). RAC203's
``invariant a-failure-anywhere-is-seen``: a declared fault that changes nothing, its change written on a sibling
record that fails a card, is named.

Each ACME card has two dies, each with its own fatal-error counter; a card is unhealthy where either die counts one.
Each mutant's machine carries a fault on the die it does not read, and its expectation, written with the code, says
the card stays healthy (the vendor's own belief); the right reader's machine says it does not. Four shapes: the
driver's ``acme<N>/die<K>/fatal_errors`` files, the first die's alone read (a1's shape: the primary's record), a
die library's records keyed by die, one per card kept by a dict built over them (the last die's),
``acme-smi --json --query-dies``'s list of die records read for die 0 alone, and ``acme-smi --query-dies``'s CSV
rows gathered by card, the first row kept.

Imported by tests/conformance/test_conformance_corpus.py (``corpus.MUTANT_MODULES``); each is bound here under its
name (``c-card-from-its-first-die`` as ``c_card_from_its_first_die``) so a Ray node loads it by
``RAYACCEL_PLUGINS``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from rayaccel import Device, HealthReport, Host, LibraryAdapter, LibraryUnavailable
from rayaccel_testplugins import acme
from rayaccel_testplugins.corpus import SYSFS, Healthy, add_import_defect, read_machine, tool_output, write_machine

FILES_MACHINE = "acme-4-dies"
LIBRARY_MACHINE = "acme-4-dielib"
TOOL_MACHINE = "acme-4-diesmi"
DIE_TOOL = ("acme-smi", "--json", "--query-dies")
CSV_MACHINE = "acme-4-diecsv"
DIE_ROWS = ("acme-smi", "--query-dies", "--format=csv,noheader")
LIBRARY = "acmedie"
DIES = 2
#: The card whose die the fault counts a fatal error on.
CARD = 2


def _fault(data: dict[str, Any], name: str, patch: dict[str, Any], seen: bool) -> dict[str, Any]:
    """The fault counting one fatal error on a die of card ``CARD``; expected as the plugin's author believes:
    the card unhealthy where the author reads that die (``seen``), healthy where not."""
    card = data["host"]["files"][f"{SYSFS}/acme{CARD}/uuid"].strip()
    resources = dict(data["expected"]["resources"])
    if seen:
        family = next(k for k in resources if not k.startswith("accelerator_type:"))
        resources[family] -= 1
        expected = {"health": {card: "unhealthy"}, "reasons": {card: ["acme-fatal"]}, "resources": resources,
                    "fatal": True}
    else:
        expected = {"health": {card: "healthy"}, "resources": resources, "fatal": False}
    return {"name": name, "kind": "fatal-error", "patch": patch, "expected": expected,
            "description": f"a die of card {CARD} counts a fatal error: the card is unhealthy"}


def _die_listing(ids: list[str], fatal_die: int | None) -> str:
    """``acme-smi --json --query-dies``: every die's record, naming its card, its number and its count."""
    dies = [{"card": ids[i], "die": k, "fatal": int(DIES * i + k == fatal_die)} for i in range(4) for k in range(DIES)]
    return json.dumps({"dies": dies}, indent=1)


def _die_rows(ids: list[str], fatal_die: int | None) -> str:
    """``acme-smi --query-dies --format=csv,noheader``: a row per die (card uuid, die, fatal errors)."""
    return "".join(f"{ids[i]}, {k}, {int(DIES * i + k == fatal_die)}\n" for i in range(4) for k in range(DIES))


def add_die_machine(plugin: str, library: bool, seen: bool, tool: bool = False, rows: bool = False) -> None:
    """acme-4 with each card's dies' fatal-error counters (``library``: in the die library; ``tool``: in
    ``acme-smi --json --query-dies``; else the driver's ``die<K>`` directories) and a fault on one die of card
    ``CARD`` (die 1 in files and the tool's listing, the library's die 4, the card's first), expected as ``seen``
    says."""
    data = read_machine(plugin)
    files = data["host"]["files"]
    ids = [files[f"{SYSFS}/acme{i}/uuid"].strip() for i in range(4)]
    if rows:
        data["name"] = CSV_MACHINE
        data["host"]["commands"][" ".join(DIE_ROWS)] = {"stdout": _die_rows(ids, None)}
        patch: dict[str, Any] = {"commands": {" ".join(DIE_ROWS): {"stdout": _die_rows(ids, DIES * CARD + 1)}}}
        data["perturbations"] = []
    elif tool:
        data["name"] = TOOL_MACHINE
        data["host"]["commands"][" ".join(DIE_TOOL)] = {"stdout": _die_listing(ids, None)}
        patch = {"commands": {" ".join(DIE_TOOL): {"stdout": _die_listing(ids, DIES * CARD + 1)}}}
        data["perturbations"] = []  # the tool names each card by its uuid: a reorder of the driver's files alone
    elif library:
        data["name"] = LIBRARY_MACHINE
        data["host"]["libraries"] = {LIBRARY: {"dies": {str(DIES * i + k): {"card": ids[i], "die": k, "fatal": 0}
                                                        for i in range(4) for k in range(DIES)}}}
        patch = {"libraries": {LIBRARY: {"dies": {str(DIES * CARD): {"fatal": 1}}}}}
    else:
        data["name"] = FILES_MACHINE
        files.update({f"{SYSFS}/acme{i}/die{k}/fatal_errors": "0\n" for i in range(4) for k in range(DIES)})
        patch = {"files": {f"{SYSFS}/acme{CARD}/die1/fatal_errors": "1\n"}}
    data["description"] = f"{data['description']}, each card's dies counting their own fatal errors"
    data["faults"] = [*data["faults"], _fault(data, "die-fatal", patch, seen)]
    write_machine(plugin, data["name"], data)


class DieCounters:
    """ACME's die library, simulated: its die records, each naming its card (uuid), its die number and count."""

    def __init__(self, data: Mapping[str, Any]) -> None:
        self.dies: dict[str, dict[str, Any]] = dict(data.get("dies") or {})


def _no_real_library() -> Any:
    raise LibraryUnavailable(f"{LIBRARY}: simulated only")


DIE_LIBRARY = LibraryAdapter(LIBRARY, _no_real_library, DieCounters)


def _die_library(host: Host) -> DieCounters | None:
    try:
        dies: DieCounters = host.library(DIE_LIBRARY)
    except LibraryUnavailable:
        return None
    return dies


def _tool_dies(host: Host) -> list[dict[str, Any]]:
    """The die records ``acme-smi --json --query-dies`` lists; none where the tool is not installed or answers
    no such JSON."""
    stdout = tool_output(host, DIE_TOOL)
    try:
        dies = json.loads(stdout)["dies"] if stdout is not None else []
    except (ValueError, KeyError, TypeError):
        return []
    return [d for d in dies if isinstance(d, dict) and {"card", "die", "fatal"} <= set(d)]


def _row_dies(host: Host) -> list[dict[str, Any]]:
    """The die records ``acme-smi --query-dies --format=csv,noheader`` prints (card, die, fatal); a line that is no
    such row skipped."""
    stdout = tool_output(host, DIE_ROWS)
    rows = []
    for line in (stdout or "").splitlines():
        cells = [c.strip() for c in line.split(",")]
        if len(cells) == 3 and cells[1].isdigit() and cells[2].isdigit():
            rows.append({"card": cells[0], "die": int(cells[1]), "fatal": int(cells[2])})
    return rows


def _with_counts(host: Host, devices: list[Device], driver: list[HealthReport],
                 fatal: Mapping[str, int | None]) -> list[HealthReport]:
    """Each card's health from its dies' count where one is given, a lost card staying lost."""
    return [report if report.state != "healthy" or device.id not in fatal else acme.health_from_count(
        device.id, fatal[device.id]) for device, report in zip(devices, driver, strict=True)]


class CardFromEveryDie(Healthy):
    """A card's fatal errors are every die's (the right reader), on both machines."""

    def __init__(self, name: str) -> None:
        super().__init__(name)
        add_die_machine(name, library=False, seen=True)
        add_die_machine(name, library=True, seen=True)
        add_die_machine(name, library=False, seen=True, tool=True)
        add_die_machine(name, library=False, seen=True, rows=True)

    def rayaccel_health(self, host: Host, devices: list[Device]) -> list[HealthReport]:
        driver = super().rayaccel_health(host, devices)
        fatal: dict[str, int | None] = {}
        library = _die_library(host)
        records = list(library.dies.values()) if library is not None else _tool_dies(host) + _row_dies(host)
        for record in records:
            fatal[record["card"]] = fatal.get(record["card"], 0) + int(record["fatal"])
        for device in devices:
            counts = [acme._number(host, f"{SYSFS}/acme{device.index}/die{k}/fatal_errors") for k in range(DIES)
                      if host.exists(f"{SYSFS}/acme{device.index}/die{k}/fatal_errors")]
            if counts:
                fatal[device.id] = None if None in counts else sum(c or 0 for c in counts)
        return _with_counts(host, devices, driver, fatal)


class CardFromItsFirstDie(Healthy):
    DEFECT = ("a card's fatal errors read from its first die's directory alone (die0: 'the card's counter is its "
              "primary die's'), so another die's own fatal error goes unreported; the fault's expectation written "
              "with the code says the card stays healthy")
    KILLED_BY = ("RAC203", "invariant a-failure-anywhere-is-seen")

    def __init__(self, name: str) -> None:
        super().__init__(name)
        add_die_machine(name, library=False, seen=False)

    def rayaccel_health(self, host: Host, devices: list[Device]) -> list[HealthReport]:
        driver = super().rayaccel_health(host, devices)
        fatal = {d.id: acme._number(host, f"{SYSFS}/acme{d.index}/die0/fatal_errors") for d in devices
                 if host.exists(f"{SYSFS}/acme{d.index}/die0/fatal_errors")}  # the defect: die0 alone
        return _with_counts(host, devices, driver, fatal)


class CardFromOneDieRecord(Healthy):
    DEFECT = ("the die library's records gathered into a dict by card ({card: record}), so each card keeps its "
              "last die's record alone and its first die's fatal error goes unreported; the fault's expectation "
              "written with the code says the card stays healthy")
    KILLED_BY = ("RAC203", "invariant a-failure-anywhere-is-seen")

    def __init__(self, name: str) -> None:
        super().__init__(name)
        add_die_machine(name, library=True, seen=False)

    def rayaccel_health(self, host: Host, devices: list[Device]) -> list[HealthReport]:
        driver = super().rayaccel_health(host, devices)
        if (library := _die_library(host)) is None:
            return driver
        by_card = {record["card"]: record for record in library.dies.values()}  # the defect: one record per card
        return _with_counts(host, devices, driver, {card: int(r["fatal"]) for card, r in by_card.items()})


class CardFromDieZeroRows(Healthy):
    DEFECT = ("acme-smi's die listing read for the records of die 0 alone (each card's 'own' die), so another die's "
              "fatal error goes unreported; the fault's expectation written with the code says the card stays "
              "healthy")
    KILLED_BY = ("RAC203", "invariant a-failure-anywhere-is-seen")

    def __init__(self, name: str) -> None:
        super().__init__(name)
        add_die_machine(name, library=False, seen=False, tool=True)

    def rayaccel_health(self, host: Host, devices: list[Device]) -> list[HealthReport]:
        driver = super().rayaccel_health(host, devices)
        fatal = {r["card"]: int(r["fatal"]) for r in _tool_dies(host) if r["die"] == 0}  # the defect: die 0 alone
        return _with_counts(host, devices, driver, fatal)


class CardFromFirstDieRow(Healthy):
    DEFECT = ("acme-smi's die rows gathered by card with setdefault, so each card keeps its first row (die 0) and "
              "another die's fatal error goes unreported; the fault's expectation written with the code says the card "
              "stays healthy")
    KILLED_BY = ("RAC203", "invariant a-failure-anywhere-is-seen")

    def __init__(self, name: str) -> None:
        super().__init__(name)
        add_die_machine(name, library=False, seen=False, rows=True)

    def rayaccel_health(self, host: Host, devices: list[Device]) -> list[HealthReport]:
        driver = super().rayaccel_health(host, devices)
        first: dict[str, dict[str, Any]] = {}
        for row in _row_dies(host):
            first.setdefault(row["card"], row)  # the defect: one row per card, its first
        return _with_counts(host, devices, driver, {card: int(r["fatal"]) for card, r in first.items()})


for _cls in (CardFromItsFirstDie, CardFromOneDieRecord, CardFromDieZeroRows, CardFromFirstDieRow):
    _plugin = add_import_defect(_cls)
    globals()[_plugin.name.replace("-", "_")] = _plugin
