"""The conformance suite measured by a real mutation tool: ``make mutation`` (not part of ``make test``).

cosmic-ray mutates a plugin's module one mutation at a time, and the conformance suite is the test: a mutant
is killed when any of the suite's in-process checks (every check but the Ray ones, on every fixture of the
plugin, up to the target's tier) fails on it. The targets are every module of the five reference plugins and
of a fresh template bake (the real cookiecutter, into a scratch directory, graded to ``supported`` as the
bake's own CI grades it). Each run works on copies in a scratch directory (``PYTHONPATH`` ahead of the
editable install), so the checkout is never mutated, even for a moment, and another process importing the
plugin meanwhile sees the real one. Each plugin's unmutated code must pass first (a baseline that fails
would count every mutant killed); the baseline's per-check times order the checks of every mutant's test
cheapest first, so a killed mutant costs little.

Bounded: each mutant by ``--timeout`` (default 3 x its plugin's baseline, at least 60 s), the whole run by
``--budget``; ``--workers`` mutants at once, each worker on its own copy. Modules run largest gap first
(the most open survivors in the last result, then the most mutants), each module's mutants in a seeded
random order, taken round robin (a few of each module in turn), so a run cut by the budget or ``--sample`` is
a uniform sample of each module it reached, and the report says how many of how many ran. Survivors listed
in the triage file (``mutation_triage.yaml`` beside this script) as equivalent are excluded from the kill
rate with their reason, as are mutants inside annotations that are never evaluated (not run at all); every
other survivor is listed. The result is also written as JSON (``--results``).

``--own-tests`` adds a stage: each mutant the suite let survive is tested again by its plugin's own tests (the
reference plugin's ``tests/``, or the bake's), those that are cheap and in-process: every test not marked ``ray``,
``slow`` or ``alone`` (the project's markers for a real Ray node, more than a few seconds, an autoscaler's
cadence), stopping at the first failure, bounded by the mutant's timeout. A mutant they kill is counted apart
("killed by own tests"), never in the suite's kill rate: the report gives both rates per module.

    .venv/bin/python scripts/mutation.py                                       # every module, the whole budget
    .venv/bin/python scripts/mutation.py rayaccel_tpu.health bake:health        # some modules
    .venv/bin/python scripts/mutation.py --sample 40 --budget 1800 --workers 2  # a sample of each module
    .venv/bin/python scripts/mutation.py --survivors-of build/mutation/results.json --results after.json
    .venv/bin/python scripts/mutation.py --survivors-of before.json --sample 4 rayaccel_tpu.plugin  # and a sample
    .venv/bin/python scripts/mutation.py --own-tests --sample 4 rayaccel_tpu.health  # and the plugin's tests
    .venv/bin/python scripts/mutation.py --check PLUGIN [--tier supported]      # the test cosmic-ray runs
"""

from __future__ import annotations

import argparse
import ast
import concurrent.futures
import contextlib
import json
import os
import random
import shlex
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn

import psutil
import yaml

REPO = Path(__file__).resolve().parents[1]
TEMPLATE = REPO / "templates" / "vendor-plugin"
TRIAGE = Path(__file__).resolve().with_name("mutation_triage.yaml")
RESULTS = REPO / "build" / "mutation" / "results.json"
#: The default bake's plugin: its module and plugin name follow from cookiecutter.json's defaults.
BAKE_PACKAGE, BAKE_PLUGIN = "rayaccel_example", "example"
#: The five reference plugins: plugin name -> package (reference_plugins/<name>/src/<package>).
REFERENCE_PLUGINS = {name: f"rayaccel_{name}" for name in ("amd", "gaudi", "neuron", "nvidia", "tpu")}
#: The baseline's line coverage per check, written beside its timings (see ``measure``).
LINES = "lines.json"
#: Mutants per cosmic-ray session: small enough that a budget cut loses little, large enough to amortise init.
CHUNK = 4
#: The plugin's own tests the ``--own-tests`` stage runs: the cheap, in-process ones (pyproject's markers).
OWN_TESTS_SELECTION = "not ray and not slow and not alone"
#: An own-tests verdict that kills the mutant (a hang counts, as it does for the suite).
OWN_KILLS = ("killed", "timeout")


def fail(message: str) -> NoReturn:
    """Bad input or a refused run: one line on stderr, exit 2 (never a traceback)."""
    print(message, file=sys.stderr)
    raise SystemExit(2)


@dataclass(frozen=True)
class Target:
    """One module to mutate: ``bake:<module>`` for a module of the template bake, else ``<package>.<module>``."""

    module: str
    plugin: str
    tier: str = "certified"  # the highest tier whose checks grade a mutant

    @property
    def baked(self) -> bool:
        return self.module.startswith("bake:")

    @property
    def file_name(self) -> str:
        return self.module.split(":")[-1].split(".")[-1] + ".py"


@dataclass(frozen=True)
class Mutant:
    operator: str  # cosmic-ray's name, e.g. core/ReplaceComparisonOperator_Eq_Lt
    occurrence: int
    row: int
    col: int

    @property
    def key(self) -> tuple[str, int]:
        return self.operator, self.occurrence


@dataclass
class Outcome:
    """What became of one module's mutants in this run."""

    target: Target
    source: str
    mutants: list[Mutant]
    session: Path  # cosmic-ray's enumeration of them (copied for each chunk: an init costs seconds)
    planned: list[Mutant] = field(default_factory=list)
    results: dict[tuple[str, int], str] = field(default_factory=dict)  # key -> killed/timeout/survived/...
    own: dict[tuple[str, int], OwnResult] = field(default_factory=dict)  # a survivor -> its own tests' verdict
    own_tests: bool = False  # whether the run had the ``--own-tests`` stage


@dataclass(frozen=True)
class OwnResult:
    """What a plugin's own tests made of one mutant the suite let survive."""

    outcome: str  # killed, timeout (both: killed by own tests), survived, or error (pytest itself failed)
    detail: str = ""  # the first test that failed, or why pytest could not run


# --- the test cosmic-ray runs on each mutant -----------------------------------------------------------------

