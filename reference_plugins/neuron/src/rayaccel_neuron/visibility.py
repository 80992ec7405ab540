"""NEURON_RT_VISIBLE_CORES: a comma-separated list of NeuronCore ids and ranges (``0-3``, ``0,2,4-7``).

The Neuron runtime documents the range form; Ray 2.60 splits on commas only, so ``0-3`` becomes the one
id ``"0-3"`` there. This parser expands ranges. Tokens that are neither a number nor a rising range are
kept verbatim, as Ray keeps them, so nothing is silently dropped.
"""

from __future__ import annotations

import re

VISIBLE_CORES = "NEURON_RT_VISIBLE_CORES"
_RANGE = re.compile(r"^(\d+)\s*-\s*(\d+)$")


def parse_visible_cores(value: str) -> list[str]:
    ids: list[str] = []
    for token in (t.strip() for t in value.split(",")):
        if not token:
            continue
        match = _RANGE.match(token)
        if match and int(match.group(1)) <= int(match.group(2)):
            ids.extend(str(i) for i in range(int(match.group(1)), int(match.group(2)) + 1))
        elif token.isdigit():
            ids.append(token)
        else:
            ids.append(token)
    return ids
