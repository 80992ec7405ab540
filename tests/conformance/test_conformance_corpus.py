"""The suite's own quality, measured: a corpus of deliberately broken plugins, graded, with the kill rate printed.

Each plugin of ``rayaccel_testplugins.corpus`` is the healthy day-zero control with one realistic defect, and
declares the check and message fragment expected to kill it. All of them are graded through the same code
``pytest --conformance`` runs (``Subject.run``): check by check, on every fixture, watched for hook side
effects, until the check declared to kill it has (``FULLY_GRADED``: every check), by processes forked from
this one (``GRADERS``), a plugin at a time each. A mutant is first graded by its declared killer alone, in a
process forked from its grader (``killer_first``; one fork serves attempt after attempt while each is kept);
that verdict is kept only where the killer named the defect and the attempt changed nothing the earlier checks
could have seen differently (the plugin's state, side effects, threads), else the fork is dropped and the
mutant graded in the suite's order, as before. The Ray checks
run in this process, in ONE shared Ray cluster, and only for plugins no cheaper check killed (the control,
and any survivor): a kill by any check is a kill, so the order changes cost, not verdicts.
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import multiprocessing
import os
import pickle
import queue
import sys
import tempfile
import threading
import time
import traceback
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from summary import SUMMARY_PROPERTY

from rayaccel.hosts.simulated import SIMULATED_HANG_SECONDS, SimulatedHost
from rayaccel.plugins.manager import PluginManager
from rayaccel.support.bounded import idle_thread_idents, reuse_threads
from rayaccel_conformance.checks import all_checks
from rayaccel_conformance.harness.subject import Outcome, Subject
from rayaccel_conformance.registry import CHECKS, Check
from rayaccel_conformance.report.tiers import Result, reached_tier
from rayaccel_testplugins import corpus

#: The share of the corpus the suite must kill.
TARGET_KILL_RATE = 0.95
#: The hook budget of the graded manager (the SDK's default is 10 s; the corpus's tool calls fit 5 s).
HOOK_TIMEOUT_S = 5.0
CONTROL = "c-healthy"
for _module in corpus.MUTANT_MODULES:  # mutants in modules of their own (import defects, the contract's)
    importlib.import_module(_module)
MUTANTS = [name for name in corpus.PLUGINS if name != CONTROL]
#: Loads the plugin in a fresh interpreter (2-3 s each): run for the control and the mutants it is declared
#: to kill; a mutant killed elsewhere is a kill either way, so leaving it out changes cost, not verdicts.
FRESH_PROCESS_CHECK = "RAC112"
#: Graded by every check (the tests below read what each check said about them); every other mutant is graded
#: in the suite's order until its declared killer has failed it: the later checks could add kills, not undo one,
#: so stopping there changes cost (two thirds of the grading), not verdicts or the evidence the tests read.
FULLY_GRADED = {CONTROL, "c-labels-sort-input", "c-discover-fails-later"}


#: The checks the corpus shows failing: each is the declared killer of at least one mutant.
KILLERS = {"RAC114", "RAC103", "RAC104", "RAC105", "RAC106", "RAC107", "RAC109", "RAC110", "RAC111", "RAC112", "RAC201",
           "RAC202", "RAC203", "RAC204", "RAC205", "RAC206", "RAC209", "RAC210", "RAC211", "RAC212", "RAC213", "RAC214",
           "RAC215", "RAC216", "RAC217", "RAC218", "RAC219", "RAC220", "RAC305", "RAC113", "RAC221", "RAC222", "RAC223",
           "RAC224", "RAC225", "RAC226", "RAC240", "RAC241", "RAC242", "RAC243", "RAC244", "RAC245", "RAC246", "RAC260",
           "RAC250", "RAC251", "RAC252", "RAC253", "RAC261", "RAC254", "RAC256", "RAC257", "RAC258", "RAC233",
           "RAC255", "RAC264", "RAC265", "RAC266", "RAC267", "RAC268", "RAC269", "RAC270", "RAC271",
           "RAC272", "RAC232", "RAC230", "RAC273"}


def failures(subject: Subject) -> dict[str, list[str]]:
    """check id -> evidence of every failed (or errored) outcome of that check."""
    found: dict[str, list[str]] = {}
    for o in subject.outcomes:
        if o.outcome in ("failed", "error"):
            found.setdefault(o.check_id, []).extend(o.evidence)
    return found


@contextlib.contextmanager
def _ray_node_env(names: list[str]) -> Iterator[None]:
    """The env Ray nodes load these corpus plugins by (import paths); nothing else installed may join them."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("RAYACCEL_PLUGINS", corpus.plugins_env(names))
        mp.setenv("RAYACCEL_NO_AUTOLOAD", "1")
        for var in ("RAYACCEL_DISABLE", "RAYACCEL_SIMULATE", "RAYACCEL_SIMULATE_FAULT_FILE", "RAY_ADDRESS"):
            mp.delenv(var, raising=False)
        yield


