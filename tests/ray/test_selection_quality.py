"""Best-connected selection beyond the exhaustive limit: never worse than the greedy order's prefix, and
deterministic. (How often it is optimal is measured by `make bench`, docs/performance.md.)"""

from __future__ import annotations

import itertools
import math
import random

import pytest

from rayaccel.inventory.topology import EXHAUSTIVE_LIMIT, adjacency, best_connected_subset, greedy_order
from rayaccel.records import Device, Link


def _weight(devices: list[Device], links: list[Link], chosen: list[str]) -> int:
    graph = adjacency(devices, links)
    return sum(graph[a].get(b, 0) for a, b in itertools.combinations(chosen, 2))


@pytest.mark.parametrize("seed", range(12))
def test_swaps_never_lose_bandwidth_against_the_greedy_prefix(seed):
    rng = random.Random(seed)
    n, k = 20, 7
    assert math.comb(n, k) > EXHAUSTIVE_LIMIT  # the greedy path, not the exhaustive one
    devices = [Device(index=i, id=f"d{i}", product_name="chip") for i in range(n)]
    links = [Link(a=f"d{a}", b=f"d{b}", kind="nvlink", bandwidth_gbps=rng.choice([25.0, 100.0, 450.0]))
             for a in range(n) for b in range(a + 1, n) if rng.random() < 0.3]
    chosen = best_connected_subset(devices, links, k)
    assert len(chosen) == len(set(chosen)) == k
    assert _weight(devices, links, chosen) >= _weight(devices, links, greedy_order(devices, links)[:k])
    assert best_connected_subset(devices, links, k) == chosen
