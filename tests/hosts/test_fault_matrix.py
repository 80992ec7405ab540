"""The fault matrix: every reference plugin and template-baked plugins, against broken vendor interfaces.

Cases are generated from data: each row of :data:`ROWS` names a plugin, one of its shipped fixtures and
a partner plugin's fixture. The fixture's own host state says which interfaces the plugin reads
(commands, libraries, metadata URLs, environment variables, sysfs files), and each interface kind has a
list of faults, written as JSON merge patches over that host state (or, for values inside a command's
JSON or CSV output, as a mutation of the recorded output). A new plugin, or a new interface in a fixture,
is one row; a new fault kind is one entry in a list.

Every case builds the node's inventory with the faulted plugin and the partner loaded on one simulated
host, and checks:

- it ends within the case's bound;
- the partner's family is exactly what it is without the fault, and the partner reports no new problem;
- the faulted family is unchanged, or a problem record from that plugin says why (for a malformed value:
  naming the value, and the family's other devices are still reported), or the interface is one the
  plugin documents as optional (tool or library not installed: no devices, no problem);
- a device that vanishes between discovery and health is not counted.

Each plugin runs on one fixture per interface kind; ``RAYACCEL_FAULT_MATRIX_ALL=1`` runs every shipped fixture
(about two minutes more), which is how a new fixture's hardware scenario is checked before it is committed.
"""

from __future__ import annotations

import copy
import csv
import json
import os
import re
import shlex
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from baked_plugins import bake_plugins
from hypothesis import given, strategies as st

from rayaccel.hosts.expectations import FaultExpectation
from rayaccel.hosts.fixtures import Fault, Fixture, HostState, installed_fixtures, load_fixture, merge_patch
from rayaccel.hosts.seam import MAX_OUTPUT_BYTES, Host
from rayaccel.hosts.simulated import LIBRARY_FAULT_KEY, SimulatedHost
from rayaccel.inventory.builder import InventoryBuilder
from rayaccel.plugins.manager import PluginManager
from rayaccel.records import Device, FamilyInventory, NodeInventory, Problem
from rayaccel.reporting import collect_problems, vendor_float, vendor_int

REPO = Path(__file__).resolve().parents[2]

#: The value a malformed field gets; a problem about it must quote it.
MARKER = "zq-garbage"
#: Seconds a case may take, counting the waits a simulated host skips (a hung tool costs its whole timeout):
#: faults that are waits get the SDK's whole-inventory deadline (RAYACCEL_INVENTORY_TIMEOUT, 30 s).
BOUND = 6.0
WAIT_BOUND = 30.0
HOOK_TIMEOUT = 8.0


@dataclass(frozen=True)
class Row:
    """One plugin on one of its fixtures, next to a partner plugin whose inventory must stay intact."""

    plugin: str
    fixture: str
    partner: str  # fixture ref of another plugin, with a different resource name
    #: The plugin has a second source for its device count (sysfs, a second command): a listing cut at a line
    #: boundary, or empty, must be reported. Without one, fewer devices or links is all it can see (documented).
    count_source: bool = True
    #: Fault ids (suffixes) whose outcome is a documented meaning of the value, with the reason.
    documented: tuple[tuple[str, str], ...] = ()


ROWS = [
    Row("nvidia", "nvidia/dgx-h100", "gaudi/hls-gaudi2"),
    Row("amd", "amd/mi300x-8", "neuron/inf2.48xlarge"),     # amd-smi CLI
    Row("amd", "amd/mi355x-8", "tpu/tpu7x-8"),              # amdsmi library
    Row("tpu", "tpu/v5e-8", "nvidia/l4-single"),            # metadata server
    Row("tpu", "tpu/v5p-16-worker0", "amd/mi210-pair"),     # GKE environment variables
    Row("neuron", "neuron/trn1.32xlarge", "nvidia/a100-pcie-pair"),
    Row("gaudi", "gaudi/hls-gaudi3", "tpu/v5e-8"),
    Row("baked-sysfs", "baked-sysfs/baked-sysfs-4", "gaudi/hls-gaudi2", count_source=False,
        documented=(("value=-1", "-1 in numa_node means 'no NUMA node'"),)),
    Row("baked-csv", "baked-csv/baked-csv-4", "nvidia/l4-single", count_source=False,
        documented=(("column6=-1", "-1 in numa_node means 'no NUMA node'"),)),
    Row("baked-json", "baked-json/baked-json-4", "amd/mi210-pair", count_source=False),
    Row("baked-lib", "baked-lib/baked-lib-4", "neuron/inf2.48xlarge", count_source=False),
]

