"""The plugin under test, its fixtures as hosts, its inventory on them and the differences from what they expect.

What a plugin's tests do again and again, as the SDK does it (the CLI, a Ray node and the conformance suite build
and compare through the same functions), so a vendor's suite stands on this module's promise (docs/testing.md)
instead of on the SDK's internals.
"""

from __future__ import annotations

import functools
import tomllib
from collections.abc import Iterable, Sequence
from importlib import metadata
from pathlib import Path
from types import ModuleType
from typing import Any, TypeVar

from rayaccel import hookspec
from rayaccel.errors import PluginError
from rayaccel.hosts.expectations import expectation_differences, reported_problem_codes
from rayaccel.hosts.fixtures import FIXTURE_SUFFIXES, Fixture, load_fixture, parse_fixture
from rayaccel.hosts.seam import Host
from rayaccel.hosts.simulated import SimulatedHost
from rayaccel.inventory.builder import collect_inventory
from rayaccel.plugins.manager import PluginManager
from rayaccel.records import STANDARD_METRICS, CloudHint, NodeInventory, Problem

AnswerT = TypeVar("AnswerT")

#: The entry-point group a plugin registers in (its pyproject's ``[project.entry-points.rayaccel]``).
ENTRY_POINT_GROUP = "rayaccel"


def plugin_manager(plugin: object, name: str, *, distribution: str | None = None) -> PluginManager:
    """A plugin manager holding ``plugin`` alone, registered as ``name``: no entry point, no ``RAYACCEL_PLUGINS``,
    so another installed plugin never answers in its place. A plugin the SDK refuses raises
    :class:`~rayaccel.PluginError` with every problem the manager found (a missing hook, an invalid family, ...)."""
    manager = PluginManager(load=False)
    if not manager.register(plugin, name, distribution=distribution):
        raise PluginError(f"plugin {name!r} is refused: " + "; ".join(p.render() for p in manager.problems))
    return manager


def project_entry_points(path: Path) -> tuple[Path, dict[str, str], str | None] | None:
    """The nearest ``pyproject.toml`` above ``path``: the file, its ``[project.entry-points.rayaccel]`` table (name
    -> module) and its project name; None when there is none."""
    for folder in path.parents:
        pyproject = folder / "pyproject.toml"
        if pyproject.is_file():
            project = tomllib.loads(pyproject.read_text(encoding="utf-8")).get("project", {})
            return pyproject, dict(project.get("entry-points", {}).get(ENTRY_POINT_GROUP, {})), project.get("name")
    return None


def entry_point_of(plugin: ModuleType) -> tuple[str, str | None]:
    """The name and distribution a module is installed under (its ``rayaccel`` entry point), or, not installed,
    declared under in the ``pyproject.toml`` of the project it is part of."""
    for entry_point in metadata.entry_points(group=ENTRY_POINT_GROUP):
        if entry_point.module == plugin.__name__:
            return entry_point.name, entry_point.dist.name if entry_point.dist else None
    declared = project_entry_points(Path(plugin.__file__ or ".").resolve())
    if declared is not None:
        names = [name for name, target in declared[1].items() if target.partition(":")[0] == plugin.__name__]
        if len(names) == 1:
            return names[0], declared[2]
    raise PluginError(f"{plugin.__name__} is not installed as a rayaccel plugin (no entry point in the "
                      f"{ENTRY_POINT_GROUP!r} group names it, nor its project's pyproject.toml): install the project "
                      "(pip install -e .), or name the plugin: plugin_kit(plugin, name=...)")


def fixture_host(fixture: Fixture | str | Path, faults: Iterable[str] = (), *,
                 fault_file: str | Path | None = None) -> SimulatedHost:
    """The machine a fixture (a :class:`~rayaccel.testing.Fixture`, or its file) records, as a
    :class:`~rayaccel.Host`, with ``faults`` on from the start; with a ``fault_file`` the faults named in that file
    (one a line) are on as well, each time the plugin asks: write and empty it to switch faults while the host is
    in use."""
    if not isinstance(fixture, Fixture):
        fixture = load_fixture(fixture)
    return SimulatedHost(fixture, faults=list(faults), fault_file=None if fault_file is None else str(fault_file))


def build_inventory(manager: PluginManager, host: Host, *, plugins: Sequence[str] | None = None,
                    with_metrics: bool = True, isolated: bool = False) -> NodeInventory:
    """The node inventory the SDK builds from ``manager``'s plugins (or those named) on ``host``: in this process
    (each hook in a thread, bounded), or with ``isolated`` in a worker process per plugin, as a node runs them."""
    if isolated:
        from rayaccel.isolation.pool import isolated_inventory

        return isolated_inventory(manager, host, plugins=plugins, with_metrics=with_metrics)
    return collect_inventory(manager, host, plugins=plugins, with_metrics=with_metrics)