def run_on_every_fixture(subject: Subject, check: Check) -> None:
    refs: list[str | None] = [*subject.fixture_paths()] or [None]
    for ref in refs if check.scope == "fixture" else [None]:
        subject.run(check, ref)


def _callable_state(value: object) -> object:
    """What a function keeps between calls: its mutable defaults, its closure's cells, an lru_cache's contents."""
    value = getattr(value, "__func__", value)  # a staticmethod's or classmethod's function
    kept: list[object] = []
    if isinstance(value, functools._lru_cache_wrapper):
        kept.append(value.cache_info())
    value = getattr(value, "__wrapped__", value)
    kept += [getattr(value, "__defaults__", None), getattr(value, "__kwdefaults__", None)]
    kept += [cell.cell_contents for cell in getattr(value, "__closure__", None) or ()
             if not callable(cell.cell_contents)]
    return kept


def _state_of(value: object) -> bytes | str:
    if (callable(value) and not isinstance(value, type)) or isinstance(value, (staticmethod, classmethod)):
        value = _callable_state(value)
    elif isinstance(value, property):
        value = [_callable_state(f) for f in (value.fget, value.fset)]
    elif isinstance(value, type) or type(value).__name__ == "module":
        return "-"  # a class is fingerprinted as the plugin's own (its MRO), a module as itself
    try:
        return pickle.dumps(value)
    except Exception:  # something in it cannot be pickled (a lock, a thread): what it holds, part by part
        if isinstance(value, dict):
            return repr([(repr(key), _state_of(item)) for key, item in value.items()])
        if isinstance(value, (list, tuple, set, frozenset)):
            return repr([_state_of(item) for item in value])
        if hasattr(value, "__dict__") and not callable(value):
            return repr((type(value).__qualname__, _state_of(vars(value))))
        return repr(value)


State = list[tuple[str, bytes | str]]


def shared_state() -> State:
    """What any plugin's hooks could change in this process: the test plugins' module globals (their caches,
    function defaults and closures) and the threads alive (the SDK's kept ones, waiting for the next bounded call,
    are no one's: reuse_threads)."""
    state: State = []
    for module_name, module in sorted(sys.modules.items()):
        if module_name.startswith("rayaccel_testplugins"):
            state += [(f"{module_name}.{key}", _state_of(value)) for key, value in vars(module).items()
                      if not key.startswith("__")]
    kept = idle_thread_idents()
    state.append(("threads", repr(sorted(t.ident or 0 for t in threading.enumerate() if t.ident not in kept))))
    return state


def plugin_state(subject: Subject, shared: State | None = None) -> State:
    """Everything a mutant's hooks could keep between calls: the plugin object, its classes, the problems it left
    with its manager, and ``shared`` (:func:`shared_state`, taken now where None). Equal before and after a
    grading: the hooks answered as functions of their inputs."""
    plugin = corpus.PLUGINS[subject.name]
    state = [("instance", _state_of(vars(plugin)))]
    for cls in type(plugin).__mro__[:-1]:
        state += [(f"{cls.__qualname__}.{key}", _state_of(value)) for key, value in vars(cls).items()
                  if not key.startswith("__")]  # Python's own (pickle's __slotnames__, cached at a first copy)
    state.append(("problems", repr([p for p in subject.manager.problems if p.plugin == subject.name])))
    return state + (shared_state() if shared is None else shared)


def _killer_alone(subject: Subject, shared: State | None = None) -> tuple[list[tuple[Any, ...]] | None, State]:
    """The declared killer alone, on every fixture; its outcomes, only if it failed the plugin naming the defect
    and changed nothing the earlier checks could see (else None), and the process's :func:`shared_state` after it.
    ``shared``: that state as it is now (taken after the attempt before, where nothing ran since), else taken."""
    check_id, fragment = corpus.PLUGINS[subject.name].KILLED_BY  # type: ignore[misc]
    before, seen = plugin_state(subject, shared), len(subject.side_effects())
    run_on_every_fixture(subject, _CHECKS[check_id])
    named = any(fragment in line for line in failures(subject).get(check_id, []))
    after = shared_state()
    unchanged = len(subject.side_effects()) == seen and plugin_state(subject, after) == before
    return ([(o.check_id, o.fixture, o.outcome, o.evidence, o.duration_s) for o in subject.outcomes]
            if named and unchanged else None), after