if os.environ.get("RAYACCEL_FAULT_MATRIX_ALL") == "1":  # every shipped fixture, not one per interface kind
    _PARTNERS = {"nvidia": "gaudi/hls-gaudi2", "amd": "neuron/inf2.48xlarge", "tpu": "nvidia/l4-single",
                 "neuron": "nvidia/a100-pcie-pair", "gaudi": "tpu/v5e-8"}
    _shipped = {r.fixture for r in ROWS}
    for _path in sorted(REPO.glob("reference_plugins/*/src/rayaccel_*/fixtures/*.yaml")):
        _plugin = _path.parent.parent.name.removeprefix("rayaccel_")
        if f"{_plugin}/{_path.stem}" not in _shipped:
            ROWS.append(Row(_plugin, f"{_plugin}/{_path.stem}", _PARTNERS[_plugin]))

#: A library that raises on every call, or blocks on every call (the reserved key of the simulated host).
LIBRARY_FAULTS = {
    "raising": {LIBRARY_FAULT_KEY: {"raise": "internal error in the vendor library"}},
    "hanging": {LIBRARY_FAULT_KEY: {"hang": True, "hang_seconds": 30}},
}


@dataclass(frozen=True)
class Case:
    row: Row
    interface: str
    fault: str
    patch: dict[str, Any]
    #: A value that must be quoted by a problem if the inventory changed.
    marker: str | None = None
    #: Not having the interface is a documented state (no tool, no library: no devices, no problem).
    optional: bool = False
    #: The patch is applied after discovery, before the other hooks.
    between_hooks: bool = False
    #: Only one device is affected: the family's other devices must still be reported.
    one_device: bool = False
    bound: float = BOUND

    @property
    def id(self) -> str:
        return f"{self.row.fixture}:{self.interface}:{self.fault}"


# Fault generation ---------------------------------------------------------------------------------


def _mutate_leaves(entry: Any) -> Iterator[tuple[str, Any]]:
    """(path, mutated entry) for each scalar field of one device entry (depth 2), given a wrong value."""
    if not isinstance(entry, dict):
        return
    for key, value in entry.items():
        paths: list[tuple[list[str], Any]] = []
        if isinstance(value, dict):
            paths += [([key, k], v) for k, v in value.items() if not isinstance(v, dict | list)]
        elif isinstance(value, list):
            paths.append(([key], value))
        else:
            paths.append(([key], value))
        for path, old in paths:
            if isinstance(old, bool) or old is None:
                bad: Any = MARKER
            elif isinstance(old, int | float):
                bad = MARKER
            elif isinstance(old, str):
                bad = {"zq": MARKER}
            else:
                bad = MARKER
            mutated = copy.deepcopy(entry)
            target = mutated
            for part in path[:-1]:
                target = target[part]
            target[path[-1]] = bad
            yield ".".join(path), mutated


def _numbers(entry: Any, value: int) -> Any:
    """Every whole number in an entry replaced (a negative or absurd count from a broken tool)."""
    if isinstance(entry, dict):
        return {k: _numbers(v, value) for k, v in entry.items()}
    if isinstance(entry, list):
        return [_numbers(v, value) for v in entry]
    if isinstance(entry, int) and not isinstance(entry, bool):
        return value
    return entry


def _json_device_list(doc: Any) -> tuple[list[str], list[Any]] | None:
    """Where the per-device entries are in a tool's JSON: the top-level list, or the first list of objects."""
    if isinstance(doc, list) and doc and all(isinstance(e, dict) for e in doc):
        return [], doc
    if isinstance(doc, dict):
        for key, value in doc.items():
            if isinstance(value, list) and len(value) >= 2 and all(isinstance(e, dict) for e in value):
                return [key], value
    return None


def _with_entry(doc: Any, where: list[str], index: int, entry: Any) -> Any:
    doc = copy.deepcopy(doc)
    entries = doc if not where else doc[where[0]]
    entries[index] = entry
    return doc


def _command_value_faults(row: Row, group: str, keys: list[str], stdout: str) -> Iterator[Case]:
    """Malformed values inside one device's part of a command's output (JSON entry, CSV row)."""
    key = keys[0]
    try:
        doc = json.loads(stdout)
    except json.JSONDecodeError:
        doc = None
    if doc is not None:
        found = _json_device_list(doc)
        if found is None:
            return
        where, entries = found
        index = 1 if len(entries) > 1 else 0
        for path, mutated in _mutate_leaves(entries[index]):
            text = json.dumps(_with_entry(doc, where, index, mutated), indent=2)
            yield Case(row, f"command:{group}", f"value:{path}", {"commands": {key: {"stdout": text}}},
                       marker=MARKER, one_device=True)
        for bad in (-1, 10**9):
            text = json.dumps(_with_entry(doc, where, index, _numbers(entries[index], bad)), indent=2)
            yield Case(row, f"command:{group}", f"numbers={bad}", {"commands": {key: {"stdout": text}}},
                       marker=str(bad), one_device=True)
        return
    lines = stdout.splitlines()
    rows = [i for i, line in enumerate(lines) if "," in line]
    if len(rows) < 2:
        return
    target = rows[1]
    cells = next(csv.reader([lines[target]], skipinitialspace=True))
    for column, cell in enumerate(cells):
        if not cell.strip()[:1].isdigit():
            continue  # a text column: any text is a valid value
        for bad in (MARKER, "-1", "99999999999999999999"):
            changed = list(cells)
            changed[column] = bad
            out = list(lines)
            out[target] = ", ".join(changed)
            yield Case(row, f"command:{group}", f"column{column}={bad}",
                       {"commands": {key: {"stdout": "\n".join(out) + "\n"}}}, marker=bad, one_device=True)


