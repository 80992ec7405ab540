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

A group may also be named from stated values without being one of them: a job of several UltraServer groups, its
server ids unset, names its k-th group ``<worker 0's host>.<k>`` (k: the worker's number in the job // group size). Such
an id is built from what the host states when each stated name in it follows that name (renamed in every place the
host states it, the id is renamed with it) and what is left of it besides separators (``.1``) changes with some
number the host's variables state while the node keeps its place in the group (``host_index``): another group, not
another member of this one. A constant suffix (``.group``) would name every group of the job alike, the node's own
host name follows nothing the host states, and a number that moves only with the node's place (its node id) would
give each member of one group another name.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from rayaccel.hosts.fixtures import Fixture, HostState
from rayaccel.records import Domain, FamilyInventory
from rayaccel.simulation.host_factory import simulated_host
from rayaccel_conformance.harness.subject import Subject

#: A whole number as a variable states one (``NEURON_GLOBAL_TOPOID=3``, ``NEURON_RT_ULTRASERVER_NODE_ID=-1``).
WHOLE_NUMBER = re.compile(r"-?[0-9]+")
#: How far past its value each such number is moved: a group of up to this many hosts has another group's member
#: in the same place within reach.
NUMBER_STEPS = 16
#: What is left of a built id once its stated names are taken out, when it says nothing (separators alone).
SEPARATORS = re.compile(r"[^A-Za-z0-9]*")


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


def renamed(value: str) -> str:
    """``value`` with each letter and digit moved one on in its own class (a host name stays a host name, a
    16-character server id one): a name no stated value is."""
    def moved(ch: str) -> str:
        for first, count in (("a", 26), ("A", 26), ("0", 10)):
            if 0 <= ord(ch) - ord(first) < count:
                return chr(ord(first) + (ord(ch) - ord(first) + 1) % count)
        return ch
    return "".join(moved(ch) for ch in value)


def restated(state: HostState, old: str, new: str) -> HostState:
    """``state`` with ``new`` wherever the host states ``old`` whole (the places :func:`stated_values` reads)."""
    def swap(text: str) -> str:
        return text.replace(old, new) if text.strip() == old else text

    commands = {argv: answer.model_copy(update={"stdout": "".join(swap(line) for line in
                                                                   answer.stdout.splitlines(keepends=True))})
                for argv, answer in state.commands.items()}
    return state.model_copy(update={
        "env": {name: swap(value) for name, value in state.env.items()},
        "files": {path: swap(text) for path, text in state.files.items()},
        "http": {url: answer.model_copy(update={"body": swap(answer.body)}) for url, answer in state.http.items()},
        "commands": commands})


def stated_names(domain_id: str, stated: set[str]) -> list[str]:
    """The stated values with a letter that ``domain_id`` holds whole (no letter or digit either side), longest
    first, none inside another's place: the names a built id may be made of. Numbers are left to its rest."""
    names: list[str] = []
    taken: list[range] = []
    for value in sorted((v for v in stated if re.search("[A-Za-z]", v) and "\n" not in v), key=len, reverse=True):
        for found in re.finditer(rf"(?<![A-Za-z0-9]){re.escape(value)}(?![A-Za-z0-9])", domain_id):
            place = range(found.start(), found.end())
            if not any(place.start < t.stop and t.start < place.stop for t in taken):
                taken.append(place)
                if value not in names:
                    names.append(value)
    return names


def rest_of(domain_id: str, names: list[str]) -> str:
    """``domain_id`` without its stated names."""
    for name in names:
        domain_id = re.sub(rf"(?<![A-Za-z0-9]){re.escape(name)}(?![A-Za-z0-9])", "", domain_id)
    return domain_id


def why_made_up(domain: Domain, state: HostState, spanning_at: Callable[[HostState], list[Domain]]) -> str | None:
    """Why ``domain``'s id, which the host states nowhere whole, is not built from what it states (None: it is)."""
    names = stated_names(domain.id, stated_values(state))
    if not names:
        return "under an id the host states nowhere, whole or in part"
    moved = state
    for name in names:
        moved = restated(moved, name, renamed(name))
    expected = domain.id
    for name in names:
        expected = re.sub(rf"(?<![A-Za-z0-9]){re.escape(name)}(?![A-Za-z0-9])", renamed(name), expected)
    if expected not in (found := [d.id for d in spanning_at(moved)]):
        return (f"under an id holding {names} that does not follow them: with each renamed where the host states "
                f"it ({', '.join(f'{n!r} -> {renamed(n)!r}' for n in names)}) the group is {found or 'none'}, "
                f"not {expected!r}")
    rest = rest_of(domain.id, names)
    if SEPARATORS.fullmatch(rest):
        return None
    numbers = {var: value.strip() for var, value in state.env.items() if WHOLE_NUMBER.fullmatch(value.strip())}
    for var, value in sorted(numbers.items()):
        for step in range(1, NUMBER_STEPS + 1):
            for built in spanning_at(state.model_copy(update={"env": {**state.env, var: str(int(value) + step)}})):
                if (stated_names(built.id, set(names)) == names and built.host_index == domain.host_index
                        and not SEPARATORS.fullmatch(changed := rest_of(built.id, names)) and changed != rest):
                    return None
    return (f"under an id built from {names} and {rest!r}, which changes with no number the host's variables state "
            f"while the node keeps its place {domain.host_index} ({', '.join(sorted(numbers)) or 'none'} each tried "
            f"1 to {NUMBER_STEPS} higher): every group would be called so, or each member of one group otherwise")


def dropped_variable_domain_errors(subject: Subject, fx: Fixture) -> list[str]:
    """Multi-host domains made up once one of the host's variables is unset."""
    name = subject.family().name
    recorded = {d.id for d in spanning(subject.inventory(fx.ref).family(name))}

    def spanning_at(state: HostState) -> list[Domain]:
        return spanning(subject.build(simulated_host(fx.model_copy(update={"host": state, "faults": []})),
                                      with_metrics=False).family(name))

    wrong = []
    for var in sorted(fx.host.env):
        state = fx.host.model_copy(update={"env": {k: v for k, v in fx.host.env.items() if k != var}})
        built = subject.build(simulated_host(fx.model_copy(update={"host": state, "faults": []}))).family(name)
        stated = stated_values(state)
        for d in spanning(built):
            why = None if d.id in recorded or d.id in stated else why_made_up(d, state, spanning_at)
            if why:
                wrong.append(f"invariant a-group-without-its-variable-is-no-group: {fx.ref} with {var} unset: "
                             f"{d.kind} domain {d.id!r} of {d.size} devices (this host has "
                             f"{len(built.devices) if built else 0}) {why}"
                             f"{f' (recorded: {sorted(recorded)})' if recorded else ''}: leave the group unknown "
                             "where its variable is missing")
    return wrong