def _attempts(subjects: dict[str, Subject], asked: Any) -> None:
    """In a process forked for the attempts: each mutant named is graded by its declared killer alone, and its
    outcomes answered (None where not kept); after an attempt not kept the process may differ from the grader it
    was forked from, so it ends there (the next attempt gets a fresh fork). The module globals and threads after
    one attempt kept are those before the next (nothing runs between but this loop's reading of the pipe): taken
    once, not twice (their pickles were a quarter of a grader's CPU)."""
    reuse_threads()  # as in the grader it was forked from (whose kept threads a fork does not inherit)
    shared: State | None = None
    for name in iter(asked.recv, None):
        rows, shared = _killer_alone(subjects[name], shared)
        asked.send(rows)
        if rows is None:
            return


_CHECKS = {check.id: check for check in all_checks()}
#: How long a killer-first attempt may take before the mutant is graded in the suite's order instead.
ATTEMPT_TIMEOUT_S = 60.0


class AttemptProcess:
    """The process a grader's killer-first attempts run in, forked from the grader (whatever an attempt does to
    its state, the in-order grading that may follow starts without it). One fork serves attempt after attempt
    while each is kept (the plugin's state, its side effects and the threads alive as they were: the process is
    the grader as forked, as far as any check can see), saving a fork per mutant; it is dropped after an attempt
    not kept, and whenever the grader itself grades a plugin (the next attempt forks the grader as it is then)."""

    def __init__(self, subjects: dict[str, Subject]) -> None:
        self.subjects = subjects
        self.process: Any = None
        self.conn: Any = None

    def attempt(self, subject: Subject) -> list[tuple[Any, ...]] | None:
        if self.process is None:
            context = multiprocessing.get_context("fork")
            self.conn, theirs = context.Pipe()
            self.process = context.Process(target=_attempts, args=(self.subjects, theirs),
                                           name=f"{subject.name}-killer-first")
            self.process.start()
            theirs.close()
        try:
            self.conn.send(subject.name)
            rows: list[tuple[Any, ...]] | None = self.conn.recv() if self.conn.poll(ATTEMPT_TIMEOUT_S) else None
        except (EOFError, OSError):  # the attempt died before answering
            rows = None
        if rows is None:
            self.drop()
        return rows

    def drop(self, wait: bool = False) -> None:
        """End the process (``wait``: let it finish, after the last attempt kept), if there is one."""
        if self.process is None:
            return
        with contextlib.suppress(OSError):
            self.conn.send(None)
        self.process.join(GRADER_EXIT_TIMEOUT_S if wait else 0)
        if self.process.is_alive():
            self.process.kill()
            self.process.join()
        self.conn.close()
        self.process = self.conn = None


def killer_first(subject: Subject, attempts: AttemptProcess) -> bool:
    """Grade a mutant by its declared killer alone, in a process forked from this one (``attempts``). Kept (the
    outcomes added, True) only where the killer failed it naming the defect while the plugin's state, its side
    effects and the threads alive stayed as they were: its hooks answered as functions of their inputs, so the
    checks the suite runs before the killer could add kills, not change what the killer found."""
    plugin = corpus.PLUGINS[subject.name]
    if plugin.KILLED_BY is None or _CHECKS[plugin.KILLED_BY[0]].uses_ray:
        return False
    rows = attempts.attempt(subject)
    if rows is None:
        return False
    subject.outcomes.extend(Outcome(*row) for row in rows)
    return True


def grade_without_ray(subject: Subject, attempts: AttemptProcess) -> bool:
    """The checks that need no Ray, in the suite's order, on every fixture, until the declared killer has failed
    the plugin (every one for ``FULLY_GRADED``); a mutant the killer alone kills as it would in that order
    (``killer_first``) is graded by it alone (then True)."""
    if subject.name not in FULLY_GRADED and killer_first(subject, attempts):
        return True
    attempts.drop()  # graded here: a later attempt starts from this process as it is then
    killer = (corpus.PLUGINS[subject.name].KILLED_BY or ("",))[0]
    for check in (c for c in all_checks() if not c.uses_ray):
        if check.id == FRESH_PROCESS_CHECK and subject.name != CONTROL and killer != check.id:
            continue
        run_on_every_fixture(subject, check)
        if check.id == killer and killer in failures(subject) and subject.name not in FULLY_GRADED:
            break
    return False