def check(plugin: str, tier: str = "certified", timings: Path | None = None, order: Path | None = None,
          lines: Path | None = None, package: str | None = None, mutated: Path | None = None,
          pristine: Path | None = None) -> int:
    """Run the suite's in-process checks up to ``tier`` on one plugin; 0 when every one passed or was skipped.
    ``timings``: write each check's seconds there (the baseline does; with ``lines`` and ``package``, also which
    check runs which line of the package, see :func:`measure`); ``order``: run the checks cheapest first by such a
    file (a mutant stops at the first check that fails, so the order changes only the cost); ``lines``,
    ``mutated`` and ``pristine``: a mutant's test runs only the checks that run a line it changed (see
    :func:`covering`)."""
    from rayaccel.plugins.manager import PluginManager
    from rayaccel_conformance.checks import all_checks
    from rayaccel_conformance.harness.subject import Subject
    from rayaccel_conformance.registry import tier_index

    checks = [c for c in all_checks() if not c.uses_ray and tier_index(c.tier) <= tier_index(tier)]
    if order is not None and order.is_file():
        cost: dict[str, float] = json.loads(order.read_text(encoding="utf-8"))
        checks.sort(key=lambda c: cost.get(c.id, 0.0))
    if timings is not None and lines is not None and package is not None:
        return measure(plugin, checks, package, timings, lines)
    if lines is not None and mutated is not None and pristine is not None:
        selected = covering([c.id for c in checks], json.loads(lines.read_text(encoding="utf-8")),
                            mutated.name, pristine.read_text(encoding="utf-8"), mutated.read_text(encoding="utf-8"))
        print(f"{len(selected)} of {len(checks)} checks run a line this mutant changed")
        checks = [c for c in checks if c.id in selected]
    subject = Subject(plugin, PluginManager(timeout=10.0))
    spent: dict[str, float] = {}
    for c in checks:
        started = time.perf_counter()
        refs: list[str | None] = [*subject.fixture_paths()] or [None]
        for ref in refs if c.scope == "fixture" else [None]:
            outcome = subject.run(c, ref)
            if outcome.outcome in ("failed", "error"):
                print(f"killed by {c.id} on {ref}: {outcome.evidence[0][:300] if outcome.evidence else ''}")
                return 1
        spent[c.id] = time.perf_counter() - started
    if timings is not None:
        timings.write_text(json.dumps(spent), encoding="utf-8")
    return 0


#: The coverage context of what runs while the plugin's modules are imported, before any check: every check.
IMPORT_CONTEXT = "(import)"
#: Audit events of a process started: a check that starts one may run the plugin where coverage cannot see.
SPAWN_EVENTS = frozenset({"subprocess.Popen", "os.posix_spawn", "os.exec", "os.fork", "os.system"})


def forget_caches() -> None:
    """Every ``functools`` cache of the SDK, the suite and the plugin emptied, so the next check runs the plugin
    code it depends on itself rather than finding an earlier check's answer (and is credited with those lines)."""
    for name, module in list(sys.modules.items()):
        if name.split(".")[0].startswith("rayaccel") and module is not None:
            for value in list(vars(module).values()):
                clear = getattr(value, "cache_clear", None)
                if callable(clear):
                    with contextlib.suppress(Exception):
                        clear()


def measure(plugin: str, checks: Sequence[Any], package: str, timings: Path, lines: Path) -> int:
    """The baseline with line coverage (coverage.py, one context per check): each check on a Subject and plugin
    manager of its own and with every cache emptied, as if it ran alone, so a line is credited to every check
    whose answer depends on it. Writes ``lines``: per module file, line -> the checks that ran it (the plugin's
    modules are all imported first, under :data:`IMPORT_CONTEXT`), and the checks that started a process (run for
    every mutant: the plugin may run in it, unseen)."""
    import importlib
    import pkgutil

    import coverage

    from rayaccel.plugins.manager import PluginManager
    from rayaccel_conformance.harness.subject import Subject

    current, spawning = [IMPORT_CONTEXT], set()

    def audit(event: str, _args: tuple[Any, ...]) -> None:
        if event in SPAWN_EVENTS:
            spawning.add(current[0])

    sys.addaudithook(audit)
    root = Path(importlib.import_module(package).__file__ or "").parent
    tracer = coverage.Coverage(data_file=None, include=[str(root / "*.py")], config_file=False)
    spent: dict[str, float] = {}
    tracer.start()
    try:
        tracer.switch_context(IMPORT_CONTEXT)
        for info in pkgutil.iter_modules([str(root)]):
            with contextlib.suppress(Exception):  # a module that does not import fails its checks, not this
                importlib.import_module(f"{package}.{info.name}")
        for c in checks:
            forget_caches()
            subject = Subject(plugin, PluginManager(timeout=10.0))
            current[0] = c.id
            tracer.switch_context(c.id)
            started = time.perf_counter()
            refs: list[str | None] = [*subject.fixture_paths()] or [None]
            for ref in refs if c.scope == "fixture" else [None]:
                outcome = subject.run(c, ref)
                if outcome.outcome in ("failed", "error"):
                    print(f"failed: {c.id} on {ref}: {outcome.evidence[0][:300] if outcome.evidence else ''}")
                    return 1
            spent[c.id] = time.perf_counter() - started
    finally:
        tracer.stop()
    data = tracer.get_data()
    files = {Path(f).name: {str(line): sorted(contexts) for line, contexts in data.contexts_by_lineno(f).items()}
             for f in data.measured_files()}
    lines.write_text(json.dumps({"files": files, "spawning": sorted(spawning), "checks": [c.id for c in checks]}),
                     encoding="utf-8")
    timings.write_text(json.dumps(spent), encoding="utf-8")
    return 0


def changed_rows(pristine: str, mutated: str) -> set[int]:
    """The pristine source's lines (1-based) a mutation replaced."""
    import difflib

    rows: set[int] = set()
    matcher = difflib.SequenceMatcher(None, pristine.splitlines(), mutated.splitlines(), autojunk=False)
    for tag, i1, i2, _, _ in matcher.get_opcodes():
        if tag != "equal":
            rows.update(range(i1 + 1, max(i2, i1 + 1) + 1))
    return rows