def fixture_differences(inventory: NodeInventory, fixture: Fixture) -> list[str]:
    """How an inventory of ``fixture``'s healthy host differs from what the fixture expects, one sentence each
    (empty: it agrees). Every device is stated (unlisted ones must be healthy), and the build reports exactly the
    problems the fixture expects (``expected.problems``, info included): the differ ``rayaccel sku add`` and the
    conformance suite use, and stricter about info."""
    diffs = expectation_differences(inventory, fixture.plugin, fixture.expected)
    unexpected = sorted(_all_codes(inventory, fixture.plugin) - set(fixture.expected.problems))
    return diffs + [f"problem {code} (info) on a healthy build, which the fixture does not expect (expected.problems)"
                    for code in unexpected if code not in reported_problem_codes(inventory, fixture.plugin)]


def fault_differences(inventory: NodeInventory, fixture: Fixture, fault: str) -> list[str]:
    """How an inventory of ``fixture``'s host under ``fault`` differs from what the fault expects: what it states
    (device count, resources, health, reasons, fatality, problem codes), and besides, every device it does not
    name is healthy, every device it names is reported, and the plugin reports no problem the fault does not
    expect (``expected.problem_codes``: errors, warnings and info)."""
    expected = fixture.fault(fault).expected
    diffs = expectation_differences(inventory, fixture.plugin, expected)
    family = next((f for f in inventory.families if f.plugin == fixture.plugin), None)
    states = {h.device: h.state for h in family.health} if family else {}
    diffs += [f"health of {device}: expected healthy (the fault names it not), got {state}"
              for device, state in states.items() if device not in expected.health and state != "healthy"]
    diffs += [f"health of {device}: the fault expects {state}, the device is not reported"
              for device, state in expected.health.items() if device not in states]
    unexpected = sorted(_all_codes(inventory, fixture.plugin) - set(expected.problem_codes))
    if unexpected:
        diffs.append(f"problems: {unexpected} reported, which the fault does not expect (expected.problem_codes)")
    return diffs


def metric_differences(inventory: NodeInventory, fixture: Fixture, fault: str | None = None) -> list[str]:
    """How the metrics of an inventory built with metrics differ from the values the fixture says its machine
    reads (``expected.metric_values``, or the fault's under ``fault``), one sentence each (empty: they agree or
    none are stated). Each stated value is due within 1%, in the metric's standard unit; a rate
    (``bytes_per_second``) needs two polls, so one build does not give it and it is not compared here."""
    stated = fixture.fault(fault).expected.metric_values if fault else fixture.expected.metric_values
    family = inventory.family(fixture.plugin)
    got = {(s.device, s.name): s for s in family.metrics} if family else {}
    where = f"expected.metric_values of fault {fault}" if fault else "expected.metric_values"
    diffs = []
    for device, values in stated.items():
        for name, want in values.items():
            if STANDARD_METRICS.get(name) == "bytes_per_second":
                continue
            sample = got.get((device, name))
            if sample is None:
                diffs.append(f"metric {name} of {device}: no sample, where the fixture's machine reads {want:g} "
                             f"({where})")
            elif abs(sample.value - want) > 0.01 * abs(want):
                diffs.append(f"metric {name} of {device}: {sample.value:g} {sample.unit}, where the fixture's machine "
                             f"reads {want:g} ({where}; within 1%)")
    return diffs


def _all_codes(inventory: NodeInventory, plugin: str) -> set[str]:
    """The codes of every problem ``plugin`` has in an inventory, info included."""
    return {p.code for p in inventory.problems if p.plugin == plugin}


def without_hardware(fixture: Fixture) -> Fixture:
    """``fixture`` on a machine without the vendor's hardware, driver or tools: its host answers nothing."""
    data = fixture.model_dump(mode="json", by_alias=True)
    data["host"] = {"hostname": "no-hardware"}
    return parse_fixture(data, f"{fixture.ref} without its hardware")


