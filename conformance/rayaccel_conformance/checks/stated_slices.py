"""A slice the machine names holds the chips its topology states, where its name counts the same (RAC202's
``a-slice-holds-the-chips-its-topology-states``, held-out round 19's ``p2``).

A multi-host slice is described by the machine itself: Cloud TPU's metadata (``tpu-env``) states its topology
(``TOPOLOGY: '16x16'``) and its type (``ACCELERATOR_TYPE: 'v6e-256'``); a vendor's driver or tool states a pod's name
and shape the same way. A topology's product counts chips; the count a type's name ends in counts chips or cores,
by generation (``v6e-256`` is 256 single-core chips, ``v5p-16`` 8 two-core chips). Where the two agree, the machine
states its chip count twice and no per-chip factor is left to apply: the domain the machine names (its id stated in
the machine's text) holds that many devices. A plugin that divides the count by a cores-per-chip table that is out
of date (round 19's ``p2``: v6e taken for a two-core generation, a 256-chip slice said to be 128), reads a 3-D
topology as 2-D, or sizes the slice by this host's own chips, labels ``rayaccel.io/scale-up-domain-size`` with a
size no host of the slice has, and cluster-wide placement (``min_size=``) refuses or over-packs it. Nothing is
expected: the plugin's domains are held to the machine's own statements, on the topology RAC202 asks for already.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from rayaccel.hosts.fixtures import Fixture
from rayaccel.records import Domain
from rayaccel_conformance.checks.value_relations import _machine_texts, _times, machine_counts

INVARIANT = "a-slice-holds-the-chips-its-topology-states"


def counted_twice(state: dict[str, Any]) -> tuple[int, str, str] | None:
    """The one count the machine ``state`` states as a topology's product and as the count a name ends in, with
    where each is stated; None where it states no such count, or more than one (which is whose it cannot tell)."""
    topologies: dict[int, str] = {}
    names: dict[int, str] = {}
    for value, what in machine_counts(state):
        (topologies if what.startswith("topology") else names).setdefault(value, what)
    agreed = sorted(topologies.keys() & names.keys())
    if len(agreed) != 1:
        return None
    count = agreed[0]
    return count, topologies[count], names[count]


def _stated(text_id: str, texts: Sequence[str]) -> bool:
    """Whether the machine's texts state ``text_id`` whole (not as part of a longer name)."""
    pattern = re.compile(rf"(?<![\w.-]){re.escape(text_id)}(?![\w-])")
    return any(pattern.search(text) for text in texts)


def stated_slice_findings(fx: Fixture, domains: Sequence[Domain]) -> list[str]:
    """Domains whose id the machine of ``fx`` states, sized otherwise than the chip count it states twice."""
    state = fx.host.model_dump(mode="json")
    twice = counted_twice(state)
    if twice is None:
        return []
    count, topology, name = twice
    texts = [text for _, text in _machine_texts(state)]
    wrong = []
    for domain in domains:
        if domain.size == count or not _stated(domain.id, texts):
            continue
        wrong.append(f"invariant {INVARIANT}, {fx.ref}: domain {domain.id!r} ({domain.kind}) has size {domain.size}, "
                     f"{_times(domain.size / count)} the {count} the machine states twice: its {topology} holds "
                     f"{count} chips and its {name} counts {count}. Where a slice's topology and the count its name "
                     f"ends in agree, each chip is one device and no per-chip factor applies (the label "
                     f"rayaccel.io/scale-up-domain-size says {domain.size} to every node of the slice); size the "
                     "domain by its topology's product")
    return wrong
