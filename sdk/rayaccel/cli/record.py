"""``rayaccel record`` (a machine into a fixture, or a fault state onto one) and ``rayaccel fixture expect``.

Both run the plugins as ``rayaccel inspect`` does, each in a worker process of its own that this process never
imports it into (:meth:`WorkerPool.load`): a recording is made by each plugin's worker of what that plugin read,
and the recordings are merged here (:meth:`WorkerPool.record`); the replay runs in the same workers.
"""

from __future__ import annotations

import difflib
import json
import re
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from rayaccel.cli import app, console, output_path
from rayaccel.cli.inventory import InProcessOption, PluginsOption, SimulateOption, build_host, plugin_workers
from rayaccel.errors import FixtureError
from rayaccel.files import reading
from rayaccel.files.atomic import write_atomically
from rayaccel.files.yaml_edit import with_key
from rayaccel.hosts.anonymize import Anonymizer, anonymize_key, sensitive_names
from rayaccel.hosts.call_log import RecordingError
from rayaccel.hosts.fixtures import (
    FIXTURE_SCHEMA_ID,
    FIXTURE_SUFFIXES,
    fixture_name_problem,
    fixture_text,
    installed_fixtures,
    parse_fixture,
)
from rayaccel.hosts.recorded_fixture import (
    expected_from_inventory,
    fault_expectation,
    first_difference,
    inventory_view,
    merge_diff,
    shape_view,
    source_line,
    updated_expectation,
    validate_fixture_data,
)
from rayaccel.isolation.pool import WorkerPool
from rayaccel.plugins.manager import PluginManager
from rayaccel.records import NodeInventory
from rayaccel.simulation.host_factory import simulated_host

FAULT_KINDS = ("device-lost", "fatal-error", "ecc", "tool-hang", "tool-garbage", "degraded", "other")

fixture_app = typer.Typer(name="fixture", help="Maintain a fixture: recompute its expectation.",
                          no_args_is_help=True)
app.add_typer(fixture_app)


def _record(pool: WorkerPool, simulate: str | None, simulate_faults: list[str] | None,
            plugins: list[str] | None, anonymize: bool, key_file: Path | None
            ) -> tuple[dict[str, Any], NodeInventory, Anonymizer | None]:
    """Run the full inventory, each plugin recording what it reads; the host state (anonymised if asked)."""
    for name in plugins or []:
        pool.manager.plugin(name)  # a clear error for an unknown name
    inventory, state = pool.record(build_host(pool.manager, simulate, simulate_faults), plugins or None)
    anonymizer = None
    if anonymize:
        anonymizer = Anonymizer(anonymize_key(key_file), sensitive_names(inventory, state))
        state = anonymizer.data(state)
    return state, inventory, anonymizer


def _replayed(pool: WorkerPool, data: dict[str, Any], recorded: NodeInventory, plugins: list[str] | None,
              anonymized: bool, faults: list[str] | None = None) -> NodeInventory:
    """The inventory of the fixture as written; it must be the one recorded (for an anonymised recording: the
    same structure), or the recording is refused, naming the first difference."""
    validate_fixture_data(data, str(data.get("name")))
    fixture = parse_fixture(json.loads(json.dumps(data)), str(data.get("name")))
    replay = pool.build(simulated_host(fixture, faults=faults or []), plugins=plugins or None)
    view = shape_view if anonymized else inventory_view
    difference = first_difference(view(recorded), view(replay))
    if difference:
        raise RecordingError(f"the recording does not replay as recorded ({difference}): a plugin read something "
                             "the recording host did not see; report it with this line")
    return replay


def _fixture_plugin(inventory: NodeInventory, plugins: list[str] | None) -> str:
    if plugins and len(plugins) == 1:
        return plugins[0]
    found = [f.plugin for f in inventory.families if f.devices]
    if len(found) > 1:
        raise FixtureError(f"this machine has devices of several plugins ({', '.join(found)}); a fixture is one "
                           "plugin's: record one at a time with --plugin NAME")
    if found:
        return found[0]
    return plugins[0] if plugins else "none"


def _plugin_versions(manager: PluginManager, names: list[str]) -> dict[str, str | None]:
    return {name: manager.plugin(name).version for name in names}


