"""A set-up that wrote some of its variables and not others: a multi-host domain is the group the host states, or
none (RAC202's ``a-group-without-its-variable-is-no-group``).

A node learns which multi-host group it is in from its environment (AWS's UltraServer set-up writes
``NEURON_RT_ULTRASERVER_MODE``, the group's ``NEURON_RT_ULTRASERVER_SERVER_ID`` and the node's ``_NODE_ID``,
``NEURON_GLOBAL_TOPOID`` and the job's worker 0's host name ``NEURON_GLOBAL_TOPOID0_HOST``; GKE writes
``TPU_NAME`` beside ``TPU_WORKER_ID``). Every fixture records a set-up that wrote them
all, so a plugin that makes a group up when one is missing (its own host name, a constant) passed. The suite drops
each variable the fixture's host sets, one at a time: a domain spanning more devices than the host has must then
keep its recorded id or take one the host states (a variable's value, a file's, the metadata server's answer, a
line a tool prints); otherwise the nodes of one group would each name another, or every group the same.
"""

from __future__ import annotations

from rayaccel.hosts.fixtures import Fixture, HostState
from rayaccel.records import Domain, FamilyInventory
from rayaccel.simulation.host_factory import simulated_host
from rayaccel_conformance.harness.subject import Subject


def stated_values(state: HostState) -> set[str]:
    """Every whole value the host states: its variables', files', metadata answers', and tools' lines."""
    values = {value.strip() for value in state.env.values()}
    values |= {text.strip() for text in state.files.values()}
    values |= {answer.body.strip() for answer in state.http.values()}
    values |= {line.strip() for command in state.commands.values() for line in command.stdout.splitlines()}
    return values - {""}


def spanning(family: FamilyInventory | None) -> list[Domain]:
    """The family's domains that reach past this host (more members than the host has devices)."""
    return [d for d in family.topology.domains if d.size > len(family.devices)] if family else []


def dropped_variable_domain_errors(subject: Subject, fx: Fixture) -> list[str]:
    """Multi-host domains made up once one of the host's variables is unset."""
    name = subject.family().name
    recorded = {d.id for d in spanning(subject.inventory(fx.ref).family(name))}
    wrong = []
    for var in sorted(fx.host.env):
        state = fx.host.model_copy(update={"env": {k: v for k, v in fx.host.env.items() if k != var}})
        built = subject.build(simulated_host(fx.model_copy(update={"host": state, "faults": []}))).family(name)
        stated = stated_values(state)
        wrong += [f"invariant a-group-without-its-variable-is-no-group: {fx.ref} with {var} unset: {d.kind} domain "
                  f"{d.id!r} of {d.size} devices (this host has {len(built.devices) if built else 0}) under an id the "
                  f"host states nowhere{f' (recorded: {sorted(recorded)})' if recorded else ''}: leave the group "
                  "unknown where its variable is missing" for d in spanning(built)
                  if d.id not in recorded and d.id not in stated]
    return wrong