def _statements(node: ast.AST, in_function: bool = False) -> Iterable[tuple[ast.stmt, bool]]:
    """Every statement under ``node``, and whether it is inside a function body (runs when called, not at import)."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.stmt):
            yield child, in_function
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                for inner in child.body:
                    yield inner, True
                    yield from _statements(inner, True)
                continue
        yield from _statements(child, in_function)


def executed_lines(source: str, row: int) -> range | None:
    """The lines whose execution runs the code on ``row``: its innermost statement's (only the header of a compound
    one: its body has statements of its own), or just ``row`` where that is a clause (``except``, ``else``).
    None when the statement runs at import (module or class level, a signature, a decorator): every check runs
    it, before any check starts."""
    found = [(s, f) for s, f in _statements(ast.parse(source))
             if s.lineno <= row <= (s.end_lineno or s.lineno)]
    if not found:
        return None
    statement, in_function = max(found, key=lambda sf: (sf[0].lineno, -(sf[0].end_lineno or sf[0].lineno)))
    if not in_function:
        return None
    body: list[ast.stmt] = getattr(statement, "body", None) or []
    header_end = body[0].lineno - 1 if body else (statement.end_lineno or statement.lineno)
    if row <= header_end:
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            return None  # defaults and decorators: evaluated where the definition runs (kept whole: all checks)
        return range(statement.lineno, header_end + 1)
    return range(row, row + 1)


def covering(check_ids: Sequence[str], lines: dict[str, Any], module: str, pristine: str, mutated: str
             ) -> list[str]:
    """The checks a mutant's test must run: those whose baseline ran a line the mutation changed (any other check
    runs the same code as on the unmutated plugin, so passes as it did), those that start a process and those the
    baseline did not run; every check when a changed line runs at import, the mutant does not compile (the plugin
    does not load: only the import's checks see it) or cannot be placed."""
    file_lines: dict[str, list[str]] = lines["files"].get(module, {})
    rows = changed_rows(pristine, mutated)
    selected: set[str] = set(lines.get("spawning", ()))
    try:
        compile(mutated, module, "exec")  # a mutant that does not compile fails the import, before any check
        spans = [executed_lines(pristine, row) for row in rows]
    except SyntaxError:
        spans = [None]
    if not rows or any(span is None for span in spans):
        return list(check_ids)
    for span in spans:
        for line in span or ():
            selected.update(file_lines.get(str(line), ()))
    if IMPORT_CONTEXT in selected:
        return list(check_ids)
    measured = set(lines.get("checks", check_ids))  # a check added since the baseline ran: not known, so run
    return [c for c in check_ids if c in selected or c not in measured]


# --- what is mutated --------------------------------------------------------------------------------------------

def bake(into: Path) -> Path:
    """The template baked with its defaults by the real cookiecutter; returns the project's ``src``."""
    done = subprocess.run([sys.executable, "-m", "cookiecutter", "--no-input", str(TEMPLATE), "-o", str(into)],
                          capture_output=True, text=True, timeout=300, env={**os.environ, "HOME": str(into)})
    if done.returncode != 0:
        fail(f"error: cookiecutter could not bake {TEMPLATE}: {done.stderr.strip()[-500:]}")
    [package] = into.glob(f"*/src/{BAKE_PACKAGE}")
    return package.parent


def modules_of(package_dir: Path) -> list[str]:
    """Every module of a plugin package but its ``__init__`` (the ones with code to mutate)."""
    return sorted(p.stem for p in package_dir.glob("*.py") if p.stem != "__init__")


def reference_source(plugin: str) -> Path:
    """The ``src`` folder of a reference plugin in this checkout."""
    return REPO / "reference_plugins" / plugin / "src"


def default_targets(bake_src: Path) -> list[Target]:
    """Every module of the five reference plugins and of the bake."""
    targets = [Target(f"{package}.{m}", plugin) for plugin, package in REFERENCE_PLUGINS.items()
               for m in modules_of(reference_source(plugin) / package)]
    return targets + [Target(f"bake:{m}", BAKE_PLUGIN, "supported") for m in modules_of(bake_src / BAKE_PACKAGE)]


def target_of(name: str, plugin: str | None, tier: str | None) -> Target:
    """A target named on the command line: ``bake:<module>`` or ``rayaccel_<plugin>.<module>``."""
    if name.startswith("bake:"):
        return Target(name, plugin or BAKE_PLUGIN, tier or "supported")
    package = name.split(".")[0]
    guessed = next((p for p, pkg in REFERENCE_PLUGINS.items() if pkg == package), None)
    if not (plugin or guessed):
        fail(f"error: which plugin grades {name}? give --plugin")
    return Target(name, plugin or guessed or "", tier or "certified")


def source_root(target: Target, bake_src: Path) -> Path:
    """The ``src`` folder the target's package is copied from."""
    return bake_src if target.baked else reference_source(target.plugin)


def package_of(target: Target) -> str:
    return BAKE_PACKAGE if target.baked else target.module.split(".")[0]


def copy_package(target: Target, bake_src: Path, into: Path) -> Path:
    """A private copy of the target's package under ``into``; returns the copy of the module to mutate."""
    package = package_of(target)
    shutil.copytree(source_root(target, bake_src) / package, into / package,
                    ignore=shutil.ignore_patterns("__pycache__"))
    return into / package / target.file_name


def test_env(target: Target, src: Path) -> dict[str, str]:
    inherited = os.environ.get("PYTHONPATH")
    env = {"PYTHONPATH": os.pathsep.join([str(src), *([inherited] if inherited else [])]),
           "PYTHONDONTWRITEBYTECODE": "1"}
    if target.baked:
        env["RAYACCEL_PLUGINS"] = f"{BAKE_PLUGIN}={BAKE_PACKAGE}.plugin"
    return env


def test_command(target: Target, src: Path, order: Path, pristine: Path) -> str:
    """The test cosmic-ray runs on each mutant of the module copied under ``src``: the checks that run a line it
    changed (by the baseline's coverage beside ``order``, the mutated copy against ``pristine``), cheapest first."""
    return shlex.join(["env", *(f"{k}={v}" for k, v in test_env(target, src).items()), sys.executable,
                       str(Path(__file__).resolve()), "--check", target.plugin, "--tier", target.tier,
                       "--order", str(order), "--lines", str(order.with_name(LINES)),
                       "--mutated", str(src / package_of(target) / target.file_name), "--pristine", str(pristine)])


# --- the plugin's own tests (``--own-tests``) ---------------------------------------------------------------------

def own_tests_of(target: Target, bake_src: Path) -> tuple[Path, Path]:
    """(the folder pytest runs in, for its configuration; the plugin's tests): the bake's ``tests/`` from its project,
    a reference plugin's ``reference_plugins/<plugin>/tests`` from this checkout."""
    if target.baked:
        return bake_src.parent, bake_src.parent / "tests"
    return REPO, REPO / "reference_plugins" / target.plugin / "tests"


def run_own_tests(tests: Path, cwd: Path, env: dict[str, str], timeout: float) -> OwnResult:
    """The plugin's cheap, in-process tests (:data:`OWN_TESTS_SELECTION`) on whatever copy ``env``'s
    ``PYTHONPATH`` puts first, stopping at the first failure: killed (a test failed, or the tests did not load),
    survived (all passed), timeout (past ``timeout``: the process tree is stopped), or error (pytest's own
    failure, or no test selected: a verdict on nothing)."""
    process = subprocess.Popen([sys.executable, "-m", "pytest", str(tests), "-x", "-q", "-m", OWN_TESTS_SELECTION],
                               cwd=cwd, env={**os.environ, **env}, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               text=True, start_new_session=True)
    try:
        output, _ = process.communicate(timeout=max(1.0, timeout))
    except subprocess.TimeoutExpired:
        stop_tree(process.pid)
        process.communicate()
        return OwnResult("timeout", f"past {timeout:.0f} s")
    failed = next((line for line in output.splitlines() if line.startswith(("FAILED ", "ERROR "))), "")
    if process.returncode == 0:
        return OwnResult("survived")
    if process.returncode in (1, 2):  # tests failed; interrupted (a test module that does not import)
        return OwnResult("killed", (failed or (output.strip().splitlines() or [""])[-1])[:300])
    return OwnResult("error", f"pytest exited {process.returncode}: {output.strip()[-300:]}")


def own_baseline(target: Target, bake_src: Path, src: Path, timeout: float) -> float:
    """The plugin's own tests on its unmutated copy under ``src``: their seconds; refused when they fail (every
    mutant would count killed by them) or the plugin has none."""
    cwd, tests = own_tests_of(target, bake_src)
    if not tests.is_dir():
        fail(f"error: --own-tests: {target.plugin} has no tests at {tests}; run without --own-tests")
    started = time.monotonic()
    result = run_own_tests(tests, cwd, test_env(target, src), timeout)
    if result.outcome != "survived":
        fail(f"error: {target.plugin}'s own tests ({tests}) do not pass unmutated ({result.outcome}), so they can "
             f"grade no mutant: {result.detail or 'see pytest'}; fix them or run without --own-tests")
    return time.monotonic() - started


# --- cosmic-ray sessions ------------------------------------------------------------------------------------------

def cosmic_ray() -> str:
    return str(Path(sys.executable).with_name("cosmic-ray"))


def write_config(work: Path, module: Path, test: str, timeout: float) -> Path:
    config = work / "cosmic-ray.toml"
    config.write_text(
        "[cosmic-ray]\n"
        f"module-path = {json.dumps(str(module))}\n"
        f"timeout = {timeout}\n"
        "excluded-modules = []\n"
        f"test-command = {json.dumps(test)}\n"
        "[cosmic-ray.distributor]\nname = \"local\"\n", encoding="utf-8")
    return config


def init_session(work: Path, module: Path, test: str, timeout: float) -> tuple[Path, Path]:
    config = write_config(work, module, test, timeout)
    session = work / "session.sqlite"
    subprocess.run([cosmic_ray(), "init", str(config), str(session)], check=True, cwd=work,
                   capture_output=True, timeout=300)
    return config, session


def mutants_in(session: Path) -> list[Mutant]:
    with sqlite3.connect(session) as db:
        rows = db.execute("SELECT operator_name, occurrence, start_pos_row, start_pos_col FROM mutation_specs "
                          "ORDER BY start_pos_row, start_pos_col, operator_name, occurrence").fetchall()
    return [Mutant(op, int(occ), int(row), int(col)) for op, occ, row, col in rows]


def results_in(session: Path) -> dict[tuple[str, int], str]:
    """key -> killed, timeout, survived, incompetent or skipped, for every mutant the session has a result of."""
    with sqlite3.connect(session) as db:
        rows = db.execute("SELECT m.operator_name, m.occurrence, r.worker_outcome, r.test_outcome, r.output "
                          "FROM mutation_specs m JOIN work_results r ON r.job_id = m.job_id").fetchall()
    found = {}
    for op, occ, worker, test, output in rows:
        if str(worker).lower() == "skipped":
            continue
        test = str(test or "").lower()
        if test == "killed" and (output or "").strip() == "timeout":
            test = "timeout"
        found[(op, int(occ))] = test or str(worker).lower()
    return found


def skip_all_but(session: Path, keep: set[tuple[str, int]]) -> None:
    """Give every mutant but ``keep`` a 'skipped' result, so ``cosmic-ray exec`` runs only ``keep``."""
    from cosmic_ray.work_db import WorkDB, use_db
    from cosmic_ray.work_item import WorkerOutcome, WorkResult

    with use_db(str(session), mode=WorkDB.Mode.open) as db:
        skipped = [item.job_id for item in db.work_items
                   if (item.mutations[0].operator_name, item.mutations[0].occurrence) not in keep]
        if skipped:
            db.set_multiple_results(skipped, WorkResult(worker_outcome=WorkerOutcome.SKIPPED))


def stop_tree(pid: int) -> None:
    """Kill a process we started and everything under it (cosmic-ray runs each test in a session of its own,
    so killing cosmic-ray's process group would leave the test running)."""
    try:
        root = psutil.Process(pid)
        tree = [*root.children(recursive=True), root]
    except psutil.NoSuchProcess:
        return
    for process in tree:
        with contextlib.suppress(psutil.NoSuchProcess):
            process.send_signal(signal.SIGKILL)


class Runner:
    """Runs chunks of mutants, ``workers`` at once, until the budget's deadline (then stops what it started)."""

    def __init__(self, scratch: Path, bake_src: Path, deadline: float, own_tests: bool = False) -> None:
        self.scratch, self.bake_src, self.deadline, self.own_tests = scratch, bake_src, deadline, own_tests
        self.running: set[subprocess.Popen[bytes]] = set()
        self.lock = threading.Lock()
        self.counter = 0

    def remaining(self) -> float:
        return self.deadline - time.monotonic()

    def run_chunk(self, target: Target, chunk: Sequence[Mutant], timeout: float, order: Path, enumerated: Path
                  ) -> tuple[dict[tuple[str, int], str], dict[tuple[str, int], OwnResult]]:
        if self.remaining() <= 0:
            return {}, {}
        with self.lock:
            self.counter += 1
            work = self.scratch / f"chunk-{self.counter}"
        work.mkdir()
        src = work / "src"
        module = copy_package(target, self.bake_src, src)
        pristine = enumerated.parent / "src" / package_of(target) / target.file_name
        config = write_config(work, module, test_command(target, src, order, pristine), timeout)
        session = work / "session.sqlite"
        shutil.copyfile(enumerated, session)
        with sqlite3.connect(session) as db:  # the same mutants, of this chunk's copy of the module
            db.execute("UPDATE mutation_specs SET module_path = ?", (str(module),))
        skip_all_but(session, {m.key for m in chunk})
        process = subprocess.Popen([cosmic_ray(), "exec", str(config), str(session)], cwd=work,
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        with self.lock:
            self.running.add(process)
        try:
            process.wait(timeout=max(1.0, self.remaining()))
        except subprocess.TimeoutExpired:  # the budget is spent: stop cosmic-ray and the test it runs
            stop_tree(process.pid)
            process.wait()
        finally:
            with self.lock:
                self.running.discard(process)
        found = results_in(session)
        own = self.own_stage(target, module, src, pristine, [k for k, v in found.items() if v == "survived"],
                             timeout) if self.own_tests else {}
        shutil.rmtree(work, ignore_errors=True)
        return found, own

    def own_stage(self, target: Target, module: Path, src: Path, pristine: Path,
                  survivors: Sequence[tuple[str, int]], timeout: float) -> dict[tuple[str, int], OwnResult]:
        """Each survivor applied to the chunk's copy (cosmic-ray's own ``apply``) and tested by the plugin's own
        tests, within the mutant's timeout and what is left of the budget; the copy restored after each."""
        cwd, tests = own_tests_of(target, self.bake_src)
        verdicts = {}
        shutil.copyfile(pristine, module)  # a test cosmic-ray had running when the budget ran out left its mutant
        for operator, occurrence in survivors:
            if self.remaining() <= 0:
                break
            try:
                subprocess.run([cosmic_ray(), "apply", str(module), operator, str(occurrence)], check=True,
                               capture_output=True, timeout=120)
                verdicts[(operator, occurrence)] = run_own_tests(tests, cwd, test_env(target, src),
                                                                 min(timeout, self.remaining()))
            except (subprocess.CalledProcessError, subprocess.TimeoutExpired) as e:
                verdicts[(operator, occurrence)] = OwnResult("error", f"cosmic-ray apply failed: {e}")
            finally:
                shutil.copyfile(pristine, module)
        return verdicts


# --- triage and report --------------------------------------------------------------------------------------------

def annotation_spans(source: str) -> list[tuple[tuple[int, int], tuple[int, int]]]:
    """(start, end) (row, column) of every annotation, when the module never evaluates them (``from __future__
    import annotations``): a mutant inside one changes no behaviour, so it is equivalent."""
    tree = ast.parse(source)
    if not any(isinstance(n, ast.ImportFrom) and n.module == "__future__" and
               any(a.name == "annotations" for a in n.names) for n in tree.body):
        return []
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            annotation = node.returns
        elif isinstance(node, ast.arg | ast.AnnAssign):
            annotation = node.annotation
        else:
            continue
        if annotation is not None:
            found.append(((annotation.lineno, annotation.col_offset),
                          (annotation.end_lineno or annotation.lineno, annotation.end_col_offset or 0)))
    return found


def top_level_spans(source: str) -> dict[str, tuple[int, int]]:
    """name -> (first, last) line of each top-level definition or assignment (``CONSTANTS = {...}``)."""
    found: dict[str, tuple[int, int]] = {}
    for node in ast.parse(source).body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names = [node.name]
        elif isinstance(node, ast.Assign):
            names = [t.id for t in node.targets if isinstance(t, ast.Name)]
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names = [node.target.id]
        else:
            continue
        for name in names:
            found[name] = (node.lineno, node.end_lineno or node.lineno)
    return found


@dataclass(frozen=True)
class TriageEntry:
    """Survivors judged equivalent: the module, where (``code``: the source line, stripped, exact; or
    ``within``: a top-level definition or assignment, every line of it), the operators (short names; none =
    every operator there) and why no behaviour the suite, the SDK or Ray acts on changes."""

    module: str
    code: str
    operators: tuple[str, ...]
    why: str
    within: str = ""

    def matches(self, module: str, line: str, operator: str, row: int = 0,
                definitions: dict[str, tuple[int, int]] | None = None) -> bool:
        if module != self.module or (self.operators and operator.split("/")[-1] not in self.operators):
            return False
        if self.within:
            first, last = (definitions or {}).get(self.within, (0, -1))
            return first <= row <= last
        return line.strip() == self.code


def load_triage(path: Path = TRIAGE) -> list[TriageEntry]:
    """The triage file: ``{module: [{code or within, operators?, why}]}``; a malformed entry is refused."""
    if not path.is_file():
        return []
    document = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    entries = []
    for module, items in document.items():
        for index, item in enumerate(items or []):
            if not isinstance(item, dict) or not (item.get("code") or item.get("within")) or not item.get("why"):
                fail(f"error: {path.name}: {module}[{index}] needs 'code' (the source line) or 'within' "
                                 "(a top-level name), and 'why'")
            entries.append(TriageEntry(module, str(item.get("code") or "").strip(),
                                       tuple(item.get("operators") or ()), str(item["why"]),
                                       str(item.get("within") or "")))
    return entries


def stale_entries(triage: Iterable[TriageEntry], sources: dict[str, str]) -> list[TriageEntry]:
    """Entries whose line or definition is no longer in their module's source (the code moved on; the verdict
    must be redone)."""
    stale = []
    for e in triage:
        if e.module not in sources:
            continue
        source = sources[e.module]
        if (e.within and e.within not in top_level_spans(source)) or \
                (not e.within and e.code not in {line.strip() for line in source.splitlines()}):
            stale.append(e)
    return stale


def grade(outcome: Outcome, triage: Sequence[TriageEntry]) -> dict[str, Any]:
    """One module's figures: the kill rate over the non-equivalent mutants that ran, and every survivor."""
    lines = outcome.source.splitlines()
    spans = annotation_spans(outcome.source)
    by_key = {m.key: m for m in outcome.mutants}
    definitions = top_level_spans(outcome.source)
    ran = {k: v for k, v in outcome.results.items() if v in ("killed", "timeout", "survived", "annotation")}
    survivors: list[dict[str, Any]] = []
    equivalent: list[dict[str, Any]] = []
    for key, result in sorted(ran.items(), key=lambda kv: (by_key[kv[0]].row, kv[0])):
        if result not in ("survived", "annotation"):
            continue
        mutant = by_key[key]
        line = lines[mutant.row - 1] if 0 < mutant.row <= len(lines) else ""
        record: dict[str, Any] = {"line": mutant.row, "operator": mutant.operator.split("/")[-1],
                                  "occurrence": mutant.occurrence, "code": line.strip()}
        if key in outcome.own:  # the suite's survivor either way; its own tests' verdict beside it
            record["own_tests"] = outcome.own[key].outcome
            if outcome.own[key].detail:
                record["own_tests_detail"] = outcome.own[key].detail
        if result == "annotation" or any(start <= (mutant.row, mutant.col) < end for start, end in spans):
            equivalent.append({**record, "why": "inside an annotation that is never evaluated (not run)"})
            continue
        entry = next((e for e in triage if e.matches(outcome.target.module, line, mutant.operator, mutant.row,
                                                     definitions)), None)
        (equivalent if entry else survivors).append({**record, "why": entry.why} if entry else record)
    killed = sum(1 for v in ran.values() if v in ("killed", "timeout"))
    graded = killed + len(survivors)
    in_annotations = sum(1 for v in ran.values() if v == "annotation")
    own_killed = sum(1 for s in survivors if s.get("own_tests") in OWN_KILLS)
    return {"module": outcome.target.module, "plugin": outcome.target.plugin, "tier": outcome.target.tier,
            "mutants": len(outcome.mutants), "in_annotations": in_annotations, "planned": len(outcome.planned),
            "ran": len(ran) - in_annotations,
            "killed": killed, "timeouts": sum(1 for v in ran.values() if v == "timeout"),
            "incompetent": sum(1 for v in outcome.results.values() if v == "incompetent"),
            "equivalent": len(equivalent), "graded": graded,
            "kill_rate": round(killed / graded, 4) if graded else None,
            "own_tests": outcome.own_tests, "own_tests_ran": sum(1 for s in survivors if "own_tests" in s),
            "killed_by_own_tests": own_killed if outcome.own_tests else None,
            "kill_rate_with_own_tests": round((killed + own_killed) / graded, 4)
            if outcome.own_tests and graded else None,
            "survivors": survivors, "equivalents": equivalent}


def _rate(rate: float | None) -> str:
    return f"{rate:.1%}" if rate is not None else "-"


def print_report(rows: Sequence[dict[str, Any]]) -> None:
    """The table (one row per module; with ``--own-tests``, what the plugins' own tests kill of the suite's
    survivors and the rate with them, beside the suite's) and every open survivor."""
    own = any(r.get("own_tests") for r in rows)
    print(f"\n{'module':34} {'ran/testable':>12} {'killed':>7} {'equiv':>6} {'survived':>8} {'kill rate':>9}"
          + (f" {'own kill':>8} {'with own':>9}" if own else "")
          + "   (testable: mutants outside never-evaluated annotations; equiv: those and triaged survivors"
          + ("; own kill: survivors the plugin's own tests kill, not in the kill rate)" if own else ")"))
    for r in rows:
        flag = "" if r["kill_rate"] is None or r["kill_rate"] >= 0.9 else "  < 90%"
        with_own = (f" {r['killed_by_own_tests'] if r.get('own_tests') else '-':>8} "
                    f"{_rate(r.get('kill_rate_with_own_tests')):>9}") if own else ""
        print(f"{r['module']:34} {r['ran']:>5}/{r['mutants'] - r['in_annotations']:<6} {r['killed']:>7} "
              f"{r['equivalent']:>6} {len(r['survivors']):>8} {_rate(r['kill_rate']):>9}{with_own}{flag}")
    total_killed = sum(r["killed"] for r in rows)
    total_graded = sum(r["graded"] for r in rows)
    if total_graded:
        own_killed = sum(r.get("killed_by_own_tests") or 0 for r in rows)
        with_own = f" {own_killed:>8} {(total_killed + own_killed) / total_graded:>9.1%}" if own else ""
        print(f"{'all':34} {sum(r['ran'] for r in rows):>5}/"
              f"{sum(r['mutants'] - r['in_annotations'] for r in rows):<6} {total_killed:>7} "
              f"{sum(r['equivalent'] for r in rows):>6} {total_graded - total_killed:>8} "
              f"{total_killed / total_graded:>9.1%}{with_own}")
    for r in rows:
        file_name = r["module"].split(":")[-1].split(".")[-1]
        for s in r["survivors"]:
            verdict = s.get("own_tests")
            said = "" if verdict is None else (f"  [killed by own tests: {s.get('own_tests_detail', '')[:120]}]"
                                               if verdict in OWN_KILLS else f"  [own tests: {verdict}]")
            print(f"  survived: {r['module']} {file_name}.py:{s['line']} {s['operator']}: {s['code'][:90]}{said}")
        for e in r["equivalents"]:
            if e.get("own_tests") in OWN_KILLS:  # a verdict of equivalence a test contradicts
                print(f"  triaged equivalent, yet its own tests kill it: {r['module']} {file_name}.py:{e['line']} "
                      f"{e['operator']} ({e.get('own_tests_detail', '')[:120]}): judge it again")
    sys.stdout.flush()


# --- the run ------------------------------------------------------------------------------------------------------

def gap_order(targets: Sequence[Target], counts: dict[str, int], previous: Path) -> list[Target]:
    """Largest gap first: most open survivors in the last result, then modules never measured by their count of
    mutants, then the rest by their survivors."""
    last: dict[str, int] = {}
    if previous.is_file():
        try:
            last = {r["module"]: len(r["survivors"]) for r in json.loads(previous.read_text())["modules"]}
        except (ValueError, KeyError, TypeError):
            last = {}
    return sorted(targets, key=lambda t: (-(last.get(t.module, counts.get(t.module, 0))), t.module))


def baseline(target: Target, bake_src: Path, scratch: Path, timeout: float) -> tuple[Path, float]:
    """The plugin's unmutated code through the suite: (its per-check times, its seconds; which check runs which
    line is written beside the times, :data:`LINES`); refused when it fails."""
    work = scratch / f"baseline-{target.plugin}"
    work.mkdir()
    src = work / "src"
    copy_package(target, bake_src, src)
    timings = work / "timings.json"
    started = time.monotonic()
    try:
        done = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--check", target.plugin, "--tier",
                               target.tier, "--timings", str(timings), "--lines", str(timings.with_name(LINES)),
                               "--package", package_of(target)], capture_output=True, text=True,
                              timeout=timeout, env={**os.environ, **test_env(target, src)})
    except subprocess.TimeoutExpired:  # a loaded machine: say so, and how to give it longer
        fail(f"error: {target.plugin} unmutated did not finish the suite within {timeout:.0f} s, so no mutant can "
             f"be graded: run it on a quieter machine or give it longer with --timeout SECONDS")
    if done.returncode != 0:
        fail(f"error: {target.plugin} unmutated fails the suite, so no mutant can be graded: "
                         f"{done.stdout.strip()[-300:]}{done.stderr.strip()[-300:]}")
    return timings, time.monotonic() - started