def _check_output(output: Path) -> None:
    if output.suffix not in FIXTURE_SUFFIXES:
        raise FixtureError(f"{output}: a fixture file ends in {', '.join(FIXTURE_SUFFIXES)}; choose such a name")
    problem = fixture_name_problem(output.stem)
    if problem:
        raise FixtureError(f"{output}: the file's stem is the fixture's name; {problem}")
    if not output.parent.is_dir():
        raise FixtureError(f"{output}: the directory {output.parent} does not exist; create it first")


@app.command()
def record(
    plugin: PluginsOption = None,
    output: Annotated[Path | None, typer.Option(
        "--output", "-o", parser=output_path,
        help="Fixture file to write (.yaml or .json); its stem is the fixture's name. Default: print it")] = None,
    anonymize: Annotated[bool, typer.Option(
        help="Replace serials, UUIDs, MACs, hostnames and IPs consistently (tokens keyed by the secret in "
             "~/.config/rayaccel/anonymize.key, created on first use)")] = False,
    fault: Annotated[str | None, typer.Option(help="Record this machine's current state as fault NAME "
                                              "onto the fixture given by --into")] = None,
    into: Annotated[str | None, typer.Option(
        metavar="FIXTURE", help="Fixture file (or plugin/name) --fault adds to")] = None,
    kind: Annotated[str, typer.Option(help=f"The fault's kind: {', '.join(FAULT_KINDS)}")] = "other",
    description: Annotated[str | None, typer.Option(help="One line: the machine, or what the fault is")] = None,
    simulate: SimulateOption = None,
    simulate_fault: Annotated[list[str] | None, typer.Option(
        help="With --simulate: record the fixture with this fault active (repeatable)")] = None,
    in_process: InProcessOption = False,
) -> None:
    """Record this machine's answers into a fixture (or, with --fault, a fault state onto one)."""
    if kind not in FAULT_KINDS:
        raise FixtureError(f"--kind {kind[:40]!r} is not a fault kind; use one of {', '.join(FAULT_KINDS)}")
    if description is not None and (not description.strip() or len(description) > 200 or "\n" in description):
        raise FixtureError("--description is one line of at most 200 characters")
    if (fault is None) != (into is None):
        raise FixtureError("--fault NAME and --into FIXTURE go together")
    if output is not None and fault is None:
        _check_output(output)
    with plugin_workers(in_process=in_process) as pool:  # every plugin in a worker of its own (recording, replay)
        if fault is not None and into is not None:
            _record_fault(pool, fault, into, kind, description, plugin, anonymize, None, simulate, simulate_fault)
            return
        _record_fixture(pool, output, description, plugin, anonymize, simulate, simulate_fault)


def _record_fixture(pool: WorkerPool, output: Path | None, description: str | None, plugin: list[str] | None,
                    anonymize: bool, simulate: str | None, simulate_fault: list[str] | None) -> None:
    manager = pool.manager
    state, inventory, anonymizer = _record(pool, simulate, simulate_fault, plugin, anonymize, None)
    fixture_plugin = _fixture_plugin(inventory, plugin)
    family = inventory.family(fixture_plugin) if fixture_plugin != "none" else None
    devices = family.devices if family else []
    name = output.stem if output is not None else f"{fixture_plugin}-recorded"
    product = (devices[0].product_name or devices[0].sku or "devices") if devices else None
    summary = f"{len(devices)}x {product}" if devices else "no accelerators"
    used = [f.plugin for f in inventory.families] or (plugin or manager.plugin_names())
    source = source_line(inventory, _plugin_versions(manager, list(used)), state.get("hostname") or "",
                         inventory.simulated)
    data: dict[str, Any] = {
        "schema": FIXTURE_SCHEMA_ID, "plugin": fixture_plugin, "name": name,
        "description": description or f"{summary}, recorded by rayaccel record",
        "source": anonymizer.text(source) if anonymizer else source, "host": state, "expected": {"devices": 0},
        "faults": [],
    }
    # `expected` is what the fixture as written gives, which is what this run gave (checked)
    replay = _replayed(pool, data, inventory, plugin, anonymizer is not None)
    data["expected"] = expected_from_inventory(replay, fixture_plugin)
    validate_fixture_data(data, str(output or name))
    if output is None:
        sys.stdout.write(fixture_text(data, ".yaml"))
        return
    write_atomically(output, fixture_text(data, output.suffix))
    console.print(f"wrote {output}: {summary}, plugin {fixture_plugin}, {len(state.get('files', {}))} files, "
                  f"{len(state.get('commands', {}))} commands, {len(state.get('libraries', {}))} libraries")