#: Processes grading the plugins without Ray, forked from this one once the corpus is imported and registered
#: (imports paid once), each a whole plugin at a time, as this process did all of them. The grading is mostly
#: waiting (a simulated hang blocks 0.2 s of real time, RAC204 about 1 s per plugin; a third of its wall time
#: is CPU, a fresh-clone run took 306 s), so the graders' waits overlap. Three: about a core's CPU.
GRADERS = 3
#: What checks import on their first use, imported here before the graders fork, once, not in every grader and every
#: attempt forked from one: torch (RAC305 asks ray.util.collective, which imports it: 2-3 s of CPU a fork), Hypothesis's
#: property checks, networkx (RAC202's links).
FIRST_USE_IMPORTS = ("ray.util.collective.types", "rayaccel_conformance.checks.properties", "networkx")
#: The longest the graders may take together (pytest-timeout ends the test at 600 s, set-up included).
GRADING_TIMEOUT_S = 480.0
#: How long a grader may take to exit after its last answer (threads a mutant's hooks left must end first).
GRADER_EXIT_TIMEOUT_S = 30.0


def leftovers() -> list[str]:
    """What the mutants' side effects left in this process: the env var one sets, the sleeping child one spawns."""
    import psutil

    left = ["ACME_DRIVER_VERSION is in os.environ"] if "ACME_DRIVER_VERSION" in os.environ else []
    for child in psutil.Process().children(recursive=True):
        with contextlib.suppress(psutil.Error):
            if "time.sleep(3)" in " ".join(child.cmdline()):
                left.append(f"child {child.pid} is running: {' '.join(child.cmdline())}")
    return left


def _grader(subjects: dict[str, Subject], names: Any, answers: Any) -> None:
    """A forked grader: the plugins named in ``names`` graded, each one's outcomes sent back; at the end (None),
    what the side-effect watch left in this process."""
    reuse_threads()  # hook calls in kept threads, as `pytest --conformance` makes them (a thread started per call
    # was a sixth of a grader's CPU)
    attempts = AttemptProcess(subjects)
    try:
        for name in iter(names.get, None):
            subject = subjects[name]
            alone = grade_without_ray(subject, attempts)
            answers.put(("graded", name, [(o.check_id, o.fixture, o.outcome, o.evidence, o.duration_s)
                                          for o in subject.outcomes], alone))
        attempts.drop(wait=True)
        answers.put(("done", multiprocessing.current_process().name, leftovers()))
    except BaseException:
        answers.put(("raised", multiprocessing.current_process().name, traceback.format_exc()))


def longest_first(names: list[str]) -> list[str]:
    """The fully graded plugins first, then those with most fixtures (the grading's tail is its last plugin);
    counted from the files the corpus wrote, not by a hook (this process grades nothing)."""
    return sorted(names, key=lambda n: (n not in FULLY_GRADED, -len(list((corpus.FIXTURE_ROOT / n).glob("*")))))


def grade_in_graders(subjects: dict[str, Subject], forked: Callable[[], None],
                     waiting: Callable[[], None]) -> tuple[list[str], set[str]]:
    """Every plugin of ``subjects`` graded without Ray by ``GRADERS`` forked processes, their outcomes added to
    ``subjects``; ``forked`` is called once the graders run, ``waiting`` while they do. Returns what the
    side-effect watch left in the graders (nothing, if it restored each process) and the mutants graded by
    their killer alone."""
    for module in FIRST_USE_IMPORTS:
        importlib.import_module(module)
    context = multiprocessing.get_context("fork")  # the corpus, imported and registered, is inherited as is
    names, answers = context.Queue(), context.Queue()
    graders = [context.Process(target=_grader, args=(subjects, names, answers), name=f"corpus-grader-{i}")
               for i in range(GRADERS)]
    for grader in graders:
        grader.start()
    left: list[str] = []
    alone: set[str] = set()
    done = 0
    try:
        for name in [*longest_first(list(subjects)), *[None] * len(graders)]:
            names.put(name)
        forked()
        deadline = time.monotonic() + GRADING_TIMEOUT_S
        while done < len(graders):
            try:
                answer = answers.get(timeout=0.5)
            except queue.Empty:
                dead = [f"{g.name} (exit code {g.exitcode})" for g in graders if g.exitcode not in (None, 0)]
                if dead or time.monotonic() > deadline:
                    raise RuntimeError(f"grading the corpus: {', '.join(dead) or 'the graders'} ended without "
                                       f"answering, or took over {GRADING_TIMEOUT_S:g}s") from None
                waiting()
                continue
            if answer[0] == "raised":
                raise RuntimeError(f"grading the corpus: {answer[1]} raised:\n{answer[2]}")
            if answer[0] == "done":
                done += 1
                left += [f"{answer[1]}: {what}" for what in answer[2]]
                continue
            subjects[answer[1]].outcomes.extend(Outcome(*row) for row in answer[2])
            if answer[3]:
                alone.add(answer[1])
    finally:
        for grader in graders:
            grader.join(GRADER_EXIT_TIMEOUT_S if done == len(graders) else 0)
            if grader.is_alive():
                grader.kill()
                grader.join()
    return left, alone


