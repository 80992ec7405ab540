"""The plugin under test: its manager, its fixtures and the inventories built from them.

One :class:`Subject` per plugin per run. Inventories are built once per fixture and shared by the checks
that read them; checks that need a fresh build (faults, timing, recovery) build their own.
"""

from __future__ import annotations

import time
import types
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from rayaccel.errors import DeclarationError, RayaccelError
from rayaccel.hosts.fixtures import FIXTURE_SUFFIXES, Fixture, load_fixture
from rayaccel.hosts.seam import Host
from rayaccel.inventory.builder import InventoryBuilder
from rayaccel.onboarding.fleet import FleetDevice
from rayaccel.plugins.manager import PluginManager
from rayaccel.records import Device, FamilyDeclaration, NodeInventory, Problem
from rayaccel.schemas import describe_validation_error, first_difference, value_at
from rayaccel.simulation.host_factory import simulated_host
from rayaccel_conformance.registry import Check, CheckFailed, CheckSkipped

Hardware = Literal["simulated", "real"]

#: The hook that returns each part of a family's inventory, by its field name.
_HOOK_OF_PART = {"devices": "rayaccel_discover", "topology": "rayaccel_topology", "health": "rayaccel_health",
                 "metrics": "rayaccel_metrics", "labels": "rayaccel_labels", "resources": "rayaccel_resources"}


def unvalidated_record(inventory: NodeInventory) -> str | None:
    """The first record of ``inventory`` that its own model refuses, in a sentence naming the hook that returned it;
    None when every record is valid. A record a plugin built without validation (``Device.model_construct``)
    passes the SDK's checks of the hook's answer (pydantic does not revalidate an instance of the right class),
    and then breaks whatever reads it (a report writer dividing a ``str`` memory size)."""
    import warnings

    from pydantic import ValidationError

    with warnings.catch_warnings():  # dumping a wrongly typed field warns; validating it says what is wrong
        warnings.simplefilter("ignore")
        dumped = inventory.model_dump(by_alias=True)
        try:
            valid = NodeInventory.model_validate(dumped).model_dump(by_alias=True)
        except ValidationError as e:
            return _unvalidated(e.errors()[0]["loc"], describe_validation_error(e, with_input=True))
    # Lax validation turns the str '65536' into the int 65536: a value its own model changes was never validated.
    where = first_difference(dumped, valid)
    if where is None:
        return None
    return _unvalidated(where, f"{'.'.join(map(str, where))} is {value_at(dumped, where)!r} "
                               f"({type(value_at(dumped, where)).__name__}), not {value_at(valid, where)!r}")


def _unvalidated(loc: tuple[int | str, ...], what: str) -> str:
    hook = _HOOK_OF_PART.get(str(loc[2]), "a hook") if len(loc) > 2 and loc[0] == "families" else "a hook"
    return (f"{hook} returned a record built without validation (model_construct?), which its own model refuses: "
            f"{what}; build records with their constructors, which validate")


@dataclass
class Outcome:
    """What one check concluded for one plugin (and fixture)."""

    check_id: str
    fixture: str | None
    outcome: Literal["passed", "failed", "skipped", "error"]
    evidence: list[str]
    duration_s: float
    #: What ended the check (CheckFailed, CheckSkipped, or the exception of an error); None when it passed.
    exception: BaseException | None = field(default=None, repr=False, compare=False)


