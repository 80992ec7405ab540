"""The conformance suite measured by a real mutation tool: ``make mutation`` (not part of ``make test``).

cosmic-ray mutates a plugin's hook module one mutation at a time, and the conformance suite is the test: a
mutant is killed when any of the suite's in-process checks (every check but the Ray ones, on every fixture
of the plugin) fails on it. The module is copied to a scratch directory first and imported from there
(``PYTHONPATH`` ahead of the editable install), so the checkout is never mutated, even for a moment, and
another process importing the plugin meanwhile sees the real one. Prints the kill rate and the survivors
(file:line, operator, the mutated line); docs/conformance.md triages them.

    .venv/bin/python scripts/mutation.py rayaccel_tpu.health [--timeout 120]   # one module
    .venv/bin/python scripts/mutation.py --check PLUGIN                         # the test cosmic-ray runs
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import shutil
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path

#: What ``make mutation`` mutates: module -> the plugin whose conformance grades it.
DEFAULT_TARGETS = {"rayaccel_tpu.health": "tpu"}


def check(plugin: str) -> int:
    """Run the suite's in-process checks on one plugin; 0 when every one passed or was skipped."""
    from rayaccel.plugins.manager import PluginManager
    from rayaccel_conformance.checks import all_checks
    from rayaccel_conformance.harness.subject import Subject

    manager = PluginManager(timeout=10.0)
    subject = Subject(plugin, manager)
    for c in (c for c in all_checks() if not c.uses_ray):
        refs: list[str | None] = [*subject.fixture_paths()] or [None]
        for ref in refs if c.scope == "fixture" else [None]:
            outcome = subject.run(c, ref)
            if outcome.outcome in ("failed", "error"):
                print(f"killed by {c.id} on {ref}: {outcome.evidence[0][:200] if outcome.evidence else ''}")
                return 1
    return 0


def mutate(module: str, plugin: str, timeout: float) -> int:
    spec = importlib.util.find_spec(module)
    if spec is None or spec.origin is None:
        print(f"error: no module {module!r} is installed; install the plugin (make install)", file=sys.stderr)
        return 2
    package_dir = Path(spec.origin).parent
    with tempfile.TemporaryDirectory(prefix="rayaccel-mutation-") as scratch:
        work = Path(scratch)
        copy = work / "src" / package_dir.name
        shutil.copytree(package_dir, copy, ignore=shutil.ignore_patterns("__pycache__"))
        target = copy / Path(spec.origin).name
        config = work / "cosmic-ray.toml"
        source_root = work / "src"
        test = f"env PYTHONPATH={source_root} {sys.executable} {Path(__file__).resolve()} --check {plugin}"
        config.write_text(
            "[cosmic-ray]\n"
            f"module-path = {json.dumps(str(target))}\n"
            f"timeout = {timeout}\n"
            "excluded-modules = []\n"
            f"test-command = {json.dumps(test)}\n"
            "[cosmic-ray.distributor]\nname = \"local\"\n", encoding="utf-8")
        session = work / "session.sqlite"
        cosmic = Path(sys.executable).with_name("cosmic-ray")
        subprocess.run([str(cosmic), "init", str(config), str(session)], check=True, cwd=work)
        subprocess.run([str(cosmic), "exec", str(config), str(session)], check=True, cwd=work)
        return report(session, target, package_dir / target.name)


def report(session: Path, mutated: Path, original: Path) -> int:
    """Kill rate and survivors, read from cosmic-ray's session database."""
    lines = original.read_text(encoding="utf-8").splitlines()
    with sqlite3.connect(session) as db:
        rows = db.execute(
            "SELECT m.operator_name, m.start_pos_row, r.test_outcome FROM mutation_specs m "
            "JOIN work_results r ON r.job_id = m.job_id").fetchall()
    killed = [r for r in rows if r[2] != "SURVIVED"]
    survived = [r for r in rows if r[2] == "SURVIVED"]
    rate = len(killed) / len(rows) if rows else 0.0
    print(f"\nmutation: {len(killed)}/{len(rows)} mutants of {original} killed by the conformance suite "
          f"(kill rate {rate:.1%})")
    for operator, row, _ in sorted(survived, key=lambda r: (r[1], r[0])):
        print(f"  survived: {original.name}:{row} {operator.split('/')[-1]}: {lines[row - 1].strip()[:90]}")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("module", nargs="?", help="module to mutate (default: the make mutation targets)")
    parser.add_argument("--plugin", help="plugin whose conformance grades the module (default: from the table)")
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds one mutant's test may take")
    parser.add_argument("--check", metavar="PLUGIN", help="run the suite's in-process checks on PLUGIN and exit")
    args = parser.parse_args()
    if args.check:
        return check(args.check)
    targets = {args.module: args.plugin or DEFAULT_TARGETS.get(args.module, "")} if args.module else DEFAULT_TARGETS
    status = 0
    for module, plugin in targets.items():
        if not plugin:
            print(f"error: which plugin grades {module}? give --plugin", file=sys.stderr)
            return 2
        status = max(status, mutate(module, plugin, args.timeout))
    return status


if __name__ == "__main__":
    sys.exit(main())