@pytest.fixture(scope="module")
def graded() -> Iterator[dict[str, Any]]:
    from rayaccel_conformance.harness.raycluster import shared_cluster, shutdown_shared_cluster

    started = time.monotonic()
    manager = PluginManager(autoload=False, timeout=HOOK_TIMEOUT_S)
    for name, plugin in corpus.PLUGINS.items():
        manager.register(plugin, name)
    subjects = {name: Subject(name, manager) for name in corpus.PLUGINS}

    def prestart() -> None:
        with _ray_node_env([CONTROL]):
            shared_cluster().prestart(subjects[CONTROL])

    try:
        # The control survives every cheaper check: its nodes start (in the cluster's own process, with the env
        # they load it by), and this process connects as their driver once the head is up, while the graders
        # work (forked first: they inherit no Ray, and grade in this process's env, as it did itself).
        left, alone = grade_in_graders(subjects, prestart, shared_cluster().connect_if_ready)
    except BaseException:
        shutdown_shared_cluster()
        raise
    without_ray_s = time.monotonic() - started
    survivors = [s for s in subjects.values() if not failures(s)]
    if [s.name for s in survivors] != [CONTROL]:
        shutdown_shared_cluster()  # a mutant survived too: nodes that load it need a cluster started for it
    with _ray_node_env([s.name for s in survivors]):
        try:
            for subject in survivors:
                for check in (c for c in all_checks() if c.uses_ray):
                    for ref in subject.fixture_paths():
                        subject.run(check, ref)
                if shared_cluster().cluster is not None:
                    shared_cluster().release(subject)
        finally:
            shutdown_shared_cluster()
    yield {"subjects": subjects, "without_ray_s": without_ray_s, "total_s": time.monotonic() - started,
           "left_in_graders": left, "killer_alone": alone}
    for name in ("c-discover-writes-cache-discovery-cache.json", "c-catalog-writes-back-skus.json"):
        (Path(tempfile.gettempdir()) / name).unlink(missing_ok=True)  # what two mutants wrote


def test_the_corpus_has_at_least_40_mutants_each_declaring_its_defect_and_killer() -> None:
    assert len(MUTANTS) >= 40
    for name in MUTANTS:
        plugin = corpus.PLUGINS[name]
        assert plugin.DEFECT and plugin.DEFECT != corpus.Healthy.DEFECT, name
        assert plugin.KILLED_BY is not None and plugin.KILLED_BY[0] in {c.id for c in all_checks()}, name
        assert type(plugin).__mro__[1] is corpus.Healthy, f"{name}: one defect, on the healthy base"
    # One defect each: no two mutants are the same defect.
    assert len({corpus.PLUGINS[n].DEFECT for n in MUTANTS}) == len(MUTANTS)
    assert {corpus.PLUGINS[n].KILLED_BY[0] for n in MUTANTS} == KILLERS  # type: ignore[index]


def test_the_kill_rate_is_printed_and_at_least_95_percent(graded: dict[str, Any],
                                                          record_property: Callable[[str, object], None]) -> None:
    subjects = graded["subjects"]
    killed = [n for n in MUTANTS if failures(subjects[n])]
    survived = sorted(set(MUTANTS) - set(killed))
    rate = len(killed) / len(MUTANTS)
    # Printed in the run's summary (tests/conftest.py), also when pytest-xdist runs this test in a worker.
    record_property(SUMMARY_PROPERTY,
                    f"broken-plugin corpus: {len(killed)}/{len(MUTANTS)} killed, kill rate {rate:.1%} "
                    f"(target {TARGET_KILL_RATE:.0%}); graded in {graded['total_s']:.0f}s "
                    f"({graded['without_ray_s']:.0f}s without Ray, in {GRADERS} graders; "
                    f"{len(graded['killer_alone'])} mutants by their killer alone)"
                    + (f"; survivors: {', '.join(survived)}" if survived else ""))
    assert rate >= TARGET_KILL_RATE, f"survivors: {survived}"


