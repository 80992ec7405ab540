"""RAC310: performance figures measured by the run, recorded in the report and held to a baseline.

Kept cheap (the conformance run is measured against ``ray.init()`` in ``make bench``): a handful of inventory
builds and a few transfers per transport in the run's shared Ray cluster, which RAC301 has started already;
the node start is the one the cluster timed when it started the plugin's first fixture. The baseline is a
previous report (``--conformance-baseline``), else the one the plugin declares
(``rayaccel_performance_baseline``). Recovery is RAC301's (a sender killed mid-transfer on one node) and
:mod:`.recovery`'s (RAC311 between two nodes, RAC312 through a node's health monitor).
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from typing import Any

from rayaccel import hookspec
from rayaccel.hosts.seam import Host, RealHost
from rayaccel.records import Problem, TransportSpec
from rayaccel.simulation.host_factory import simulated_host
from rayaccel_conformance.harness import figures as held
from rayaccel_conformance.harness.subject import Subject
from rayaccel_conformance.registry import CheckFailed, Evidence, check

#: Builds timed for the inventory and monitor figures (the median is kept).
BUILDS = 5
#: Transfers timed per transport: small ones for the latency, large ones for the bandwidth (best kept).
LATENCY_TRANSFERS = 5
BANDWIDTH_TRANSFERS = 3
BANDWIDTH_BYTES = 16 << 20
TRANSFER_TIMEOUT_S = 120.0


def _median_ms(run: Callable[[], Any], times: int) -> float:
    spent = []
    for _ in range(times):
        start = time.perf_counter()
        run()
        spent.append((time.perf_counter() - start) * 1000)
    return statistics.median(spent)


class _Source:
    def make(self, nbytes: int) -> int:
        import torch

        self.tensor = torch.ones(nbytes, dtype=torch.uint8)
        return nbytes

    def tensors(self) -> list[Any]:
        return [self.tensor]


class _Sink:
    def size(self, tensors: list[Any]) -> int:
        return sum(t.numel() * t.element_size() for t in tensors)


def transfer_figures(specs: list[TransportSpec]) -> dict[str, tuple[float, float]]:
    """Per transport: (latency in ms of a 1-byte transfer, bandwidth in MB/s of a 16 MiB one) between two actors
    on this node (one pair for every transport: starting actors costs more than the transfers)."""
    import ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    here = NodeAffinitySchedulingStrategy(ray.get_runtime_context().get_node_id(), soft=False)

    def start(cls: type) -> Any:
        actor: Any = ray.remote(enable_tensor_transport=True)(cls)  # type: ignore[call-overload,unused-ignore]
        return actor.options(num_cpus=0, scheduling_strategy=here).remote()

    source, sink = start(_Source), start(_Sink)
    try:
        def one(name: str, nbytes: int) -> float:
            ref = source.tensors.options(tensor_transport=name).remote()
            ray.wait([ref], timeout=TRANSFER_TIMEOUT_S)  # the sender's part done: time the move itself
            began = time.perf_counter()
            got = ray.get(sink.size.remote(ref), timeout=TRANSFER_TIMEOUT_S)
            spent = time.perf_counter() - began
            if got != nbytes:
                raise CheckFailed(f"transport {name}: {got} bytes arrived of {nbytes}")
            return spent

        figures = {}
        for spec in specs:
            ray.get(source.make.remote(1), timeout=TRANSFER_TIMEOUT_S)
            one(spec.name, 1)  # the first transfer sets the path up: not a figure
            latency = statistics.median(one(spec.name, 1) for _ in range(LATENCY_TRANSFERS)) * 1000
            ray.get(source.make.remote(BANDWIDTH_BYTES), timeout=TRANSFER_TIMEOUT_S)
            best = min(one(spec.name, BANDWIDTH_BYTES) for _ in range(BANDWIDTH_TRANSFERS))
            figures[spec.name] = (latency, BANDWIDTH_BYTES / best / 1e6)
        return figures
    finally:
        # Exit after the queued work (as RAC301's actors do): a kill while Ray's transfer monitor still tracks a
        # transfer makes it abort at the driver's exit (a minute's wait for the GCS); kill only what is stuck.
        ends = [actor.__ray_terminate__.remote() for actor in (source, sink)]
        _, stuck = ray.wait(ends, num_returns=len(ends), timeout=TRANSFER_TIMEOUT_S)
        if stuck:
            for actor in (source, sink):
                ray.kill(actor)


def declared_baseline(subject: Subject) -> held.Baseline | None:
    """The baseline the plugin declares for this run's hardware (``rayaccel_performance_baseline``); None when it
    declares none. A malformed declaration, or two for one hardware, fails the check."""
    problems: list[Problem] = []
    declared = subject.manager.answer(subject.name, hookspec.PERFORMANCE_BASELINE, problems)
    if problems:
        raise CheckFailed([p.render() for p in problems])
    mine = [b for b in declared if b.hardware == subject.hardware]
    if len(mine) > 1:
        raise CheckFailed(f"rayaccel_performance_baseline declares {len(mine)} baselines for {subject.hardware} "
                          "hardware: declare one per hardware")
    if not mine:
        return None
    return held.Baseline({subject.name: dict(mine[0].figures)}, mine[0].tolerance_percent / 100,
                         f"the plugin's declared baseline for {subject.hardware} hardware")


def _baseline(subject: Subject) -> held.Baseline:
    """What this run's figures are held to: the previous report's figures of this plugin
    (``--conformance-baseline``), else the plugin's declared baseline, else nothing (recorded only)."""
    given = held.BASELINE  # set per run by --conformance-baseline
    if given.source and subject.name in given.values:
        return given
    return declared_baseline(subject) or held.Baseline(tolerance=given.tolerance)


