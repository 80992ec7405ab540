"""Experimental tier, hygiene (RAC109, RAC110): hooks have no side effects, and discovery reads the host, not the
process environment."""

from __future__ import annotations

import os
from typing import Any

from rayaccel.plugins.manager import MISSING
from rayaccel.simulation.host_factory import simulated_host
from rayaccel_conformance.checks import CheckFailed, Evidence, check
from rayaccel_conformance.subject import Subject


@check("RAC109", scope="fixture")
def hooks_have_no_side_effects(subject: Subject, fixture: str | None) -> Evidence:
    """Hooks have no side effects: not on their inputs, not on the process, and no I/O around the Host seam.

    Every hook the suite calls runs watched (``rayaccel_conformance.guard``): it gets copies of its inputs,
    which must equal the originals afterwards (a hook sorting ``devices`` or a label dict in place changes
    what the SDK hands the next hook); it must not write ``os.environ``, print to stdout or stderr (that
    breaks ``rayaccel inspect --json``), leave threads or child processes running, write files, or reach the
    machine except through the ``host`` it was given: ``subprocess``, ``open`` of a file outside Python and
    the plugin's own package, ``os.listdir``, sockets and ``urllib`` are seen by a ``sys.addaudithook``
    hook, whichever host (simulated or real) is used; and its real time plus the time a simulated hang
    stood for must fit the hook budget. This check builds the fixture's inventory and calls every other
    hook once; any check during which a side effect is first seen fails as well, naming the hook. Fix: read
    the machine only through ``host``, return results instead of printing or setting env, copy inputs
    before changing them.
    """
    family = subject.family()
    fx = subject.fixture(fixture)
    inventory = subject.build(simulated_host(fx))
    fam = inventory.family(family.name)
    units = fam.schedulable_units if fam else []
    called = ["rayaccel_discover and the inventory's hooks"]
    for hook, kwargs in (("rayaccel_visible_env", {"unit_ids": list(reversed(units[:2]))}),
                         ("rayaccel_parse_visible", {"value": ",".join(units[:2])}),
                         ("rayaccel_sku_catalog", {}), ("rayaccel_transports", {}), ("rayaccel_fixture_dirs", {}),
                         ("rayaccel_cloud_hints", {"provider": "aws", "instance_type": "p5.48xlarge"})):
        if subject.manager.call(subject.name, hook, [], **kwargs) is not MISSING:
            called.append(hook)
    # What the SDK contained while loading the plugin (before the suite watched it): prints, env writes.
    found = [f"{subject.name}: {p.hook or 'import'} {p.message}" for p in subject.manager.problems
             if p.plugin == subject.name and p.code in ("printed", "environ-changed")]
    found += subject.side_effects()
    if found:
        raise CheckFailed([f"side effect: {f}" for f in found])
    return f"{fx.ref}: no side effects in {', '.join(called)} (nor in any hook called so far)"


@check("RAC110", scope="fixture")
def discovery_ignores_process_env(subject: Subject, fixture: str | None) -> Evidence:
    """Discovery is a function of the host alone: the family's visible-devices variable set in this process
    changes nothing.

    Ray sets the family's env var (e.g. ``CUDA_VISIBLE_DEVICES``) in every worker, so a plugin that filters
    discovery by its own process's env var finds a different machine in each worker and on a node started
    from one. The inventory is built with the env var unset, set to one unit, and set to an empty string in
    the process environment; devices, units and resources must be the same. (A fixture's own ``env`` is the
    host's and is read through ``host.getenv``.) Fix: never read ``os.environ`` in discovery; read the host.
    """
    family = subject.family()
    var = family.visible_devices_env_var
    fx = subject.fixture(fixture)
    saved = os.environ.get(var)

    def facts(inventory: Any) -> tuple[list[str], list[str], dict[str, float]]:
        fam = inventory.family(family.name)
        return ([d.id for d in fam.devices] if fam else [], list(fam.schedulable_units) if fam else [],
                dict(fam.resources) if fam else {})

    try:
        os.environ.pop(var, None)
        base = facts(subject.build(simulated_host(fx)))
        if not base[1]:
            raise CheckFailed(f"{fx.ref}: no schedulable units (see RAC105)")
        wrong = []
        for value in (base[1][-1], ""):
            os.environ[var] = value
            seen = facts(subject.build(simulated_host(fx)))
            if seen != base:
                wrong.append(f"with {var}={value!r} in the process env, rayaccel_discover found {len(seen[0])} "
                             f"devices, units {seen[1]} (without it: {len(base[0])} devices, units {base[1]})")
    finally:
        if saved is None:
            os.environ.pop(var, None)
        else:
            os.environ[var] = saved
    if wrong:
        raise CheckFailed(wrong)
    return f"{fx.ref}: the same {len(base[0])} devices with {var} unset, set to one unit, and empty"