@pytest.mark.parametrize("name", MUTANTS)
def test_each_kill_names_the_defect(graded: dict[str, Any], name: str) -> None:
    check_id, fragment = corpus.PLUGINS[name].KILLED_BY  # type: ignore[misc]
    failed = failures(graded["subjects"][name])
    assert check_id in failed, f"{name} ({corpus.PLUGINS[name].DEFECT}) is not failed by {check_id}: {failed}"
    assert any(fragment in line for line in failed[check_id]), failed[check_id]


def test_the_healthy_control_reaches_supported_with_the_ray_checks_run(graded: dict[str, Any]) -> None:
    subject = graded["subjects"][CONTROL]
    assert failures(subject) == {}
    required: dict[str, set[str]] = {}
    for c in all_checks():
        required.setdefault(c.tier, set()).add(c.id)
    results = [Result(o.check_id, CHECKS[o.check_id].tier, o.outcome, o.fixture, o.evidence) for o in subject.outcomes]
    tier, why = reached_tier(results, required)
    assert tier == "supported" and "RAC303 skipped" in why
    outcomes = {o.check_id: o for o in subject.outcomes}
    assert outcomes["RAC108"].outcome == "passed" and outcomes["RAC208"].outcome == "passed"
    # A Ray task ran on a unit other than the one beside it, each seeing only its own unit.
    assert any("a task got unit" in line for line in outcomes["RAC108"].evidence)
    assert outcomes["RAC204"].outcome == "passed"  # the control reads acme-smi: there is something to test


def test_a_failure_names_the_hook_and_the_defect_not_a_downstream_symptom(graded: dict[str, Any]) -> None:
    # A labels hook sorting its input in place: every check that fails says so, and none blames discovery.
    failed = failures(graded["subjects"]["c-labels-sort-input"])
    assert "RAC109" in failed
    lines = [line for evidence in failed.values() for line in evidence]
    assert lines and all(line.startswith("side effect: c-labels-sort-input: rayaccel_labels") for line in lines)
    # Its inputs were copies: the inventory the SDK built is unchanged, so discovery's order still matches.
    assert not any("device ids" in line or "order" in line for line in lines)


def test_a_discovery_failing_from_its_second_call_is_quoted_by_every_check_it_fails(graded: dict[str, Any]) -> None:
    # It passed RAC105 on its first call; every later check that finds no devices says why, quoting it.
    failed = failures(graded["subjects"]["c-discover-fails-later"])
    lines = [line for evidence in failed.values() for line in evidence]
    assert "RAC105" not in failed and {"RAC110", "RAC203", "RAC212"} <= set(failed)
    assert lines and all("raised RuntimeError: acme-smi session 0x2f already closed" in line for line in lines)


def test_links_reported_twice_are_named_duplicates_and_the_count_blamed_on_them(graded: dict[str, Any]) -> None:
    evidence = failures(graded["subjects"]["c-topology-links-both-ways"])["RAC202"]
    assert any("reported twice, as a duplicate" in line for line in evidence)
    assert any("reports 12 (a consequence of the 6 duplicate links above)" in line for line in evidence)


def test_a_simulated_hang_charges_the_whole_timeout_asked() -> None:
    from rayaccel.hosts.fixtures import load_fixture
    from rayaccel.hosts.seam import CommandTimeout

    fixture = load_fixture(next(iter(corpus.FIXTURE_ROOT.glob(f"{CONTROL}/*.yaml"))))
    host = SimulatedHost(fixture, faults=["smi-hang"])
    started = time.monotonic()
    for _ in range(3):
        with pytest.raises(CommandTimeout, match="within 120s"):
            host.run(corpus.TOOL, timeout=120)
    assert time.monotonic() - started < 3 * SIMULATED_HANG_SECONDS + 2  # fast in real time ...
    assert host.skipped_wait_s == pytest.approx(3 * (120 - SIMULATED_HANG_SECONDS))  # ... 360 s in host time


def test_the_side_effect_watch_restores_the_process(graded: dict[str, Any]) -> None:
    # The mutants that set env vars, wrote files and spawned children did not leave their effects behind, in the
    # graders that ran their hooks (as each finished) or in this process (the control's Ray checks).
    assert graded["left_in_graders"] == []
    assert leftovers() == []