def _host(subject: Subject) -> tuple[Host, str]:
    if subject.hardware == "real":
        return RealHost(), "this machine"
    refs = sorted(subject.fixture_paths())
    if not refs:
        raise CheckFailed(f"plugin {subject.name} ships no fixtures to measure on")
    return simulated_host(subject.fixture(refs[0])), f"fixture {refs[0]}"


# A Ray check: it runs with RAC301 in the run's shared cluster, after the cheap checks, and only while the tier
# can still be reached (a plugin that fails a cheaper check pays no cluster for its figures).
@check("RAC310", uses_ray=True)
def performance(subject: Subject) -> Evidence:
    """Performance figures are measured and recorded, and none regresses beyond the tolerance from the baseline.

    Measured on the real machine with ``--conformance-hardware real``, else on the plugin's first fixture:
    the inventory build (median of 5, no metrics: what ``rayaccel start`` and every ``inspect`` pay), a
    monitor poll (an inventory build with metrics, as the health monitor polls), and for the reference
    ``RAYACCEL_SHM`` transport and each of the plugin's one-sided CPU transports, the latency of a 1-byte
    transfer and the bandwidth of a 16 MiB one between two Ray actors; and the node start of the plugin's
    first fixture (``rayaccel.ray.add_node``: the SDK's configuration with the inventory in isolated workers,
    Ray's processes, until the node is registered), as the run's cluster started it. Each figure goes into
    the report's ``figures``. Held to the baseline: a previous report's figures (``--conformance-baseline
    REPORT``), else the baseline the plugin declares for the run's hardware (``rayaccel_performance_baseline``,
    with its own tolerance); a figure worse than the baseline's by more than the tolerance
    (``--conformance-tolerance``, default 50 %; a time also by more than 2 ms) fails this check, naming the
    figure. Fix: find what made the named path slower (the plugin's transport, a vendor tool called per poll,
    a slow import in the node's workers), or, if the change is intended, grade against a new baseline report
    or declare new figures.
    """
    from rayaccel.inventory.transport_paths import REFERENCE
    from rayaccel.ray.transports import register_transports
    from rayaccel_conformance.checks.transport_contract import cannot_run_here
    from rayaccel_conformance.harness.raycluster import shared_cluster

    subject.family()
    baseline = _baseline(subject)  # a malformed declaration fails before anything is measured
    host, where = _host(subject)
    figures: list[dict[str, Any]] = []

    def add(name: str, value: float, unit: str, better: str) -> None:
        figures.append({"plugin": subject.name, "name": name, "value": round(value, 4), "unit": unit,
                        "better": better, "check": "RAC310", "baseline": None, "regressed": False})

    add("inventory build", _median_ms(lambda: subject.build(host, with_metrics=False), BUILDS), "ms", "lower")
    add("monitor poll", _median_ms(lambda: subject.build(host, with_metrics=True), BUILDS), "ms", "lower")
    started = _node_start_ms(subject)
    if started is not None:
        add("node start", started, "ms", "lower")
    problems: list[Problem] = []
    specs = [REFERENCE, *subject.manager.answer(subject.name, hookspec.TRANSPORTS, problems)]
    runnable = [s for s in specs if cannot_run_here(s) is None]
    not_run = [f"transport {s.name} not measured here: {cannot_run_here(s)}" for s in specs if s not in runnable]
    if runnable:
        shared_cluster().start()
        try:
            register_transports(subject.manager, [subject.name])
        except Exception as e:  # RAC301 names the registration failure; here it only stops the figures
            raise CheckFailed(f"transports do not register: {e}") from None
        for name, (latency, bandwidth) in transfer_figures(runnable).items():
            add(f"transport {name} latency", latency, "ms", "lower")
            add(f"transport {name} bandwidth", bandwidth, "MB/s", "higher")
    held.MEASURED[subject.name] = figures
    worse = held.held_to(subject.name, figures, baseline)
    against = (f"held to {baseline.source} (tolerance {baseline.tolerance:.0%})" if baseline.source
               else "no baseline given (--conformance-baseline) or declared (rayaccel_performance_baseline): "
                    "recorded only")
    if worse:
        raise CheckFailed([*worse, against])
    measured = {f["name"] for f in figures}
    unmeasured = sorted(set(baseline.values.get(subject.name, {})) - measured)
    if unmeasured:
        not_run.append(f"baseline figures not measured in this run: {', '.join(unmeasured)}")
    shown = "; ".join(f"{f['name']} {f['value']:.4g} {f['unit']}" for f in figures)
    return [f"on {where}: {shown}", against, *not_run]


def _node_start_ms(subject: Subject) -> float | None:
    """How long the run's cluster took to start the plugin's first fixture's node (None: no fixture started)."""
    from rayaccel_conformance.harness.raycluster import shared_cluster

    cluster = shared_cluster()
    cluster.nodes_for(subject)
    return next((cluster.start_ms[ref] for ref in sorted(subject.fixture_paths()) if ref in cluster.start_ms), None)