def survivors_of(path: Path) -> dict[str, set[tuple[str, int]]]:
    """module -> (operator, occurrence) of each open survivor in a result file (to run them again)."""
    try:
        rows = json.loads(path.read_text(encoding="utf-8"))["modules"]
        return {r["module"]: {(s["operator"], int(s["occurrence"])) for s in r["survivors"]} for r in rows
                if r["survivors"]}
    except (OSError, ValueError, KeyError, TypeError) as e:
        fail(f"error: --survivors-of {path}: not a result this script wrote ({e})")


def run(targets: Sequence[Target], bake_src: Path, scratch: Path, *, workers: int, budget: float,
        timeout: float | None, sample: int | None, seed: int, previous: Path,
        only: dict[str, set[tuple[str, int]]] | None = None, own_tests: bool = False) -> list[Outcome]:
    deadline = time.monotonic() + budget

    def enumerate_mutants(numbered: tuple[int, Target]) -> Outcome:  # cosmic-ray init: no test runs
        work = scratch / f"init-{numbered[0]}"
        work.mkdir()
        module = copy_package(numbered[1], bake_src, work / "src")
        _, session = init_session(work, module, "true", 1)
        return Outcome(numbered[1], module.read_text(encoding="utf-8"), mutants_in(session), session,
                       own_tests=own_tests)

    with concurrent.futures.ThreadPoolExecutor(max_workers=workers) as pool:
        outcomes = {o.target.module: o for o in pool.map(enumerate_mutants, enumerate(targets))}
    ordered = gap_order(targets, {m: len(o.mutants) for m, o in outcomes.items()}, previous)
    first_of_plugin = {t.plugin: t for t in reversed(ordered) if outcomes[t.module].mutants}
    with concurrent.futures.ThreadPoolExecutor(max_workers=workers) as pool:
        measured = pool.map(lambda t: baseline(t, bake_src, scratch, max(300.0, timeout or 0)),
                            first_of_plugin.values())
        baselines = dict(zip(first_of_plugin, measured, strict=True))
    for plugin, (_, seconds) in baselines.items():
        print(f"baseline: {plugin} passes unmutated in {seconds:.1f} s", flush=True)
        if own_tests:  # on the baseline's unmutated copy, one plugin at a time (cheap)
            target = first_of_plugin[plugin]
            own_seconds = own_baseline(target, bake_src, scratch / f"baseline-{plugin}" / "src",
                                       max(300.0, timeout or 0))
            print(f"baseline: {plugin}'s own tests ({own_tests_of(target, bake_src)[1]}, {OWN_TESTS_SELECTION}) "
                  f"pass unmutated in {own_seconds:.1f} s", flush=True)
    runner = Runner(scratch, bake_src, deadline, own_tests)
    per_module = []
    for target in ordered:
        outcome = outcomes[target.module]
        spans = annotation_spans(outcome.source)
        inert = [m for m in outcome.mutants if any(a <= (m.row, m.col) < b for a, b in spans)]
        outcome.results.update({m.key: "annotation" for m in inert})  # equivalent by construction: not run
        chosen = [m for m in outcome.mutants if m not in inert and
                  (only is None or target.module not in only  # a module named beside --survivors-of: a sample
                   or (m.operator.split("/")[-1], m.occurrence) in only[target.module])]
        random.Random(f"{seed}:{target.module}").shuffle(chosen)
        outcome.planned = chosen[:sample] if sample is not None else chosen
        order, seconds = baselines.get(target.plugin, (Path(), 0.0))
        per_mutant = timeout or max(60.0, 3 * seconds)
        per_module.append([(target, outcome.planned[i:i + CHUNK], per_mutant, order, outcome.session)
                           for i in range(0, len(outcome.planned), CHUNK)])
    # Round robin in gap order: a budget cut leaves every module reached with a sample, largest gaps first.
    jobs = [chunks[i] for i in range(max(map(len, per_module), default=0)) for chunks in per_module
            if i < len(chunks)]
    print(f"mutation: {sum(len(o.planned) for o in outcomes.values())} mutants of {len(targets)} modules planned, "
          f"{workers} at once, budget {budget:.0f} s", flush=True)
    with concurrent.futures.ThreadPoolExecutor(max_workers=workers) as pool:
        futures = {pool.submit(runner.run_chunk, *job): job[0] for job in jobs}  # submitted in gap order
        for future in concurrent.futures.as_completed(futures):
            target = futures[future]
            found, own = future.result()
            outcomes[target.module].results.update(found)
            outcomes[target.module].own.update(own)
            rows = {m.key: m.row for m in outcomes[target.module].mutants}
            print("  " + ", ".join(f"{target.file_name}:{rows[k]} {k[0].split('/')[-1]} {v}"
                                   + (f" (own tests: {own[k].outcome})" if k in own else "")
                                   for k, v in sorted(found.items(), key=lambda kv: rows[kv[0]])), flush=True)
    return [outcomes[t.module] for t in ordered]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("modules", nargs="*", help="modules to mutate (rayaccel_<plugin>.<module> or "
                        "bake:<module>; default: every module of the five reference plugins and of the bake)")
    parser.add_argument("--plugin", help="plugin whose conformance grades the modules (default: from the name)")
    parser.add_argument("--tier", choices=("experimental", "supported", "certified"),
                        help="highest tier whose checks grade a mutant (default: certified; supported for the bake)")
    parser.add_argument("--timeout", type=float, help="seconds one mutant's test may take (default: 3 x the "
                        "plugin's baseline, at least 60)")
    parser.add_argument("--budget", type=float, default=3300.0, help="seconds for the whole run (default 3300)")
    parser.add_argument("--workers", type=int, default=max(1, (os.cpu_count() or 2) - 1),
                        help="mutants tested at once (default: the CPUs less one)")
    parser.add_argument("--sample", type=int, help="at most this many mutants of each module (seeded random)")
    parser.add_argument("--survivors-of", type=Path, metavar="RESULTS",
                        help="run again only the open survivors of an earlier result (after a new check): of the "
                        "modules named (default: every module it has survivors of); one it has none of is sampled")
    parser.add_argument("--own-tests", action="store_true",
                        help="also test each survivor with its plugin's own cheap, in-process tests (not marked "
                        f"ray, slow or alone: -m '{OWN_TESTS_SELECTION}'); counted apart from the suite's kill rate")
    parser.add_argument("--seed", type=int, default=46, help="seed of the sample and the order (default 46)")
    parser.add_argument("--results", type=Path, default=RESULTS, help=f"JSON result (default {RESULTS})")
    parser.add_argument("--check", metavar="PLUGIN", help="run the suite's in-process checks on PLUGIN and exit")
    parser.add_argument("--timings", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--order", type=Path, help=argparse.SUPPRESS)
    for internal in ("--lines", "--mutated", "--pristine"):
        parser.add_argument(internal, type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--package", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.check:
        return check(args.check, args.tier or "certified", args.timings, args.order, args.lines, args.package,
                     args.mutated, args.pristine)
    for name, value in (("--budget", args.budget), ("--workers", args.workers), ("--sample", args.sample),
                        ("--timeout", args.timeout)):
        if value is not None and value <= 0:
            print(f"error: {name} must be positive, not {value}", file=sys.stderr)
            return 2
    triage = load_triage()
    started, wall = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), time.monotonic()
    with tempfile.TemporaryDirectory(prefix="rayaccel-mutation-") as scratch_dir:
        scratch = Path(scratch_dir)
        bake_src = bake(scratch / "bake")
        only = survivors_of(args.survivors_of) if args.survivors_of else None
        names = args.modules or sorted(only or ())
        targets = ([target_of(m, args.plugin, args.tier) for m in names] if names else default_targets(bake_src))
        for target in targets:
            if not (source_root(target, bake_src) / package_of(target) / target.file_name).is_file():
                print(f"error: no module {target.module} (looked in {source_root(target, bake_src)})",
                      file=sys.stderr)
                return 2
        outcomes = run(targets, bake_src, scratch, workers=args.workers, budget=args.budget, timeout=args.timeout,
                       sample=args.sample, seed=args.seed, previous=args.results, only=only,
                       own_tests=args.own_tests)
    rows = [grade(o, triage) for o in outcomes]
    print_report(rows)
    for entry in stale_entries(triage, {o.target.module: o.source for o in outcomes}):
        print(f"  stale triage: {entry.module}: {entry.within or entry.code!r} is gone; judge its survivors again")
    document = {"command": shlex.join(["scripts/mutation.py", *sys.argv[1:]]), "started": started,
                "wall_s": round(time.monotonic() - wall, 1), "budget_s": args.budget, "workers": args.workers,
                "timeout_s": args.timeout, "sample": args.sample, "seed": args.seed, "own_tests": args.own_tests,
                "load_average": [round(x, 2) for x in os.getloadavg()], "modules": rows}
    args.results.parent.mkdir(parents=True, exist_ok=True)
    partial = args.results.with_suffix(".json.partial")
    partial.write_text(json.dumps(document, indent=1), encoding="utf-8")
    partial.replace(args.results)
    print(f"mutation: {sum(r['ran'] for r in rows)} of {sum(r['mutants'] for r in rows)} mutants ran in "
          f"{document['wall_s']} s; result in {args.results}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
