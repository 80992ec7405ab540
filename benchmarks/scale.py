"""Scale without Ray: inventory, labels and best-connected selection from 8 to 1024 devices, the per-node
cost of a 1024-chip TPU slice's workers and of an NVL72 domain's trays, and how close the best-connected
selection comes to the brute-force optimum (issue 17)."""

from __future__ import annotations

import functools
import itertools
import math
import random
import statistics
import time
import types
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from rayaccel import Device, Domain, FamilyDeclaration, Link, Topology, hookimpl
from rayaccel.hosts.fixtures import installed_fixtures, resolve_fixture
from rayaccel.hosts.simulated import SimulatedHost
from rayaccel.inventory.builder import InventoryBuilder
from rayaccel.inventory.topology import EXHAUSTIVE_LIMIT, adjacency, best_connected_subset, greedy_order
from rayaccel.plugins.manager import PluginManager

SIZES = (8, 16, 64, 256, 1024)


def seconds(fn: Callable[[], object], repeat: int = 3) -> float:
    """Median seconds of one call over ``repeat`` calls."""
    rounds = []
    for _ in range(repeat):
        started = time.perf_counter()
        fn()
        rounds.append(time.perf_counter() - started)
    return statistics.median(rounds)


def torus_links(n: int) -> list[Link]:
    """A 3D-torus-like fabric: device i linked to i+1, i+side and i+side^2 (wrapping), six links each."""
    side = max(2, round(n ** (1 / 3)))
    pairs = {(min(a, b), max(a, b)) for a in range(n) for step in (1, side, side * side)
             for b in [(a + step) % n] if a != b}
    return [Link(a=f"d{a}", b=f"d{b}", kind="ici", bandwidth_gbps=100.0) for a, b in sorted(pairs)]


def all_to_all_links(n: int) -> list[Link]:
    return [Link(a=f"d{a}", b=f"d{b}", kind="nvlink", bandwidth_gbps=900.0) for a in range(n) for b in range(a + 1, n)]


def synthetic_plugin(n: int, links: list[Link], domain: Domain) -> PluginManager:
    """A plugin discovering n devices with the given links and domain: the SDK's cost, no vendor's."""
    devices = [Device(index=i, id=f"d{i}", product_name="chip") for i in range(n)]
    topology = Topology(links=links, domains=[domain])
    plugin = types.SimpleNamespace(
        rayaccel_family=hookimpl(lambda: FamilyDeclaration(name="bench", vendor="B", resource_name="BENCH",
                                                           visible_devices_env_var="BENCH_VISIBLE_DEVICES",
                                                           spec_version="1.0")),
        rayaccel_discover=hookimpl(lambda host: devices),
        rayaccel_topology=hookimpl(lambda host, devices: topology))
    manager = PluginManager(autoload=False)
    manager.register(plugin, "bench")
    return manager


def inventory_seconds(manager: PluginManager, host: Any, plugin: str, repeat: int = 3) -> float:
    builder = InventoryBuilder(manager, [plugin])
    builder.build(host, with_metrics=False)  # warm: catalogs and first-use imports are not per node
    return seconds(lambda: builder.build(host, with_metrics=False), repeat)