class PluginKit:
    """One plugin under test: its manager (the plugin alone), its fixtures (loaded once), hosts and inventories.

    ``plugin``: the plugin's module; ``name`` and ``distribution``: as it is installed (default: read from its
    ``rayaccel`` entry point); ``fixture_dirs``: where its fixtures are (default: the directories its
    ``rayaccel_fixture_dirs`` hook names). :func:`plugin_kit` hands out one kit per plugin, so every test shares the
    parsed fixtures.
    """

    def __init__(self, plugin: ModuleType, name: str | None = None, *, distribution: str | None = None,
                 fixture_dirs: Sequence[str | Path] | None = None) -> None:
        if name is None:
            name, found = entry_point_of(plugin)
            distribution = distribution or found
        self.plugin = plugin
        self.name = name
        self.distribution = distribution
        self._fixture_dirs = None if fixture_dirs is None else [Path(d) for d in fixture_dirs]
        self._fixtures: dict[str, Fixture] = {}

    @functools.cached_property
    def manager(self) -> PluginManager:
        """A plugin manager holding just this plugin (:func:`plugin_manager`)."""
        return plugin_manager(self.plugin, self.name, distribution=self.distribution)

    @functools.cached_property
    def fixture_paths(self) -> dict[str, Path]:
        """Fixture name -> file, sorted by name."""
        dirs = self._fixture_dirs if self._fixture_dirs is not None else map(Path, self.manager.fixture_dirs(self.name))
        found = {p.stem: p for d in dirs for p in d.glob("*") if p.suffix in FIXTURE_SUFFIXES}
        return dict(sorted(found.items()))

    def fixture(self, name: str) -> Fixture:
        """The fixture of that name, parsed once (fixtures are immutable: copy with ``model_dump`` to vary one)."""
        if name not in self._fixtures:
            if name not in self.fixture_paths:
                raise KeyError(f"plugin {self.name} has no fixture {name!r}; it has: {', '.join(self.fixture_paths)}")
            self._fixtures[name] = load_fixture(self.fixture_paths[name])
        return self._fixtures[name]

    @property
    def fixtures(self) -> dict[str, Fixture]:
        """Every fixture of the plugin by name."""
        return {name: self.fixture(name) for name in self.fixture_paths}

    def fault_cases(self) -> list[tuple[str, str]]:
        """Every (fixture name, fault name) the fixtures declare."""
        return [(name, fault.name) for name, fixture in self.fixtures.items() for fault in fixture.faults]

    def host(self, fixture: Fixture | str, faults: Iterable[str] = (), *,
             fault_file: str | Path | None = None) -> SimulatedHost:
        """A fixture (or the name of one of the plugin's) as a host (:func:`fixture_host`)."""
        return fixture_host(self.fixture(fixture) if isinstance(fixture, str) else fixture, faults,
                            fault_file=fault_file)

    def inventory(self, on: Host | Fixture | str, faults: Iterable[str] = (), *, isolated: bool = False,
                  with_metrics: bool = True) -> NodeInventory:
        """The plugin's node inventory on a host, a fixture or one of its fixtures by name, with ``faults``
        (:func:`build_inventory`)."""
        host = on if isinstance(on, Host) else self.host(on, faults)
        return build_inventory(self.manager, host, plugins=[self.name], with_metrics=with_metrics, isolated=isolated)

    def cloud_hint(self, provider: str, instance_type: str) -> CloudHint | None:
        """What the plugin answers ``rayaccel_cloud_hints`` for one instance type (through the SDK: from its
        ``instance-types.yaml`` when it ships one and implements no such hook). Raises :class:`PluginError` where
        the hook raised or its answer was refused, not the None the SDK contains that as."""
        return self._read(hookspec.CLOUD_HINTS, provider=provider, instance_type=instance_type)

    def cloud_instance_types(self) -> list[CloudHint]:
        """What the plugin answers ``rayaccel_cloud_instance_types``: every instance type it has a hint for.
        Raises :class:`PluginError` where the hook raised or a record was refused: ``rayaccel export`` would write
        no node type from what it cannot read, and the SDK's containment answers no listing instead."""
        return self._read(hookspec.CLOUD_INSTANCE_TYPES)

    def _read(self, hook: hookspec.Hook[AnswerT], **kwargs: Any) -> AnswerT:
        """The hook's answer through the SDK; an error the SDK reports calling it (the hook raised, an answer or
        record refused) is raised, so a plugin's own test sees it."""
        said: list[Problem] = []
        answer = self.manager.answer(self.name, hook, said, **kwargs)
        errors = [p for p in said if p.severity == "error"]
        if errors:
            raise PluginError(f"{hook.name} could not be read: " + "; ".join(p.render() for p in errors))
        return answer

    def data(self, name: str) -> dict[str, Any]:
        """A fixture's document (JSON data) to vary: parse the result with :func:`~rayaccel.testing.parse_fixture`."""
        return self.fixture(name).model_dump(mode="json", by_alias=True)


def plugin_kit(plugin: ModuleType, name: str | None = None, *, distribution: str | None = None) -> PluginKit:
    """The kit of a plugin module, made once per process (its fixtures are parsed once for every test); the name
    and distribution it is installed under unless given (a plugin not installed needs its ``name``)."""
    try:
        installed, found = entry_point_of(plugin)
    except PluginError:
        if name is None:
            raise
        installed, found = name, None
    return _kit(plugin, name or installed, distribution or (found if (name or installed) == installed else None))


@functools.cache
def _kit(plugin: ModuleType, name: str, distribution: str | None) -> PluginKit:
    return PluginKit(plugin, name, distribution=distribution)
