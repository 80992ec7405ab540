"""Experimental tier (RAC1xx): the plugin loads, declares a sane family and discovers its fixtures right."""

from __future__ import annotations

from typing import Any

from rayaccel import hookspec
from rayaccel.fixtures import Fixture, HostState, compare_expected
from rayaccel.quantity import check_quantity
from rayaccel.raycompat import ray_family_for, reserved_resource_problem
from rayaccel.records import QuantityRule
from rayaccel.simulated import SimulatedHost
from rayaccel_conformance.checks import CheckFailed, Evidence, check
from rayaccel_conformance.subject import Subject

#: Problem codes the manager records when it refuses a plugin, by the check that owns the defect.
_LOAD_CODES = ("hook-raised", "unknown-hook", "invalid-plugin", "missing-hook", "duplicate-name")
_SPEC_CODES = ("spec-version",)
_FAMILY_CODES = ("reserved-name", "collision", "invalid-record")


def _problems(subject: Subject, codes: tuple[str, ...]) -> list[str]:
    return [p.render() for p in subject.load_problems() if p.code in codes
            and (p.hook in (None, "rayaccel_family") or p.code != "invalid-record")]


@check("RAC101")
def loads(subject: Subject) -> Evidence:
    """The plugin is installed and loads through its entry point.

    The SDK found a plugin of this name (a ``rayaccel`` entry point, or ``RAYACCEL_PLUGINS`` for a plugin
    not packaged yet), imported it and registered its hooks: no import error, no unknown hook name, both
    required hooks (``rayaccel_family``, ``rayaccel_discover``) present. Fix: install the plugin's
    distribution and check ``rayaccel plugins``; the problem quoted names the hook and the fix.
    """
    problems = _problems(subject, _LOAD_CODES)
    if problems:
        raise CheckFailed(problems)
    if not subject.loaded and not _problems(subject, _SPEC_CODES + _FAMILY_CODES):
        raise CheckFailed(f"no plugin named {subject.name!r} is installed; installed: "
                          f"{', '.join(subject.manager.plugin_names()) or 'none'}")
    if not subject.loaded:
        return f"{subject.name} imports and registers its hooks (it is refused for its declaration: RAC103/RAC104)"
    how = (f"entry point of distribution {subject.distribution} {subject.version}" if subject.distribution
           else "RAYACCEL_PLUGINS (not packaged: no entry point)")
    return f"loaded through {how}"


@check("RAC102")
def loads_without_driver(subject: Subject) -> Evidence:
    """With no vendor driver or library present, discovery reports zero devices and no problem.

    A plugin is installed on machines without its hardware (every CPU node of a cluster). The check runs
    discovery on an empty simulated host (no files, commands, libraries or metadata server): the plugin
    must return an empty list, without raising, timing out or logging an error. Fix: test for the driver
    (``host.exists``, ``host.which``, ``host.library`` raising ``LibraryUnavailable``) before reading it.
    """
    subject.family()
    empty = Fixture.model_validate({"schema": "rayaccel-fixture/1", "plugin": subject.name, "name": "no-driver",
                                    "description": "a machine without the vendor's driver", "host": HostState(),
                                    "expected": {"devices": 0}})
    inventory = subject.build(SimulatedHost(empty))
    family = inventory.family(subject.family().name)
    problems = subject.plugin_problems(inventory, severities=("error", "warning"))
    found = []
    if family is not None and family.devices:
        found.append(f"discovered {len(family.devices)} devices on an empty host")
    found += [p.render() for p in problems]
    if found:
        raise CheckFailed(found)
    return "zero devices and no problems on a host without the vendor driver"


@check("RAC103")
def spec_version(subject: Subject) -> Evidence:
    """The plugin was written for a compatible hook-spec version (same MAJOR as this SDK).

    The family declaration's ``spec_version`` says which rayaccel hook spec the plugin implements. The SDK
    accepts any minor version of its own major version and refuses others. Fix: port the plugin to spec
    ``1.x`` (docs/hooks.md lists the hooks) and declare ``spec_version="1.0"``.
    """
    problems = _problems(subject, _SPEC_CODES)
    if problems:
        raise CheckFailed(problems)
    declared = subject.family().spec_version
    if declared.split(".")[0] != hookspec.SPEC_VERSION.split(".")[0]:
        raise CheckFailed(f"declares spec {declared}, the SDK implements {hookspec.SPEC_VERSION}")
    return f"declares spec {declared}; the SDK implements {hookspec.SPEC_VERSION}"


