"""Every inventory hook answers the host, not the process environment it runs in (supported tier, issue 46):
RAC242.

RAC110 holds discovery to the host alone. Ray sets the family's visible-devices variable in every worker, and
a node's processes inherit whatever the shell that started them had, so a health, metrics, topology, labels
or resources hook that filters by that variable answers a different machine in each process: the health
monitor's view of a chip depends on which worker asked. This check sets the variable as RAC110 does and holds
every other answer of the inventory to what it was without it.
"""

from __future__ import annotations

from typing import Any

from rayaccel.records import NodeInventory
from rayaccel.simulation.host_factory import simulated_host
from rayaccel_conformance.checks.experimental import offered_units, process_env_var
from rayaccel_conformance.harness.subject import Subject
from rayaccel_conformance.registry import CheckFailed, Evidence, NotApplicable, check


def answers(subject: Subject, inventory: NodeInventory) -> dict[str, Any]:
    """Hook -> what it contributed to the inventory, in a form two builds of one host compare equal by
    (metrics by which devices have samples and of what: a rate needs two samples, so values may differ)."""
    fam = inventory.family(subject.family().name)
    if fam is None:
        return {}
    return {
        "rayaccel_health": {h.device: (h.state, sorted(r.code for r in h.reasons)) for h in fam.health},
        "rayaccel_topology": sorted((*sorted((link.a, link.b)), link.kind) for link in fam.topology.links),
        "rayaccel_metrics": sorted({(s.device, s.name) for s in fam.metrics if not s.name.startswith("interconnect")}),
        "rayaccel_labels": dict(sorted(inventory.labels.items())),
        "rayaccel_resources": dict(sorted(fam.resources.items())),
    }


def first_difference(before: Any, after: Any) -> str:
    """The first entry that differs between two answers of one hook, as 'key: before -> after'."""
    if isinstance(before, dict) and isinstance(after, dict):
        key = next(k for k in sorted({*before, *after}, key=str) if before.get(k) != after.get(k))
        return f"{key}: {before.get(key, 'absent')} -> {after.get(key, 'absent')}"
    gone, new = [x for x in before if x not in after], [x for x in after if x not in before]
    return f"{'without ' + str(gone[:2]) if gone else ''}{' and ' if gone and new else ''}" \
           f"{'with ' + str(new[:2]) if new else ''}"


@check("RAC242", scope="fixture")
def every_hook_ignores_the_process_env(subject: Subject, fixture: str | None) -> Evidence:
    """Every inventory hook answers the host, not the process environment: the family's visible-devices
    variable set in this process changes no health, metric, link, label or resource.

    Ray sets the family's variable (``CUDA_VISIBLE_DEVICES``, ``TPU_VISIBLE_CHIPS``, ...) in every worker,
    and a node's processes inherit it from whatever started them, so a hook that filters by it answers a
    different machine in each process: the health monitor sees only the chips one worker was given. RAC110
    holds discovery to that; this check builds the inventory with the variable unset, set to the node's last
    unit and set empty (as RAC110 does) and requires each other hook's answer to be the same: every device's
    health state and reason codes, the links, which metrics each device has, the node's labels and
    resources. A failure names the hook, the value set and the first answer that moved. Fix: never read
    ``os.environ`` in a hook; what the process may use is Ray's business, what the machine has is the
    host's (``host.getenv`` reads the host's own environment).
    """
    family = subject.family()
    var = family.visible_devices_env_var
    fx = subject.fixture(fixture)
    wrong: list[str] = []
    with process_env_var(var) as set_var:
        set_var(None)
        first = subject.build(simulated_host(fx))
        base = answers(subject, first)
        units = offered_units(first.family(family.name))
        if not units:
            raise NotApplicable(f"{fx.ref}: no schedulable units to set {var} to")
        for value in (units[-1], ""):
            set_var(value)
            built = subject.build(simulated_host(fx))
            if subject.discovery_failed(built, fx.expected.problems) or not built.family(
                    family.name):
                continue  # discovery reading the variable is RAC110's to name
            seen = answers(subject, built)
            for hook in base:
                if seen.get(hook) != base[hook]:
                    wrong.append(f"{fx.ref}: with {var}={value!r} in the process env, {hook} answers otherwise: "
                                 f"{first_difference(base[hook], seen.get(hook, {}))} (the hook reads the "
                                 "process's environment, not the host)")
    if wrong:
        raise CheckFailed(wrong[:6])
    return f"{fx.ref}: health, links, metrics, labels and resources the same with {var} unset, set and empty"