def bench_growth() -> dict[str, Any]:
    """Inventory (discovery, topology, health, resources, labels) and selection per node size."""
    out: dict[str, Any] = {}
    for n in SIZES:
        links = torus_links(n)
        domain = Domain(kind="tpu-slice", id="slice-0", size=n, members=[f"d{i}" for i in range(n)])
        manager = synthetic_plugin(n, links, domain)
        devices = [Device(index=i, id=f"d{i}", product_name="chip") for i in range(n)]
        out[str(n)] = {"inventory_ms": _inventory_ms(manager),
                       "selection_ms": seconds(functools.partial(best_connected_subset, devices, links, n // 2))
                       * 1e3}
    small, large = out[str(SIZES[0])], out[str(SIZES[-1])]
    # n^2 log n from the smallest to the largest size: the bound the issue sets on growth.
    bound = (SIZES[-1] ** 2 * math.log(SIZES[-1])) / (SIZES[0] ** 2 * math.log(SIZES[0]))
    growth = {key: large[key] / small[key] for key in ("inventory_ms", "selection_ms")}
    exponent = {key: math.log(out["1024"][key] / out["256"][key]) / math.log(4) for key in growth}
    return {"sizes": out, "growth_8_to_1024": growth, "bound_n2logn": bound, "exponent_256_to_1024": exponent}


class _NullHost:
    """A host the synthetic plugin never asks anything of."""

    name = "bench-node"
    simulated = True


def _inventory_ms(manager: PluginManager) -> float:
    return inventory_seconds(manager, _NullHost(), "bench") * 1e3


def bench_fixture_nodes() -> dict[str, Any]:
    """Per-node inventory of a 1024-chip TPU slice's workers and an NVL72 domain's trays, and selection
    across the whole domain (1024 chips on a torus; 72 GPUs all-to-all)."""
    manager = PluginManager()
    out: dict[str, Any] = {}
    known = installed_fixtures(manager)
    for ref, nodes, total in (("tpu/v6e-256-worker", 256, 1024), ("nvidia/gb200-nvl72-tray", 18, 72)):
        if ref not in known:
            continue
        fixture = resolve_fixture(ref, manager)
        per_node = inventory_seconds(manager, SimulatedHost(fixture), fixture.plugin, repeat=5)
        devices = [Device(index=i, id=f"d{i}", product_name="chip") for i in range(total)]
        links = torus_links(total) if total == 1024 else all_to_all_links(total)
        select = seconds(functools.partial(greedy_order, devices, links))
        out[ref] = {"nodes": nodes, "devices": total, "per_node_ms": per_node * 1e3,
                    "all_nodes_s": per_node * nodes, "domain_order_ms": select * 1e3}
    return out


# Best-connected selection vs the brute-force optimum ------------------------------------------------


def _weight(graph: Mapping[str, Mapping[str, float]], chosen: Sequence[str]) -> float:
    return sum(graph[a].get(b, 0.0) for a, b in itertools.combinations(chosen, 2))


def _optimum(ids: Sequence[str], graph: Mapping[str, Mapping[str, float]], k: int) -> float:
    return max(_weight(graph, c) for c in itertools.combinations(ids, k))


def _compare(devices: Sequence[Device], links: Sequence[Link], k: int) -> tuple[bool, float]:
    """(chosen is optimal, chosen weight / optimal weight)."""
    graph = adjacency(devices, links)
    ids = [d.id for d in sorted(devices, key=lambda d: d.index)]
    got = _weight(graph, best_connected_subset(devices, links, k))
    best = _optimum(ids, graph, k)
    return math.isclose(got, best, rel_tol=1e-9) or got >= best, (got / best) if best else 1.0


def bench_optimality(random_cases: int = 40, seed: int = 17) -> dict[str, Any]:
    """How often the selection is the optimum: every 8- and 16-device fixture (every k), random topologies
    of 20 and 24 devices where the greedy order decides (C(n, k) > EXHAUSTIVE_LIMIT); time per decision."""
    manager = PluginManager()
    fixtures: dict[str, Any] = {}
    for ref in sorted(installed_fixtures(manager)):
        fixture = resolve_fixture(ref, manager)
        inventory = InventoryBuilder(manager, [fixture.plugin]).build(SimulatedHost(fixture), with_metrics=False)
        for family in inventory.families:
            n = len(family.devices)
            if n not in (8, 16):
                continue
            results = [_compare(family.devices, family.topology.links, k) for k in range(2, n)]
            fixtures[ref] = {"devices": n, "decisions": len(results), "optimal": sum(ok for ok, _ in results),
                             "worst_ratio": min(r for _, r in results)}
    rng = random.Random(seed)
    randoms = []
    for case in range(random_cases):
        n = 20 if case % 2 else 24
        k = 7 if n == 20 else 6
        assert math.comb(n, k) > EXHAUSTIVE_LIMIT  # the greedy order decides these
        devices = [Device(index=i, id=f"d{i}", product_name="chip") for i in range(n)]
        density = rng.choice([0.15, 0.3, 0.6])
        links = [Link(a=f"d{a}", b=f"d{b}", kind="nvlink", bandwidth_gbps=rng.choice([25.0, 50.0, 100.0, 450.0]))
                 for a in range(n) for b in range(a + 1, n) if rng.random() < density]
        randoms.append(_compare(devices, links, k))
    per_decision = {}
    for n in (8, 16, 72, 256):
        devices = [Device(index=i, id=f"d{i}", product_name="chip") for i in range(n)]
        links = all_to_all_links(n) if n <= 72 else torus_links(n)
        k = min(4, n // 2)
        per_decision[str(n)] = seconds(functools.partial(best_connected_subset, devices, links, k)) * 1e3
    return {"fixtures": fixtures,
            "fixture_optimal": sum(v["optimal"] for v in fixtures.values()),
            "fixture_decisions": sum(v["decisions"] for v in fixtures.values()),
            "random_optimal": sum(ok for ok, _ in randoms), "random_cases": len(randoms),
            "random_worst_ratio": min(r for _, r in randoms),
            "random_mean_ratio": statistics.mean(r for _, r in randoms),
            "ms_per_decision_k4": per_decision}