@check("RAC104")
def family_declaration(subject: Subject) -> Evidence:
    """The family declaration is valid and collides with no other plugin and no name Ray reserves.

    Resource names are letters, digits and ``_``; the env var is upper-case; the resource may not be one
    Ray owns (``CPU``, ``memory``, ``node:*``, ``accelerator_type:*``) nor a built-in accelerator resource
    with another env var than Ray's (``GPU`` only with CUDA/HIP/ZE env vars). No other installed plugin may
    claim the same env var or resource. Fix: pick your own resource name and env var, or Ray's exact pair.
    """
    problems = _problems(subject, _FAMILY_CODES)
    if problems:
        raise CheckFailed(problems)
    family = subject.family()
    reserved = reserved_resource_problem(family.resource_name, family.visible_devices_env_var)
    if reserved:
        raise CheckFailed(reserved)
    owner = ray_family_for(family.resource_name, family.visible_devices_env_var)
    return (f"resource {family.resource_name!r}, env var {family.visible_devices_env_var}, quantity rule "
            f"{family.quantity_rule.kind}; " + (f"the pair Ray's {owner} uses" if owner else "a family new to Ray"))


@check("RAC105", scope="fixture")
def discovery_matches_fixture(subject: Subject, fixture: str | None) -> Evidence:
    """On every fixture, discovery equals the fixture's expected devices, resources and accelerator type.

    The fixture records what the vendor interface answers on a real machine and what the node must get
    (``expected``: device count and ids, health, SKUs, Ray resources, accelerator type). Labels and links
    are checked by RAC201 and RAC202. Fix: the differences quoted are what the plugin found instead; run
    ``rayaccel inspect --simulate <fixture>`` to see the whole inventory.
    """
    subject.family()
    fx = subject.fixture(fixture)
    inventory = subject.inventory(fixture)
    expected = fx.expected.model_copy(update={"labels": {}, "links": None})
    diffs = compare_expected(inventory, fx, expected)
    diffs += [p.render() for p in subject.plugin_problems(
        inventory, ("rayaccel_discover", "rayaccel_resources", "rayaccel_health"))]
    if diffs:
        raise CheckFailed(diffs)
    family = inventory.family(subject.family().name)
    return (f"{fx.ref}: {fx.expected.devices} devices, resources {inventory.resources}, accelerator type "
            f"{family.accelerator_type if family else None!r}")


#: Quantities a task might ask for, with what each rule must say about them.
QUANTITY_SAMPLES = (0.25, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 8.0, 2.5)


def rule_allows(rule: QuantityRule, quantity: float) -> bool:
    """The rule's meaning, written independently of the SDK's implementation it is checked against."""
    if rule.kind == "fractional":
        return 0 < quantity <= 1 or float(quantity).is_integer()
    if rule.kind == "whole":
        return float(quantity).is_integer()
    return quantity in rule.choices


def _ray_validator(resource: str, env_var: str) -> Any:
    owner = ray_family_for(resource, env_var)
    if owner is None:
        return None
    from ray._private import accelerators

    return next(m for m in accelerators.get_all_accelerator_managers() if getattr(m, "__name__", "") == owner)