def command_faults(row: Row, state: dict[str, Any]) -> Iterator[Case]:
    commands: dict[str, Any] = state.get("commands", {})
    groups: dict[str, list[str]] = {}
    tools: dict[str, list[str]] = {}
    for line in commands:
        argv = shlex.split(line)
        groups.setdefault(" ".join(argv[:2]), []).append(line)
        tools.setdefault(argv[0], []).append(line)
    for tool, keys in tools.items():
        yield Case(row, f"command:{tool}", "missing", {"commands": {k: None for k in keys}}, optional=True)
    for group, keys in groups.items():
        def each(answer: Callable[[str], dict[str, Any]], keys: list[str] = keys) -> dict[str, Any]:
            return {"commands": {k: answer(commands[k].get("stdout", "")) for k in keys}}

        interface = f"command:{group}"
        yield Case(row, interface, "hang", each(lambda s: {"hang": True}), bound=WAIT_BOUND)
        yield Case(row, interface, "non-zero",
                   each(lambda s: {"returncode": 3, "stdout": "", "stderr": "error: device or resource busy\n"}))
        yield Case(row, interface, "empty", each(lambda s: {"stdout": "", "stderr": ""}))
        # Output is cut per invocation: one run of the group's command (the one with the most output).
        main = max(keys, key=lambda k: len(commands[k].get("stdout", "")))
        text = commands[main].get("stdout", "")
        cut = len(text) // 2
        cut -= 2 if cut >= 2 and text[cut - 1] == "\n" else 0  # really inside a line
        yield Case(row, interface, "truncated-mid-line", {"commands": {main: {"stdout": text[:cut]}}})
        half = "".join(text.splitlines(keepends=True)[: max(1, len(text.splitlines()) // 2)])
        yield Case(row, interface, "truncated-lines", {"commands": {main: {"stdout": half}}})
        yield Case(row, interface, "garbage",
                   each(lambda s: {"stdout": "\x1b[31mSegmentation fault\x00\x7f {{[[ ]]} ,,,;; \n" + MARKER + "\n"}))
        yield Case(row, interface, "huge", each(lambda s: {"stdout": (s or "x") * max(1, (4 << 20) // max(len(s), 1))}))
        too_big = "x" * (MAX_OUTPUT_BYTES + 1)
        yield Case(row, interface, "over-the-host-limit", {"commands": {main: {"stdout": too_big}}})
        yield Case(row, interface, "non-utf-8",
                   each(lambda s: {"stdout": s[: len(s) // 3] + "\ufffd\ufffd\u00c3\u00a9" + s[len(s) // 3:]}))
        yield from _command_value_faults(row, group, [main], text)


def library_faults(row: Row, state: dict[str, Any]) -> Iterator[Case]:
    for name, data in state.get("libraries", {}).items():
        interface = f"library:{name}"
        yield Case(row, interface, "missing", {"libraries": {name: None}}, optional=True)
        for fault, patch in LIBRARY_FAULTS.items():
            yield Case(row, interface, fault, {"libraries": {name: patch}},
                       bound=WAIT_BOUND if fault == "hanging" else BOUND)
        devices = data.get("devices") or data.get("gpus")
        if not isinstance(devices, dict) or "1" not in devices:
            continue
        collection = "devices" if "devices" in data else "gpus"
        entry = devices["1"]
        for path, mutated in _mutate_leaves(entry):
            if path.split(".")[0] in ("errors", "lost") or isinstance(_get(entry, path), str):
                continue  # a library returns typed values: only its numbers can be garbage
            # The adapter converts like the binding does, so the garbage shows as the call failing: the
            # problem names the call (and quotes the value when the binding's error does).
            yield Case(row, interface, f"value:{path}", {"libraries": {name: {collection: {"1": mutated}}}},
                       one_device=True)


def _get(entry: dict[str, Any], path: str) -> Any:
    for part in path.split("."):
        entry = entry[part]
    return entry


def http_faults(row: Row, state: dict[str, Any]) -> Iterator[Case]:
    for url in state.get("http", {}):
        leaf = url.rstrip("/").rsplit("/", 1)[-1]
        interface = f"http:{leaf}"
        yield Case(row, interface, "down", {"http": {url: {"unreachable": True}}})
        yield Case(row, interface, "slow-drip", {"http": {url: {"hang": True}}}, bound=WAIT_BOUND)
        yield Case(row, interface, "server-error", {"http": {url: {"status": 500, "body": "internal error"}}})
        for bad in (MARKER, "-1", "99999999999999999999"):
            yield Case(row, interface, f"body={bad}", {"http": {url: {"body": bad}}}, marker=bad)


def env_faults(row: Row, state: dict[str, Any]) -> Iterator[Case]:
    for key in state.get("env", {}):
        if key == "PATH":
            continue
        for bad in (MARKER, "-1", "99999999999999999999"):
            yield Case(row, f"env:{key}", f"value={bad}", {"env": {key: bad}}, marker=bad)


def file_faults(row: Row, state: dict[str, Any]) -> Iterator[Case]:
    files: dict[str, str] = state.get("files", {})
    numeric = [p for p, v in files.items() if v.strip().lstrip("-").isdigit()]
    if not numeric:
        return
    for bad in (MARKER, "-1", "99999999999999999999"):
        yield Case(row, "files:numeric", f"value={bad}", {"files": {p: bad + "\n" for p in numeric}}, marker=bad)
    yield Case(row, "files:numeric", "unreadable", {"files": {p: "\ufffd\x00\x01" for p in numeric}})


def vanish_faults(row: Row, fixture: Fixture) -> Iterator[Case]:
    """The fixture's own device-lost faults; without one, the last device removed from every listing."""
    declared = [f for f in fixture.faults if f.kind == "device-lost"]
    for fault in declared:
        yield Case(row, "device", f"vanishes-between-hooks:{fault.name}", fault.patch, between_hooks=True)
    if not declared:
        yield Case(row, "device", "vanishes-between-hooks:last", _without_last_device(fixture), between_hooks=True)


def _without_last_device(fixture: Fixture) -> dict[str, Any]:
    """A patch removing the last device from each interface that lists devices (library, JSON, CSV, sysfs)."""
    state, count, last = fixture.host.model_dump(mode="json"), fixture.expected.devices, fixture.expected.devices - 1
    patch: dict[str, Any] = {}
    for name, data in state.get("libraries", {}).items():
        for key in ("devices", "gpus"):
            if isinstance(data.get(key), dict) and str(last) in data[key]:
                patch.setdefault("libraries", {})[name] = {key: {str(last): None}}
    for line, answer in state.get("commands", {}).items():
        text = answer.get("stdout", "")
        try:
            found = _json_device_list(json.loads(text))
        except json.JSONDecodeError:
            rows = [r for r in text.splitlines() if r.strip()]
            if len(rows) == count:
                patch.setdefault("commands", {})[line] = {"stdout": "".join(r + "\n" for r in rows[:-1])}
            continue
        if found is not None and len(found[1]) == count:
            doc = json.loads(text)
            entries = doc if not found[0] else doc[found[0][0]]
            del entries[-1]
            patch.setdefault("commands", {})[line] = {"stdout": json.dumps(doc)}
    for path in state.get("files", {}):
        if re.search(rf"^/sys/.*/[a-z_]+{last}/", path) or re.fullmatch(rf"/dev/(accel|vfio/){last}", path):
            patch.setdefault("files", {})[path] = None
    return patch


GENERATORS = (command_faults, library_faults, http_faults, env_faults, file_faults)


# The plugins --------------------------------------------------------------------------------------

BAKES = {"baked-sysfs": "sysfs", "baked-csv": "command-csv", "baked-json": "command-json",
         "baked-lib": "python-library"}


@pytest.fixture(scope="module")
def baked_plugins(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """One template bake per probe kind, with the real cookiecutter; its module is imported from src/."""
    return bake_plugins(tmp_path_factory.mktemp("fault-matrix-bakes"), BAKES)


@pytest.fixture(scope="module")
def manager(baked_plugins: dict[str, Any]) -> PluginManager:
    manager = PluginManager(autoload=True, timeout=HOOK_TIMEOUT)
    for family, module in baked_plugins.items():
        assert manager.register(module, family), manager.problems
    return manager


def fixture_of(manager: PluginManager, ref: str) -> Fixture:
    return load_fixture(installed_fixtures(manager)[ref])


def combined(faulted: Fixture, partner: Fixture, faults: list[Fault]) -> Fixture:
    """One host carrying both machines' vendor interfaces (the faulted plugin's win where both answer)."""
    state = merge_patch(partner.host.model_dump(mode="json"), faulted.host.model_dump(mode="json"))
    return faulted.model_copy(update={"host": HostState.model_validate(state), "faults": faults})


class SwitchingBuilder(InventoryBuilder):
    """Switches a fault on right after the faulted plugin's discovery, as hardware failing mid-probe does."""

    def __init__(self, manager: PluginManager, plugins: list[str], fault_file: Path, fault: str, when: str) -> None:
        super().__init__(manager, plugins)
        self.fault_file, self.fault, self.when = fault_file, fault, when

    def _devices(self, plugin: str, host: Host, problems: list[Problem]) -> list[Device]:
        devices = super()._devices(plugin, host, problems)
        if plugin == self.when:
            self.fault_file.write_text(self.fault + "\n")
        return devices


def build(manager: PluginManager, fixture: Fixture, row: Row, partner_plugin: str, case: Case | None,
          tmp_path: Path) -> tuple[NodeInventory, float]:
    plugins = [row.plugin, partner_plugin]
    started = time.monotonic()
    if case is None:
        host = SimulatedHost(fixture)
        inventory = InventoryBuilder(manager, plugins).build(host)
    elif case.between_hooks:
        fault_file = tmp_path / "faults"
        host = SimulatedHost(fixture, fault_file=str(fault_file))
        inventory = SwitchingBuilder(manager, plugins, fault_file, "case", row.plugin).build(host)
    else:
        host = SimulatedHost(fixture, faults=["case"])
        inventory = InventoryBuilder(manager, plugins).build(host)
    return inventory, time.monotonic() - started + getattr(host, "skipped_wait_s", 0.0)


def family_of(inventory: NodeInventory, plugin: str) -> FamilyInventory | None:
    return next((f for f in inventory.families if f.plugin == plugin), None)


def observable(family: FamilyInventory | None) -> dict[str, Any] | None:
    if family is None:
        return None
    return family.model_dump(mode="json")


def subset(family: FamilyInventory | None, base: FamilyInventory) -> bool:
    """Only devices and links the baseline has, each unchanged: what a shorter listing gives."""
    if family is None:
        return True
    dump = [d.model_dump() for d in base.devices]
    links = [ln.model_dump() for ln in base.topology.links]
    return (all(d.model_dump() in dump for d in family.devices)
            and all(ln.model_dump() in links for ln in family.topology.links))


def own_problems(inventory: NodeInventory, plugin: str) -> list[Problem]:
    return [p for p in inventory.problems if p.plugin == plugin and p.severity in ("error", "warning")
            and p.code not in ("several-families", "unknown-sku")]


# The cases ----------------------------------------------------------------------------------------



@pytest.mark.parametrize("row", ROWS, ids=[r.fixture for r in ROWS])
def test_fault_matrix(row: Row, manager: PluginManager, tmp_path: Path) -> None:
    faulted = fixture_of(manager, row.fixture)
    partner = fixture_of(manager, row.partner)
    partner_plugin = row.partner.split("/")[0]
    assert manager.family(partner_plugin).resource_name != manager.family(row.plugin).resource_name

    state = faulted.host.model_dump(mode="json")
    cases = [case for generate in GENERATORS for case in generate(row, state)]
    cases += list(vanish_faults(row, faulted))
    visible = manager.family(row.plugin).visible_devices_env_var  # an operator's malformed restriction
    cases += [Case(row, f"env:{visible}", f"value={bad}", {"env": {visible: bad}}, marker=bad)
              for bad in (MARKER, "-1", "0,0,0,99999999999999999999", "")]
    assert cases, f"{row.fixture}: no interface to fault"

    base_fixture = combined(faulted, partner, [])
    baseline, _ = build(manager, base_fixture, row, partner_plugin, None, tmp_path)
    base_family = family_of(baseline, row.plugin)
    assert base_family is not None
    known = {(p.code, p.message) for p in own_problems(baseline, row.plugin)}  # the fixture's own notes
    base_partner = observable(family_of(baseline, partner_plugin))
    assert base_partner is not None

    failures = []
    for case in cases:
        fault = Fault(name="case", description=case.id, kind="other", patch=case.patch, expected=FaultExpectation())
        fixture = combined(faulted, partner, [fault])
        inventory, elapsed = build(manager, fixture, row, partner_plugin, case, tmp_path)
        inventory = inventory.model_copy(update={"problems": [
            p for p in inventory.problems if (p.code, p.message) not in known]})
        why = judge(case, inventory, elapsed, base_family, base_partner, partner_plugin,
                    manager.family(row.plugin).resource_name)
        if why:
            failures.append(f"{case.id}: {why}")
    assert not failures, f"{len(failures)} of {len(cases)} cases failed:\n" + "\n".join(failures)


def judge(case: Case, inventory: NodeInventory, elapsed: float, base_family: FamilyInventory,
          base_partner: dict[str, Any], partner_plugin: str, resource: str) -> str | None:
    """Why a case failed, or None."""
    if elapsed >= case.bound:
        return f"took {elapsed:.1f}s, bound {case.bound:g}s"
    if observable(family_of(inventory, partner_plugin)) != base_partner:
        return f"the partner plugin {partner_plugin}'s family changed"
    if own_problems(inventory, partner_plugin):
        return f"the partner plugin reported problems: {own_problems(inventory, partner_plugin)}"
    plugin = case.row.plugin
    family = family_of(inventory, plugin)
    problems = own_problems(inventory, plugin)
    text = "\n".join(p.message + " " + (p.fix or "") for p in problems)
    if case.between_hooks:
        if family is None:
            return "the family disappeared"
        lost = base_family.resources.get(resource, 0) - family.resources.get(resource, 0)
        if lost < 1:
            states = {h.device: h.state for h in family.health}
            return f"the vanished device is still counted ({resource}: {family.resources.get(resource)}; {states})"
        return None
    if observable(family) == observable(base_family):
        return None  # the fault did not touch anything the plugin reads
    if any(case.fault.endswith(suffix) for suffix, _ in case.row.documented):
        return None
    if not case.row.count_source and case.fault in ("empty", "truncated-lines") and subset(family, base_family):
        return None  # no second source: a shorter listing looks like fewer devices or links (README says so)
    if family is None and case.optional and not problems:
        return None  # documented: no tool or library, no devices, no problem
    if case.marker is not None and family is not None and case.marker in json.dumps(observable(family)):
        return None  # taken as data, verbatim and visible (a name may be any text)
    if not problems:
        return ("the inventory changed without a problem record: "
                + ("family gone" if family is None else f"{len(family.devices)} devices"))
    if case.marker is not None and case.marker not in text:
        return f"no problem quotes the value {case.marker!r}: {[p.message for p in problems]}"
    contained = [p for p in problems if p.code == "hook-raised"]
    if case.one_device and contained:
        return f"one device's value made a hook fail for every device: {contained[0].message[:160]}"
    if case.one_device and (family is None or len(family.devices) < len(base_family.devices) - 1):
        return (f"one device's value cost the family its other devices "
                f"({0 if family is None else len(family.devices)} of {len(base_family.devices)}): "
                f"{[p.message for p in problems][:2]}")
    return None


# The reporting channel itself ---------------------------------------------------------------------


def test_vendor_values_are_read_defensively() -> None:
    with collect_problems() as sink:
        assert vendor_int("42", "memory.total") == 42
        assert vendor_int(" N/A ", "memory.total") is None
        assert vendor_int("abc", "memory.total", where="GPU 3") is None
        assert vendor_int(True, "count") is None
        assert vendor_int("-1", "agent-worker-number") is None
        assert vendor_int(10**9, "nc_count", maximum=64) is None
        assert vendor_int("\u00b2", "count") is None  # a Unicode digit int() would refuse
        assert vendor_float("nan", "power") is None
        assert vendor_float("1e400", "power") is None
        assert vendor_float("95.5", "power") == 95.5
    messages = [r.message for r in sink.drain()]
    assert messages[0] == "GPU 3: memory.total is 'abc', expected a whole number >= 0; it is ignored"
    assert any("-1" in m and "agent-worker-number" in m for m in messages)
    assert any("1000000000" in m and "[0, 64]" in m for m in messages)
    assert len(messages) == 7


@given(st.text(max_size=12))
def test_a_vendor_number_is_the_plain_decimal_it_reads_as_or_nothing(raw: str) -> None:
    # Control characters, Unicode digits and "1_0" are malformed, even where int()/float() would take them.
    with collect_problems():
        whole, real = vendor_int(raw, "field"), vendor_float(raw, "field")
    plain = raw.strip(" \t\r\n")
    if whole is not None:
        assert plain.lstrip("+-").isascii() and plain.lstrip("+-").isdigit() and whole == int(plain)
    if real is not None:
        assert plain.isascii() and "_" not in plain and real == float(plain)


def test_reports_are_bounded_and_deduplicated() -> None:
    with collect_problems() as sink:
        for i in range(500):
            vendor_int(f"x{i}", "field")
            vendor_int("same", "field")
    reports = sink.drain()
    assert len(reports) == 51
    assert reports[-1].code == "more-problems" and "451 more" in reports[-1].message  # 501 distinct, 50 kept


# The cases the issue names, spelled out ---------------------------------------------------------------


def _faulted(manager: PluginManager, ref: str, patch: dict[str, Any]) -> NodeInventory:
    fixture = fixture_of(manager, ref)
    fault = Fault(name="case", description="case", kind="other", patch=patch, expected=FaultExpectation())
    host = SimulatedHost(fixture.model_copy(update={"faults": [fault]}), faults=["case"])
    return InventoryBuilder(manager, [fixture.plugin]).build(host)


def _command(fixture: Fixture, word: str) -> str:
    return next(line for line in fixture.host.commands if word in line)


def test_a_malformed_nvml_value_names_gpu_field_and_value_and_keeps_every_gpu(manager: PluginManager) -> None:
    inventory = _faulted(manager, "nvidia/dgx-h100",
                         {"libraries": {"nvml": {"devices": {"3": {"memory": {"total": "abc"}}}}}})
    family = inventory.family("nvidia")
    assert family is not None and len(family.devices) == 8 and inventory.resources["GPU"] == 8
    (problem,) = [p for p in inventory.problems if p.hook == "rayaccel_discover"]
    assert "GPU 3" in problem.message and "memory.total" in problem.message and "'abc'" in problem.message


def test_a_negative_vram_size_from_amdsmi_costs_that_gpu_only(manager: PluginManager) -> None:
    """The library answer a record refuses (memory -1) leaves the other seven GPUs, with one line naming the GPU,
    the field and the value (it was 0 of 8 and pydantic's multi-line dump)."""
    inventory = _faulted(manager, "amd/mi355x-8",
                         {"libraries": {"amdsmi": {"gpus": {"0": {"vram_info": {"vram_size": -1}}}}}})
    family = inventory.family("amd")
    assert family is not None and len(family.devices) == 7 and inventory.resources["GPU"] == 7
    (problem,) = [p for p in inventory.problems if p.code == "malformed-value"]
    assert "GPU 0 (0000:05:00.0)" in problem.message and "memory_mib" in problem.message
    assert "(got -1)" in problem.message and "\n" not in problem.message


def _one_value_patch(fixture: Fixture, plugin: str) -> dict[str, Any]:
    """A patch giving one device of ``fixture`` one malformed value in its vendor's own format."""
    if plugin == "nvidia":
        return {"libraries": {"nvml": {"devices": {"3": {"memory": {"total": "abc"}}}}}}
    if plugin == "amd":
        return {"libraries": {"amdsmi": {"gpus": {"0": {"vram_info": {"vram_size": -1}}}}}}
    if plugin == "neuron":
        # The answer the plugin reads: a fixture may record a neuron-ls refusing a newer flag before it.
        line = next(line for line, answer in fixture.host.commands.items()
                    if "neuron-ls" in line and answer.returncode == 0 and answer.stdout)
        doc = json.loads(fixture.host.commands[line].stdout or "")
        doc[3]["memory_size"] = "abc"
        return {"commands": {line: {"stdout": json.dumps(doc)}}}
    if plugin == "gaudi":
        line = _command(fixture, "hl-smi -Q")
        rows = (fixture.host.commands[line].stdout or "").splitlines()
        rows[2] = rows[2].replace("131072 MiB", "abc MiB", 1)
        return {"commands": {line: {"stdout": "\n".join(rows) + "\n"}}}
    return {"files": {"/sys/kernel/iommu_groups/3/devices/0000:00:07.0/device": "0xzz\n"}}  # tpu


@pytest.mark.parametrize(("ref", "kept", "field", "value"), [
    ("nvidia/dgx-h100", 8, "memory.total", "'abc'"),
    ("amd/mi355x-8", 7, "memory_mib", "-1"),  # a record refuses it: that GPU alone is left out
    ("neuron/trn1.32xlarge", 16, "memory_size", "'abc'"),
    ("gaudi/hls-gaudi3", 8, "memory.total", "'abc MiB'"),
    ("tpu/v5e-8", 8, "PCI device id", "'0xzz'"),
])
def test_each_reference_plugin_keeps_the_other_devices_beside_one_malformed_value(
        manager: PluginManager, ref: str, kept: int, field: str, value: str) -> None:
    """Issue 28's show: in each reference plugin, one device's malformed vendor value costs at most that device,
    with one problem naming the field and the value."""
    plugin = ref.split("/")[0]
    inventory = _faulted(manager, ref, _one_value_patch(fixture_of(manager, ref), plugin))
    family = inventory.family(plugin)
    assert family is not None and len(family.devices) == kept
    (problem,) = [p for p in inventory.problems if p.hook == "rayaccel_discover"]
    assert field in problem.message and value in problem.message and "\n" not in problem.message


#: The driver's own witnesses of 8 GPUs: NVIDIA's device nodes; AMD's render nodes of vendor 0x1002 (and the
#: BMC's ASPEED GPU, which is none of AMD's).
NVIDIA_NODES = {f"/dev/nvidia{i}": "" for i in range(8)} | {"/dev/nvidiactl": "", "/dev/nvidia-uvm": ""}
AMD_RENDER_NODES = {f"/sys/class/drm/renderD{128 + i}/device/vendor": "0x1002\n" for i in range(8)} | {
    "/sys/class/drm/renderD136/device/vendor": "0x1a03\n"}
NO_GPU_CASES = [
    ("nvidia/dgx-h100", "nvml", NVIDIA_NODES, {"devices": {str(i): None for i in range(8)}},
     "NVML enumerates no GPU", "8 GPU device nodes (/dev/nvidia0, /dev/nvidia1"),  # a driver/library mismatch
    ("nvidia/dgx-h100", "nvml", NVIDIA_NODES, None,  # a container given the devices only
     "NVML (libnvidia-ml with nvidia-ml-py) is not available", "8 GPU device nodes (/dev/nvidia0"),
    ("amd/mi355x-8", "amdsmi", AMD_RENDER_NODES, {"gpus": {str(i): None for i in range(8)}},
     "amdsmi reports no GPU", "8 AMD GPU render nodes (/dev/dri/renderD128"),
    ("amd/mi355x-8", "amdsmi", AMD_RENDER_NODES, None,
     "neither the amdsmi Python package nor the amd-smi command is available", "8 AMD GPU render nodes"),
]


@pytest.mark.parametrize(("ref", "library", "nodes", "answer", "why", "named"), NO_GPU_CASES)
def test_no_gpu_from_the_library_while_the_driver_shows_eight_is_a_problem(
        manager: PluginManager, ref: str, library: str, nodes: dict[str, str], answer: Any, why: str,
        named: str) -> None:
    plugin = ref.split("/")[0]
    inventory = _faulted(manager, ref, {"files": nodes, "libraries": {library: answer}})
    assert inventory.family(plugin) is None
    (problem,) = [p for p in inventory.problems if p.code == "gpus-not-enumerated"]
    assert problem.message.startswith(why) and named in problem.message
    # Without the driver's nodes, no library is simply no such GPU here: nothing to say.
    quiet = _faulted(manager, ref, {"libraries": {library: None}})
    assert not [p for p in quiet.problems if p.plugin == plugin and p.severity != "info"]


def test_a_negative_tpu_worker_number_is_named_and_the_chips_still_reported(manager: PluginManager) -> None:
    url = "http://metadata.google.internal/computeMetadata/v1/instance/attributes/agent-worker-number"
    inventory = _faulted(manager, "tpu/v5e-8", {"http": {url: {"body": "-1"}}})
    family = inventory.family("tpu")
    assert family is not None and len(family.devices) == 8
    assert "ray.io/tpu-worker-id" not in inventory.labels  # not passed on as -1
    assert any("agent-worker-number is '-1'" in p.message for p in inventory.problems)


def test_hl_smi_cut_to_half_its_lines_is_a_problem_naming_both_counts(manager: PluginManager) -> None:
    fixture = fixture_of(manager, "gaudi/hls-gaudi3")
    query = _command(fixture, "-Q")
    half = "".join(fixture.host.commands[query].stdout.splitlines(keepends=True)[:4])
    inventory = _faulted(manager, "gaudi/hls-gaudi3", {"commands": {query: {"stdout": half}}})
    (problem,) = [p for p in inventory.problems if p.code == "hl-smi-disagrees"]
    assert "reported 4 devices" in problem.message and "shows 8" in problem.message


def test_empty_neuron_ls_output_while_sysfs_shows_devices_is_a_problem(manager: PluginManager) -> None:
    fixture = fixture_of(manager, "neuron/trn1.32xlarge")
    commands = {line: {"stdout": "", "returncode": 0} for line in fixture.host.commands if "neuron-ls" in line}
    inventory = _faulted(manager, "neuron/trn1.32xlarge", {"commands": commands})
    assert any(p.code == "neuron-ls-disagrees" and "16" in p.message for p in inventory.problems)


def test_a_billion_neuron_cores_are_refused_before_any_is_built(manager: PluginManager) -> None:
    fixture = fixture_of(manager, "neuron/trn1.32xlarge")
    line = next(line for line, answer in fixture.host.commands.items() if answer.stdout.strip().startswith("["))
    entries = json.loads(fixture.host.commands[line].stdout)
    entries[1]["nc_count"] = 10**9
    started = time.monotonic()
    inventory = _faulted(manager, "neuron/trn1.32xlarge", {"commands": {line: {"stdout": json.dumps(entries)}}})
    assert time.monotonic() - started < BOUND
    family = inventory.family("neuron")
    assert family is not None and len(family.devices) == len(entries) - 1  # the other devices are kept
    assert any("nc_count is 1000000000" in p.message for p in inventory.problems)