def _fixture_file(ref_or_path: str, manager: PluginManager) -> Path:
    path = Path(ref_or_path)
    if path.suffix in FIXTURE_SUFFIXES:
        return path
    known = installed_fixtures(manager)
    if ref_or_path in known:
        return known[ref_or_path]
    raise FixtureError(f"unknown fixture {ref_or_path!r}: give a fixture file path or plugin/name "
                       "(run 'rayaccel fixtures' to list them)")


def _record_fault(pool: WorkerPool, name: str, into: str, kind: str, description: str | None,
                  plugins: list[str] | None, anonymize: bool, key_file: Path | None, simulate: str | None,
                  simulate_faults: list[str] | None) -> None:
    if not re.fullmatch(r"[a-z0-9][a-z0-9-]*", name):
        raise FixtureError(f"--fault {name[:40]!r}: a fault name is lower-case letters, digits and '-' "
                           "(e.g. gpu3-lost)")
    path = _fixture_file(into, pool.manager)
    data = reading.load(path, "fixture", FixtureError)
    fixture = parse_fixture(data, str(path))
    if any(f.name == name for f in fixture.faults):
        raise FixtureError(f"{path}: declares a fault {name!r} already; choose another name")
    plugins = plugins or [fixture.plugin]
    state, inventory, anonymizer = _record(pool, simulate, simulate_faults, plugins, anonymize, key_file)
    patch = merge_diff(data["host"], state)
    if not patch:
        raise FixtureError(f"the machine answers exactly as {path} records: nothing to record as fault {name!r} "
                           "(put the machine into the fault state first)")
    fault = {"name": name, "description": description or f"recorded by rayaccel record from {state.get('hostname')}",
             "kind": kind, "patch": patch, "expected": {}}
    data["faults"] = [*data.get("faults", []), fault]
    replay = _replayed(pool, data, inventory, plugins, anonymizer is not None, faults=[name])
    fault["expected"] = fault_expectation(replay, fixture.plugin)
    validate_fixture_data(data, str(path))
    write_atomically(path, fixture_text(data, path.suffix))
    console.print(f"added fault {name} to {path}: patch over {', '.join(sorted(patch))}")


@fixture_app.command("expect")
def fixture_expect(
    fixture_ref: Annotated[str, typer.Argument(metavar="FIXTURE", help="Fixture file or plugin/name")],
    write: Annotated[bool, typer.Option(help="Write the new expectation into the file (atomically)")] = False,
    in_process: InProcessOption = False,
) -> None:
    """Recompute a fixture's `expected` from the current plugins and show the difference."""
    with plugin_workers(in_process=in_process) as pool:  # the fixture's plugin in a worker of its own, as a node
        path = _fixture_file(fixture_ref, pool.manager)
        data = reading.load(path, "fixture", FixtureError)
        fixture = parse_fixture(data, str(path))
        if fixture.plugin not in pool.manager.plugin_names():
            raise FixtureError(f"{path}: plugin {fixture.plugin!r} is not installed; install it to recompute "
                               "the expectation")
        inventory = pool.build(simulated_host(fixture), plugins=[fixture.plugin])
    old = data.get("expected", {})
    new = updated_expectation(old, inventory, fixture.plugin)
    before = json.dumps(old, indent=2, sort_keys=True).splitlines()
    after = json.dumps(new, indent=2, sort_keys=True).splitlines()
    diff = list(difflib.unified_diff(before, after, f"{path} expected", "current plugins", lineterm=""))
    if not diff:
        console.print(f"{path}: expected is current")
        return
    for line in diff:
        console.print(line)
    if not write:
        console.print("not written; rerun with --write to update the file")
        return
    data["expected"] = new
    validate_fixture_data(data, str(path))
    text = path.read_text(encoding="utf-8")
    write_atomically(path, fixture_text(data, path.suffix) if path.suffix == ".json"
                     else with_key(text, "expected", new))
    console.print(f"wrote {path}")
