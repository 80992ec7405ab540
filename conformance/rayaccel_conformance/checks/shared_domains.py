"""The hosts of one multi-host domain name it alike (RAC202's ``one-domain-one-id-on-its-hosts``).

A domain reaching past this host (an UltraServer group, a TPU slice) is one thing its hosts share: a scheduler
places a job's workers on the hosts whose labels name the same domain, so every host of it must report the same id,
each at its own place (``host_index``). The fixture records one host of the group; the others are that host with the
numbers its set-up gives each worker moved (AWS's UltraServer set-up writes the node's ``NEURON_RT_ULTRASERVER_NODE_ID``
and ``NEURON_GLOBAL_TOPOID`` beside the group's server id; GKE writes ``TPU_WORKER_ID`` beside ``TPU_NAME``). So the
suite moves each whole number the host's variables state through the values around it, builds the plugin on each,
and gathers the places each domain id is reported at. A real group is one id at several places; a plugin that names
the domain after the node (its place or its worker number in the id) reports as many ids as places, each at one:
no two hosts would ever share the domain. No expectation is read.
"""

from __future__ import annotations

from collections import defaultdict

from rayaccel.hosts.fixtures import Fixture, HostState
from rayaccel.simulation.host_factory import simulated_host
from rayaccel_conformance.checks.dropped_variables import NUMBER_STEPS, WHOLE_NUMBER, spanning
from rayaccel_conformance.harness.subject import Subject


def places_by_id(subject: Subject, fx: Fixture, kind: str, hosts: int | None) -> dict[str, dict[str, set[int]]]:
    """For each whole-number variable of the fixture's host: domain id -> the places it is reported at, over the
    values from 0 (or NUMBER_STEPS below) to NUMBER_STEPS above the stated one, for domains of ``kind`` and
    ``hosts``."""
    name = subject.family().name
    found: dict[str, dict[str, set[int]]] = {}
    for var, value in sorted(fx.host.env.items()):
        if not WHOLE_NUMBER.fullmatch(value.strip()):
            continue
        stated = int(value)
        places: dict[str, set[int]] = defaultdict(set)
        for moved in range(max(0, stated - NUMBER_STEPS), stated + NUMBER_STEPS + 1):
            state: HostState = fx.host.model_copy(update={"env": {**fx.host.env, var: str(moved)}})
            built = subject.build(simulated_host(fx.model_copy(update={"host": state, "faults": []})),
                                  with_metrics=False).family(name)
            for d in spanning(built):
                if d.kind == kind and d.hosts == hosts and d.host_index is not None:
                    places[d.id].add(d.host_index)
        found[var] = places
    return found


def unshared_domain_errors(subject: Subject, fx: Fixture) -> list[str]:
    """Multi-host domains whose id changes with the node's place: each id reported at one place only, where the
    node is moved to several."""
    family = subject.inventory(fx.ref).family(subject.family().name)  # the fixture's own build, no other
    base = [d for d in spanning(family) if (d.hosts or 1) > 1 and d.host_index is not None]
    wrong: list[str] = []
    for domain in base:
        for var, places in places_by_id(subject, fx, domain.kind, domain.hosts).items():
            seen = set().union(*places.values()) if places else set()
            if len(seen) < 2 or any(len(at) > 1 for at in places.values()):
                continue
            shown = ", ".join(f"{i!r} at place {sorted(at)[0]}" for i, at in sorted(places.items())[:4])
            wrong.append(f"invariant one-domain-one-id-on-its-hosts: {fx.ref}: {domain.kind} domain {domain.id!r} "
                         f"spans {domain.hosts} hosts, but moving {var} (stated {fx.host.env[var].strip()}) moves the "
                         f"node to {len(seen)} places and each reports another id ({shown}): the hosts of one "
                         f"group would each name it otherwise, so no two ever share it; name the domain by what its "
                         f"hosts share (the group's id), not by the node's place")
            break
    return wrong
