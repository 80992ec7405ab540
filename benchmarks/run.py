"""Measure what the SDK adds on top of the plugins' own work, as ratios taken in one run.

Absolute times depend on the machine; ratios between two things measured side by side do not (much).
Results are printed as a table and written to benchmarks/results.json; docs/performance.md quotes them.
"""

from __future__ import annotations

import json
import platform
import statistics
import sys
import time
import types
from collections.abc import Callable
from pathlib import Path

from rayaccel import Device, FamilyDeclaration, hookimpl
from rayaccel.fixtures import installed_fixtures, resolve_fixture
from rayaccel.inventory import InventoryBuilder
from rayaccel.manager import PluginManager
from rayaccel.records import Link
from rayaccel.simulated import SimulatedHost
from rayaccel.topology import best_connected_subset, greedy_order

RESULTS = Path(__file__).parent / "results.json"


def timeit(fn: Callable[[], object], repeat: int = 7, number: int = 20) -> float:
    """Median seconds per call over `repeat` rounds of `number` calls."""
    rounds = []
    for _ in range(repeat):
        started = time.perf_counter()
        for _ in range(number):
            fn()
        rounds.append((time.perf_counter() - started) / number)
    return statistics.median(rounds)


def bench_hook_isolation() -> dict[str, float]:
    """Cost of calling a hook through the manager (thread + timeout + validation + containment) vs directly."""

    def discover(host: object) -> list[Device]:
        return [Device(index=i, id=f"d{i}", product_name="chip") for i in range(8)]

    plugin = types.SimpleNamespace(
        rayaccel_family=hookimpl(lambda: FamilyDeclaration(name="bench", vendor="B", resource_name="BENCH",
                                                           visible_devices_env_var="BENCH_VISIBLE",
                                                           spec_version="1.0")),
        rayaccel_discover=hookimpl(discover))
    manager = PluginManager(autoload=False)
    manager.register(plugin, "bench")
    direct = timeit(lambda: discover(None), number=200)
    managed = timeit(lambda: manager.discover("bench", None, []), number=200)  # type: ignore[arg-type]
    return {"direct_us": direct * 1e6, "managed_us": managed * 1e6, "ratio": managed / direct}


def bench_inventories() -> dict[str, dict[str, float]]:
    """Inventory of each installed fixture, relative to the smallest: shows what scales with devices."""
    manager = PluginManager()
    out: dict[str, dict[str, float]] = {}
    for ref in installed_fixtures(manager):
        fixture = resolve_fixture(ref, manager)
        host = SimulatedHost(fixture)
        builder = InventoryBuilder(manager, [fixture.plugin])
        seconds = timeit(lambda host=host, builder=builder: builder.build(host), repeat=3, number=5)
        out[ref] = {"ms": seconds * 1e3, "devices": fixture.expected.devices}
    if out:
        fastest = min(v["ms"] for v in out.values())
        for value in out.values():
            value["ratio_to_fastest"] = value["ms"] / fastest
    return out


def bench_selection() -> dict[str, float]:
    """Exhaustive best-connected search vs the greedy order on a 16-device full mesh, k=4; greedy at 1024."""
    devices = [Device(index=i, id=f"d{i}", product_name="chip") for i in range(16)]
    links = [Link(a=f"d{a}", b=f"d{b}", kind="nvlink", bandwidth_gbps=450.0 if (a < 8) == (b < 8) else 50.0)
             for a in range(16) for b in range(a + 1, 16)]
    exhaustive = timeit(lambda: best_connected_subset(devices, links, 4), repeat=3, number=3)
    greedy = timeit(lambda: greedy_order(devices, links), repeat=3, number=3)
    # The bound that matters for a garbage-sized answer: the greedy order of 1024 devices, 8 links each.
    many = [Device(index=i, id=f"d{i}", product_name="chip") for i in range(1024)]
    mesh = [Link(a=f"d{a}", b=f"d{b}", kind="nvlink", bandwidth_gbps=float(1 + (a * b) % 9))
            for a in range(1024) for b in range(a + 1, min(1024, a + 9))]
    greedy_1024 = timeit(lambda: greedy_order(many, mesh), repeat=3, number=1)
    return {"exhaustive_k4_ms": exhaustive * 1e3, "greedy_ms": greedy * 1e3, "ratio": exhaustive / greedy,
            "greedy_1024_ms": greedy_1024 * 1e3}


def main() -> int:
    results = {
        "python": sys.version.split()[0], "machine": platform.machine(),
        "hook_isolation": bench_hook_isolation(),
        "selection": bench_selection(),
        "inventory": bench_inventories(),
    }
    try:
        import torch  # noqa: F401
    except ImportError:
        print("tensor transports: skipped (torch is not installed: pip install 'rayaccel[rdt]')")
    else:
        from benchmarks.transports import bench_transports

        results["transports"] = bench_transports()
    RESULTS.write_text(json.dumps(results, indent=2) + "\n")
    iso = results["hook_isolation"]
    print(f"hook call through the manager: {iso['managed_us']:.0f} us vs direct {iso['direct_us']:.0f} us "
          f"(x{iso['ratio']:.1f})")
    sel = results["selection"]
    print(f"best-connected 4 of 16, exhaustive: {sel['exhaustive_k4_ms']:.1f} ms vs greedy order "
          f"{sel['greedy_ms']:.2f} ms (x{sel['ratio']:.0f}); greedy order of 1024 devices "
          f"{sel['greedy_1024_ms']:.0f} ms")
    print(f"{'fixture':32} {'devices':>7} {'ms':>8} {'x fastest':>9}")
    for ref, value in sorted(results["inventory"].items(), key=lambda kv: kv[1]["ms"]):
        print(f"{ref:32} {value['devices']:7.0f} {value['ms']:8.2f} {value['ratio_to_fastest']:9.1f}")
    if "transports" in results:
        from benchmarks.transports import print_transports

        print_transports(results["transports"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
