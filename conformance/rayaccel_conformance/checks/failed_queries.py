"""A reading the vendor interface did not give on this poll is not published (RAC246, ``invariant
a-failed-query-gives-no-reading``; held-out round 15's ``j2``: a command-json bake publishing the last stats it read
again, as current, whenever its stats query failed, "no gap in dashboards").

A stats query fails on live nodes while the node keeps running: ``nvidia-smi`` exits 9 ("NVIDIA-SMI has failed because
it couldn't communicate with the NVIDIA driver") or 255 in the middle of an exporter's scrapes
(utkuozdemir/nvidia_gpu_exporter#65, #354), a library call raises (pynvml's ``NVMLError_Unknown``). A dashboard then
shows a gap, and an alert on a stale series can fire; a value kept from an earlier poll and published as this poll's
shows a device at work, cool or drawing power that nobody measured. Every fixture's stats answer, so one build never
takes that path; RAC204's failing tools fail discovery too, where the metrics hook is never asked.

The suite polls the metrics hook with the devices discovered before (as a monitor polls) on one simulated host, twice
over: the fixture's machine, or that machine with each gauge reading of one query doubled (or halved, as RAC223
scales a reading); then the same machine with that query failing (its command exiting 1 with a message on stderr,
the host changed under the process; a library's every call raising, on a session opened afresh). The failing poll's
gauges must be the same after either history: a sample that follows what an earlier poll read was not read on this
one. Counters and rates, which rightly depend on earlier polls, are RAC246's other invariants.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from rayaccel import hookspec
from rayaccel.hosts.fixtures import Fixture, HostState
from rayaccel.hosts.simulated import LIBRARY_FAULT_KEY, SimulatedHost
from rayaccel.outputs.metric_series import STANDARD
from rayaccel.records import Device, MetricSample
from rayaccel.simulation.host_factory import simulated_host
from rayaccel_conformance.checks.failed_listings import LIBRARY_ERROR
from rayaccel_conformance.checks.readings import Reading, candidates, host_readings, scale_of, scaled_host
from rayaccel_conformance.harness.subject import Subject

INVARIANT = "invariant a-failed-query-gives-no-reading"
#: The standard metrics the SDK exports as gauges that a single reading gives (rates need two polls: not these).
GAUGE_METRICS = tuple(sorted(name for name, (family, _) in STANDARD.items() if family.kind == "gauge"
                             and not name.startswith("interconnect_")))
#: Queries made to fail per fixture, those feeding the most gauge samples first.
MAX_QUERIES = 3
#: What a failing tool prints on stderr (the tool's name first), with exit status 1.
QUERY_ERROR = "failed to query the driver: resource temporarily unavailable"


@dataclass(frozen=True)
class Query:
    """One question the metrics hook asks the host: a command line (its JSON or CSV output) or a library."""

    where: str  # "command" or "library"
    key: str  # the command line, the library's name
    readings: tuple[tuple[Reading, float], ...]  # the gauge readings it answers, each with the factor it is scaled by

    def describe(self) -> str:
        return f"`{self.key}` exiting 1" if self.where == "command" else f"library {self.key} raising on every call"


def gauge_queries(host: dict[str, Any], samples: Sequence[MetricSample], devices: Sequence[Device]) -> list[Query]:
    """The queries whose answers feed the devices' gauge samples (as RAC223 attributes a sample to a reading), each
    with those readings and a factor keeping each a number of its kind; most readings first."""
    by_id = {d.id: d for d in devices}
    readings = host_readings(host)
    found: dict[tuple[str, str], dict[Reading, float]] = {}
    for sample in samples:
        device = by_id.get(sample.device)
        if sample.name not in GAUGE_METRICS or device is None or sample.value == 0:
            continue
        for reading, _ in candidates(sample, device, readings):
            k = scale_of(sample, reading)
            if reading.where == "file" or k is None:
                continue  # a file has no failing call of its own at the seam (its read is RAC211's to damage)
            where = "library" if reading.where == "library" else "command"
            found.setdefault((where, reading.key), {})[reading] = k
    ranked = sorted(found.items(), key=lambda item: -len(item[1]))
    return [Query(where, key, tuple(scaled.items())) for (where, key), scaled in ranked[:MAX_QUERIES]]


def failed_host(host: dict[str, Any], query: Query) -> dict[str, Any]:
    """The host state with ``query`` failing: its command exiting 1 with a message on stderr and nothing on stdout, or
    its library raising on every call."""
    if query.where == "library":
        libraries = dict(host["libraries"])
        libraries[query.key] = {**libraries[query.key], LIBRARY_FAULT_KEY: {"raise": LIBRARY_ERROR}}
        return {**host, "libraries": libraries}
    commands = dict(host["commands"])
    tool = query.key.split()[0]
    commands[query.key] = {"returncode": 1, "stdout": "", "stderr": f"{tool}: {QUERY_ERROR}\n"}
    return {**host, "commands": commands}


def read_otherwise_host(host: dict[str, Any], query: Query) -> dict[str, Any]:
    """The host state with each gauge reading ``query`` answers scaled by its factor."""
    state = host
    for reading, k in query.readings:
        state = scaled_host(state, reading, k)
    return state


def _machine(fx: Fixture, state: dict[str, Any]) -> Fixture:
    return fx.model_copy(update={"host": HostState.model_validate(state), "faults": []})


def _gauges(subject: Subject, host: SimulatedHost, devices: Sequence[Device]) -> dict[tuple[str, str], float]:
    samples = subject.manager.answer(subject.name, hookspec.METRICS, [], host=host, devices=list(devices)) or []
    return {(s.device, s.name): s.value for s in samples if s.name in GAUGE_METRICS}


def after_a_poll_of(subject: Subject, fx: Fixture, before: dict[str, Any], failing: dict[str, Any], query: Query,
                    devices: Sequence[Device]) -> dict[tuple[str, str], float]:
    """The gauges of a poll of ``failing`` that follows a poll of ``before`` in this process: on one host whose machine
    changes under it; a failing library on a session opened afresh (an open session keeps answering)."""
    host = simulated_host(_machine(fx, before))
    _gauges(subject, host, devices)
    if query.where == "library":
        host = simulated_host(_machine(fx, failing))
    else:
        host.change_machine(_machine(fx, failing))
    return _gauges(subject, host, devices)


def _show(value: float | None) -> str:
    return "no sample" if value is None else f"{value:g}"


def stale_failures(subject: Subject, fx: Fixture, samples: Sequence[MetricSample],
                   devices: Sequence[Device]) -> tuple[list[str], str | None]:
    """(What is wrong, what was polled) for the gauges of a poll whose query fails, after a poll of the fixture's
    machine and after one of that machine with the query's gauge readings scaled; ([], None) where no gauge sample is
    attributed to a command's or a library's reading."""
    base = fx.host.model_dump(mode="json")
    queries = gauge_queries(base, samples, devices)
    if not queries:
        return [], None
    wrong: list[str] = []
    for query in queries:
        failing = failed_host(base, query)
        one = after_a_poll_of(subject, fx, base, failing, query, devices)
        two = after_a_poll_of(subject, fx, read_otherwise_host(base, query), failing, query, devices)
        moved = [key for key in sorted({*one, *two}) if key not in one or key not in two
                 or not math.isclose(one[key], two[key], rel_tol=1e-6)]
        if not moved:
            continue
        device, name = moved[0]
        wrong.append(f"{INVARIANT}, {fx.ref}, {query.describe()} on the poll after one that read it: {name} of "
                     f"{device} is {_show(one.get((device, name)))} after a poll of the fixture's machine and "
                     f"{_show(two.get((device, name)))} after a poll of that machine with the query's gauge "
                     f"readings scaled ({len(moved)} gauge samples differ): the failing poll published a value kept "
                     "from an earlier poll as current; a query that fails gives no reading this poll (report the "
                     "failure with report_problem and leave its samples out), never the last one again")
    return wrong, f"{len(queries)} failing quer{'y' if len(queries) == 1 else 'ies'}, each after two histories"
