"""Health as a function of the host, not of the polls before (supported tier, issue 46): RAC240.

A health monitor polls the same plugin in one process for as long as the node lives, so an answer kept from
an earlier poll (a cache keyed on the device, a rate limit on the clock) or computed from what changed since
the last poll (a counter's delta) is right on the first poll and wrong on every later one. RAC203 sees only
the symptom ("expected unhealthy, got healthy"); this check names the cause by comparing the suite's own
polls with each other and with a process that never polled before.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path

from rayaccel.hosts.seam import HostError, run_bounded
from rayaccel.records import NodeInventory
from rayaccel.simulation.host_factory import simulated_host
from rayaccel_conformance.harness.fresh_process import PROBE_TIMEOUT_S, ProbeFailed, import_target
from rayaccel_conformance.harness.subject import Subject
from rayaccel_conformance.registry import CheckFailed, Evidence, NotApplicable, check

#: Faults whose tool hangs are RAC204's to time; their health is whatever the timeout leaves.
UNTIMED_KINDS = ("tool-hang",)

# Runs in a fresh interpreter: the plugin's first poll ever, of one fault state of one fixture.
FIRST_POLL = r'''
import importlib, json, sys
from rayaccel.hosts.fixtures import load_fixture
from rayaccel.inventory.builder import InventoryBuilder
from rayaccel.plugins.manager import PluginManager
from rayaccel.simulation.host_factory import simulated_host

module_name, attr, plugin_name, fixture_path, fault = sys.argv[1:6]
module = importlib.import_module(module_name)
manager = PluginManager(autoload=False)
manager.register(getattr(module, attr) if attr else module, plugin_name)
inventory = InventoryBuilder(manager, [plugin_name]).build(
    simulated_host(load_fixture(fixture_path), faults=[fault]), with_metrics=False)
family = next((f for f in inventory.families if f.plugin == plugin_name), None)
states = {h.device: h.state for h in family.health} if family else {}
print("RAYACCEL-FIRST-POLL " + json.dumps(states), flush=True)
'''


def health_states(subject: Subject, inventory: NodeInventory) -> dict[str, str]:
    """Device id -> health state of this plugin's family in an inventory."""
    family = inventory.family(subject.family().name)
    return {h.device: h.state for h in family.health} if family else {}


def first_poll(subject: Subject, fixture_path: Path, fault: str) -> dict[str, str]:
    """The health a process that never polled before answers for ``fault`` on the fixture."""
    module, attr = import_target(subject.manager.plugin(subject.name).module)
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAYACCEL_")}
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)  # the suite's own path: the same plugin
    argv = [sys.executable, "-c", FIRST_POLL, module, attr, subject.name, str(fixture_path), fault]
    try:
        result = run_bounded(argv, env, PROBE_TIMEOUT_S)
    except HostError as e:
        raise ProbeFailed(f"the fresh process did not finish: {e}") from None
    line = next((ln for ln in result.stdout.splitlines() if ln.startswith("RAYACCEL-FIRST-POLL ")), None)
    if line is None:
        tail = (result.stderr.strip().splitlines() or ["(no output)"])[-1]
        raise ProbeFailed(f"the fresh process exited {result.returncode} without an answer: {tail[:200]}")
    states: dict[str, str] = json.loads(line.split(" ", 1)[1])
    return states


def changed(before: dict[str, str], after: dict[str, str]) -> list[str]:
    """'<device>: <state> -> <state>' for each device whose state differs (a device gone counts as 'absent')."""
    return [f"{d}: {before.get(d, 'absent')} -> {after.get(d, 'absent')}"
            for d in sorted({*before, *after}) if before.get(d) != after.get(d)]


@check("RAC240", scope="fixture")
def health_answers_the_host_not_the_last_poll(subject: Subject, fixture: str | None) -> Evidence:
    """A device's health answers the host it is polled on, never an earlier poll: a fault polled twice answers
    the same, and as a process that never polled before answers it.

    A health monitor polls one plugin in one long-lived process. For each declared fault of the fixture the
    suite polls the healthy machine, switches the fault on (through the fault file, as on a live node) and
    polls twice with nothing else changed: the two answers must agree (health that holds only on the poll
    where a counter grew flaps between unhealthy and healthy while the fault lasts). Where the answer in the
    suite's process differs from the fault's declared health, the suite asks a fresh interpreter to poll that
    fault state first: when the fresh answer differs from the suite's, the plugin answered from an earlier
    poll (a cache keyed on the device, an answer rate-limited on the clock), named with both answers. A
    plugin that misses the fault on a first poll as well is RAC203's to report. Fix: read every signal on
    every poll and derive health from its value, not from its change since the last poll; keep nothing
    across polls that the host's answer does not decide.
    """
    subject.family()
    fx = subject.fixture(fixture)
    faults = [f for f in fx.faults if f.kind not in UNTIMED_KINDS]
    if not faults:
        raise NotApplicable(f"{fx.ref} declares no fault to poll")
    assert fixture is not None
    wrong, done = [], []
    fd, fault_file = tempfile.mkstemp(prefix="rayaccel-conformance-", suffix=".faults")
    os.close(fd)
    try:
        host = simulated_host(fx, fault_file=fault_file)
        for fault in faults:
            where = f"{fx.ref}, fault {fault.name}"
            _switch(fault_file, "")
            subject.build(host, with_metrics=False)  # the healthy machine, polled just before
            _switch(fault_file, fault.name)
            first = subject.build(host, with_metrics=False)
            second = subject.build(host, with_metrics=False)
            if subject.discovery_failed(first, [*fx.expected.problems, *fault.expected.problem_codes]):
                continue  # a discovery that failed in this build is RAC105's and RAC203's, not this check's
            one, two = health_states(subject, first), health_states(subject, second)
            if flapped := changed(one, two):
                wrong.append(f"invariant health-holds-while-the-fault-does, {where}: polled twice with nothing "
                             f"changed, {flapped[0]}: health from what changed since the last poll (a counter's "
                             "delta) flaps while the fault lasts; derive it from the signal's value")
                continue
            declared = {d: s for d, s in fault.expected.health.items() if one.get(d, s) != s}
            if not declared:
                done.append(fault.name)
                continue
            fresh = first_poll(subject, subject.fixture_paths()[fixture], fault.name)
            stale = sorted(d for d in {*fresh, *one} if fresh.get(d) != one.get(d))
            if stale:
                device = stale[0]
                wrong.append(f"invariant health-answers-the-host, {where}: {device} is {one.get(device, 'absent')} "
                             "when polled after the healthy machine in one process, but "
                             f"{fresh.get(device, 'absent')} on a fresh process's first poll of the same state: "
                             "the answer was kept from an earlier poll (a cache or a rate limit across polls), not "
                             "read from the host")
            else:
                done.append(f"{fault.name} (missed on a first poll too: RAC203's)")
    finally:
        os.unlink(fault_file)
    if wrong:
        raise CheckFailed(wrong)
    if not done:
        raise NotApplicable(f"{fx.ref}: no fault left a discovery to poll health on")
    return f"{fx.ref}: each fault polled twice answers alike and as a first poll: {', '.join(done)}"


def _switch(path: str, fault: str) -> None:
    with open(path, "w", encoding="utf-8") as f:
        f.write(fault + ("\n" if fault else ""))