@check("RAC106")
def quantity_rule(subject: Subject) -> Evidence:
    """The request-quantity rule accepts and rejects the right samples, each rejection with a message.

    Samples 0.25 ... 8 go through the SDK's rule (what ``@ray.remote(resources=...)`` is validated with for a
    day-zero family) and, for a family Ray already knows, through Ray's own accelerator manager: a rule that
    lets a task ask for a quantity Ray's manager for that resource refuses (1.5 HPU, 0.5 neuron_cores) is
    wrong. Every rejection must carry a message naming the resource. Fix: declare the ``quantity_rule``
    Ray uses for the resource (``whole`` for HPU and neuron_cores, ``choices`` [1, 2, 4, 8] for TPU).
    """
    family = subject.family()
    rule, resource = family.quantity_rule, family.resource_name
    ray_manager = _ray_validator(resource, family.visible_devices_env_var)
    wrong, verdicts = [], []
    for q in QUANTITY_SAMPLES:
        ok, message = check_quantity(rule, resource, q)
        verdicts.append(f"{q:g}:{'yes' if ok else 'no'}")
        if ok != rule_allows(rule, q):
            wrong.append(f"rule {rule.kind} {'accepts' if ok else 'rejects'} {q:g}")
        if not ok and (not message or resource not in message):
            wrong.append(f"rejecting {q:g} gives no message naming {resource}: {message!r}")
        if ray_manager is not None:
            ray_ok, ray_message = ray_manager.validate_resource_request_quantity(q)
            if ok and not ray_ok:
                wrong.append(f"the rule accepts {q:g} {resource}, which Ray's {ray_manager.__name__} "
                             f"refuses: {ray_message}")
    if wrong:
        raise CheckFailed(wrong)
    where = f"agrees with Ray's {ray_manager.__name__}" if ray_manager else "day-zero family: the SDK's rule"
    return [f"{rule.kind} rule on {resource}: {' '.join(verdicts)}", where]


@check("RAC107", scope="fixture")
def visible_env_round_trip(subject: Subject, fixture: str | None) -> Evidence:
    """The visible-devices env var round-trips: the env set for units parses back to the same units.

    For one unit, two units, all units of the fixture and none, the env the plugin sets
    (``rayaccel_visible_env``, default ``<VAR>=id,id``) must contain the family's env var, and parsing its
    value (``rayaccel_parse_visible``, default comma split) must give back exactly those unit ids in order.
    Fix: make ``rayaccel_parse_visible`` the inverse of ``rayaccel_visible_env``.
    """
    family = subject.family()
    units = subject.inventory(fixture).family(family.name)
    ids = units.schedulable_units if units else []
    if not ids:
        raise CheckFailed(f"{fixture}: no schedulable units to round-trip (see RAC105)")
    wrong, tried = [], []
    for chosen in ([ids[0]], ids[:2], ids, []):
        env = subject.manager.visible_env(subject.name, chosen)
        value = env.get(family.visible_devices_env_var)
        if value is None:
            wrong.append(f"env for {chosen} lacks {family.visible_devices_env_var}: {env}")
            continue
        back = subject.manager.parse_visible(subject.name, value)
        tried.append(f"{chosen}->{value!r}")
        if back != list(chosen):
            wrong.append(f"{family.visible_devices_env_var}={value!r} (set for {chosen}) parses back as {back}")
    if wrong:
        raise CheckFailed(wrong)
    return [f"{len(tried)} unit sets round-trip", *tried[:2]]


@check("RAC108", scope="fixture", uses_ray=True)
def ray_single_node(subject: Subject, fixture: str | None) -> Evidence:
    """A real Ray node started through the SDK on the fixture shows the plugin's resources, and a task
    asking for one unit sees exactly its unit in the env var.

    The node is started with ``rayaccel.ray.add_node(cluster, simulate=<fixture>)`` in the run's shared
    ``ray.cluster_utils.Cluster``. Its Ray resources must include every resource of the inventory, and a task
    pinned to it with ``resources={<resource>: 1}`` must see one unit id in the env var, equal to the id Ray
    assigned (``get_accelerator_ids()``) and one of the node's schedulable units. Fix: check the family's
    env var and unit ids (``Device.units``) with ``rayaccel inspect --simulate <fixture>``.
    """
    from rayaccel_conformance.raycluster import shared_cluster

    family = subject.family()
    inventory = subject.inventory(fixture)
    fam = inventory.family(family.name)
    if fam is None or not fam.schedulable_units:
        raise CheckFailed(f"{fixture}: no schedulable units (see RAC105)")
    assert fixture is not None
    return shared_cluster().single_node_check(subject, fixture, inventory)