@dataclass
class Subject:
    name: str
    manager: PluginManager
    hardware: Hardware = "simulated"
    only_fixtures: list[str] = field(default_factory=list)
    outcomes: list[Outcome] = field(default_factory=list)

    def __post_init__(self) -> None:
        from rayaccel_conformance.harness.guard import watch_manager

        watch_manager(self.manager)  # every hook the checks call is watched for side effects
        self._fixtures: dict[str, Fixture] = {}
        self._shipped: dict[str, Path] | None = None
        self._inventories: dict[str, NodeInventory] = {}
        #: (fixture, fault) -> the inventory built with the fault on, and how long it took (RAC203 -> RAC204).
        self.fault_runs: dict[tuple[str, str], tuple[NodeInventory, float]] = {}
        #: The plugin's fleet (RAC230), under the plugin and the path and bytes of each fixture it ships.
        self.fleets: dict[tuple[object, ...], list[FleetDevice]] = {}

    # The plugin ------------------------------------------------------------------------------

    @property
    def loaded(self) -> bool:
        return self.name in self.manager.plugin_names()

    def load_problems(self) -> list[Problem]:
        return [p for p in self.manager.problems if p.plugin == self.name and p.severity != "info"]

    def family(self) -> FamilyDeclaration:
        if not self.loaded:
            raise CheckSkipped(f"plugin {self.name} did not load (see RAC101-RAC104)")
        return self.manager.family(self.name)

    @property
    def distribution(self) -> str | None:
        return self.manager.plugin(self.name).distribution if self.loaded else None

    @property
    def version(self) -> str | None:
        return self.manager.plugin(self.name).version if self.loaded else None

    @property
    def package(self) -> str:
        """The top-level package of the plugin's code (its module's, or the module of its class): what is the
        plugin's own, against another plugin's or Ray's."""
        loaded = self.manager.plugin(self.name).module
        return (loaded.__name__ if isinstance(loaded, types.ModuleType) else type(loaded).__module__).split(".")[0]

    # Fixtures --------------------------------------------------------------------------------

    def fixture_paths(self) -> dict[str, Path]:
        if not self.loaded:
            return {}
        if self._shipped is None:  # asked by every check: the plugin's fixture dirs are read once per run
            self._shipped = {f"{self.name}/{path.stem}": path for directory in self.manager.fixture_dirs(self.name)
                             for path in sorted(Path(directory).glob("*")) if path.suffix in FIXTURE_SUFFIXES}
        shipped = self._shipped
        if self.only_fixtures:
            return {ref: path for ref, path in shipped.items()
                    if ref in self.only_fixtures or ref.split("/", 1)[1] in self.only_fixtures}
        return shipped

    def why_no_fixtures(self) -> str:
        """What is wrong with the directories ``rayaccel_fixture_dirs`` returns, when they hold no fixture: none
        returned, one relative (found only from the directory the author ran in), missing, or empty."""
        if not self.loaded:
            return "the plugin did not load"
        dirs = self.manager.fixture_dirs(self.name)
        if not dirs:
            return "rayaccel_fixture_dirs returns no directory: return the one holding its fixtures"
        why = []
        for directory in dirs:
            path = Path(directory)
            if not path.is_absolute():
                why.append(f"rayaccel_fixture_dirs returns {directory!r}, a path relative to the working directory "
                           f"({Path.cwd()}), so it is found only when run from the plugin's own checkout: return an "
                           "absolute path, e.g. str(Path(__file__).parent / 'fixtures')")
            elif not path.is_dir():
                why.append(f"rayaccel_fixture_dirs returns {directory!r}, which does not exist (a directory not "
                           "installed with the package?)")
            else:
                why.append(f"{directory!r} holds no fixture file ({', '.join('*' + s for s in FIXTURE_SUFFIXES)})")
        return "; ".join(why)

    def fixture(self, ref: str | None) -> Fixture:
        if ref is None:
            raise CheckFailed(f"plugin {self.name} ships no fixtures: every tier needs at least one simulated host "
                              f"({self.why_no_fixtures()})")
        if ref not in self._fixtures:
            try:
                fixture = load_fixture(self.fixture_paths()[ref])
            except RayaccelError as e:
                raise CheckFailed(f"fixture {ref} does not load: {e}") from None
            if fixture.plugin != self.name:
                raise CheckFailed(f"fixture {ref} declares plugin {fixture.plugin!r}, not {self.name!r}")
            self._fixtures[ref] = fixture
        return self._fixtures[ref]

    # Inventories -----------------------------------------------------------------------------

    def build(self, host: Host, with_metrics: bool = True) -> NodeInventory:
        """This plugin's inventory of a host. An exception escaping the SDK is a defect: it fails the check."""
        try:
            inventory = InventoryBuilder(self.manager, [self.name]).build(host, with_metrics=with_metrics)
        except Exception as e:  # the SDK contains plugin errors; anything that escapes is reported, not raised
            raise CheckFailed(f"building the inventory raised {type(e).__name__}: {e}") from None
        return inventory

    def inventory(self, ref: str | None) -> NodeInventory:
        fixture = self.fixture(ref)
        assert ref is not None
        if ref not in self._inventories:
            inventory = self.build(simulated_host(fixture))
            unvalidated = unvalidated_record(inventory)  # once per fixture: a plugin builds its records one way
            if unvalidated:
                raise CheckFailed(f"{ref}: {unvalidated}")
            self._inventories[ref] = inventory
        return self._inventories[ref]

    def built(self, ref: str) -> bool:
        """Whether a check has built the fixture's inventory already (so asking for it runs no hook)."""
        return ref in self._inventories

    def timed_build(self, host: Host, with_metrics: bool = True) -> tuple[NodeInventory, float]:
        start = time.perf_counter()
        inventory = self.build(host, with_metrics)
        return inventory, time.perf_counter() - start

    def devices(self, inventory: NodeInventory) -> list[Device]:
        """This plugin's devices in an inventory (none when its family found nothing)."""
        family = inventory.family(self.family().name)
        return family.devices if family else []

    def plugin_problems(self, inventory: NodeInventory, hooks: tuple[str, ...] | None = None,
                        severities: tuple[str, ...] = ("error",)) -> list[Problem]:
        return [p for p in inventory.problems if p.plugin == self.name and p.severity in severities
                and (hooks is None or p.hook in hooks)]

    def discovery_failed(self, inventory: NodeInventory, declared: Sequence[str] = ()) -> list[Problem]:
        """The discovery errors and warnings of this build but those ``declared``: the codes the fixture's healthy
        build legitimately reports (``expected.problems``: a fallback its machine forces) or a fault's
        (``problem_codes``). A declared one is the state the build was asked under, not discovery failing."""
        return [p for p in self.plugin_problems(inventory, ("rayaccel_discover",), ("error", "warning"))
                if p.code not in declared]

    def consequence(self, inventory: NodeInventory, finding: str, upstream: str | None = "RAC105",
                    declared: Sequence[str] = ()) -> str:
        """``finding`` (no devices, no units) blamed on its cause: the discovery problem of this very build,
        quoted, when there is one (a discovery that raises on its second call passed RAC105 on its first),
        else the check upstream that owns the defect. A problem in ``declared`` (a fault's expected problem
        codes: the fallback the fault forces) is the condition the build was asked under, not a cause."""
        causes = [p.render().splitlines()[0] for p in self.plugin_problems(inventory, ("rayaccel_discover",),
                                                                            ("error", "warning"))
                  if p.code not in declared]
        if causes:
            return f"{finding}: a consequence of discovery failing in this build: {causes[0]}"
        return f"{finding} (see {upstream})" if upstream else finding

    def blamed(self, inventory: NodeInventory, differences: list[str], where: str,
               declared: Sequence[str] = ()) -> list[str]:
        """Differences an inventory shows, or, when discovery failed in that build, one line quoting why:
        the missing resources, health and links are its consequences, not defects of their own. A discovery
        problem in ``declared`` (a fault's expected problem codes) is a fallback the build was meant to take:
        its differences are the fallback's own, each named."""
        failed = [p for p in self.plugin_problems(inventory, ("rayaccel_discover",), ("error", "warning"))
                  if p.code not in declared]
        if differences and failed:
            return [self.consequence(inventory, f"{where}{len(differences)} differences ({differences[0]})", None,
                                     declared)]
        return [f"{where}{d}" for d in differences]

    # Running ---------------------------------------------------------------------------------

    def side_effects(self) -> list[str]:
        """Side effects of this plugin's hooks seen so far in the run (see rayaccel_conformance.harness.guard)."""
        from rayaccel_conformance.harness.guard import findings

        return findings(self.manager, self.name)

    def run(self, check: Check, fixture: str | None) -> Outcome:
        """Run one check and record its outcome (what ``pytest --conformance`` does for each item).

        A Ray check is skipped when a cheaper check of its tier or below has failed. A hook side effect first
        seen while the check ran fails the check, naming the hook and the defect, whatever the check was about.
        So does a declaration of the plugin's that the SDK refuses (:class:`~rayaccel.errors.DeclarationError`: a
        collective backend's or transport's class that does not import), wherever the check met it: it is the
        plugin's defect, never an ``error`` of the suite's.
        """
        from rayaccel_conformance.registry import tier_index

        start = time.perf_counter()
        seen = len(self.side_effects())
        outcome: Literal["passed", "failed", "skipped", "error"] = "passed"
        evidence: list[str] = []
        error: BaseException | None = None
        try:
            if check.uses_ray:
                # The same check on another fixture failing says nothing about this fixture: run it.
                failed = [i for i in self.failed_ids(tier_index(check.tier)) if i != check.id]
                if failed:
                    raise CheckSkipped(f"not run: {check.tier} cannot be reached ({', '.join(failed)} failed)")
            evidence = check.run(self, fixture)
            new = self.side_effects()[seen:]
            if new:
                raise CheckFailed([f"side effect: {f}" for f in new])
        except CheckFailed as e:
            new = [f"side effect: {f}" for f in self.side_effects()[seen:]]
            outcome, evidence, error = "failed", [*new, *(x for x in e.evidence if x not in new)], e
        except CheckSkipped as e:
            outcome, evidence, error = "skipped", [str(e)], e
        except DeclarationError as e:  # the SDK refusing what the plugin declares, wherever a check met it
            new = [f"side effect: {f}" for f in self.side_effects()[seen:]]
            outcome, evidence, error = "failed", [*new, f"the SDK refuses the plugin's declaration: {e}"], e
        except Exception as e:  # a bug in the check, or something it did not expect: reported, not raised
            outcome, evidence, error = "error", [f"the check raised {type(e).__name__}: {e}"], e
        result = Outcome(check.id, fixture, outcome, [str(x) for x in evidence], time.perf_counter() - start)
        result.exception = error
        self.outcomes.append(result)
        return result

    # Outcomes --------------------------------------------------------------------------------

    def failed_ids(self, up_to_tier: int | None = None) -> list[str]:
        from rayaccel_conformance.registry import CHECKS, tier_index

        return sorted({o.check_id for o in self.outcomes if o.outcome in ("failed", "error")
                       and (up_to_tier is None or tier_index(CHECKS[o.check_id].tier) <= up_to_tier)})
