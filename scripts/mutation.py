"""The conformance suite measured by a real mutation tool: ``make mutation`` (not part of ``make test``).

cosmic-ray mutates a plugin's hook module one mutation at a time, and the conformance suite is the test: a
mutant is killed when any of the suite's in-process checks (every check but the Ray ones, on every fixture
of the plugin, up to the target's tier) fails on it. The targets are the hook modules of a fresh template
bake (the real cookiecutter, into a scratch directory, graded to ``supported`` as the bake's own CI grades
it) and of reference plugins. A reference plugin's package is copied to the scratch directory first and
imported from there (``PYTHONPATH`` ahead of the editable install), so the checkout is never mutated, even
for a moment, and another process importing the plugin meanwhile sees the real one. Each target's
unmutated code must pass first (a baseline that fails would count every mutant killed). Prints the kill
rate and the survivors (file:line, operator, the mutated line); docs/conformance.md triages them.

    .venv/bin/python scripts/mutation.py                                        # every default target
    .venv/bin/python scripts/mutation.py rayaccel_tpu.health [--timeout 120]   # one installed module
    .venv/bin/python scripts/mutation.py bake:health                            # one module of a bake
    .venv/bin/python scripts/mutation.py --check PLUGIN [--tier supported]      # the test cosmic-ray runs
"""

from __future__ import annotations

import argparse
import ast
import importlib.util
import json
import os
import shlex
import shutil
import sqlite3
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TEMPLATE = REPO / "templates" / "vendor-plugin"
#: The default bake's plugin: its module and plugin name follow from cookiecutter.json's defaults.
BAKE_PACKAGE, BAKE_PLUGIN = "rayaccel_example", "example"


@dataclass(frozen=True)
class Target:
    """One module to mutate: ``bake:<module>`` for a module of the template bake, else an installed module."""

    module: str
    plugin: str
    tier: str = "certified"  # the highest tier whose checks grade a mutant

    @property
    def baked(self) -> bool:
        return self.module.startswith("bake:")


#: What ``make mutation`` mutates: the bake's hook modules (discovery, health, topology, metrics and the
#: probe that reads the vendor tool) and reference plugins' modules.
DEFAULT_TARGETS = [
    *(Target(f"bake:{m}", BAKE_PLUGIN, "supported") for m in ("discovery", "health", "topology", "metrics", "probe")),
    Target("rayaccel_tpu.health", "tpu"),
    Target("rayaccel_gaudi.health", "gaudi"),
]


def check(plugin: str, tier: str = "certified") -> int:
    """Run the suite's in-process checks up to ``tier`` on one plugin; 0 when every one passed or was skipped."""
    from rayaccel.plugins.manager import PluginManager
    from rayaccel_conformance.checks import all_checks
    from rayaccel_conformance.harness.subject import Subject
    from rayaccel_conformance.registry import tier_index

    manager = PluginManager(timeout=10.0)
    subject = Subject(plugin, manager)
    for c in (c for c in all_checks() if not c.uses_ray and tier_index(c.tier) <= tier_index(tier)):
        refs: list[str | None] = [*subject.fixture_paths()] or [None]
        for ref in refs if c.scope == "fixture" else [None]:
            outcome = subject.run(c, ref)
            if outcome.outcome in ("failed", "error"):
                print(f"killed by {c.id} on {ref}: {outcome.evidence[0][:200] if outcome.evidence else ''}")
                return 1
    return 0


def bake(into: Path) -> Path:
    """The template baked with its defaults by the real cookiecutter; returns the project's ``src``."""
    done = subprocess.run([sys.executable, "-m", "cookiecutter", "--no-input", str(TEMPLATE), "-o", str(into)],
                          capture_output=True, text=True, timeout=300, env={**os.environ, "HOME": str(into)})
    if done.returncode != 0:
        raise SystemExit(f"error: cookiecutter could not bake {TEMPLATE}: {done.stderr.strip()[-500:]}")
    [package] = into.glob(f"*/src/{BAKE_PACKAGE}")
    return package.parent


def source_of(target: Target, work: Path) -> tuple[Path, Path, dict[str, str]]:
    """(the file to mutate inside ``work``, the source root to import from, extra env of the test)."""
    if target.baked:
        src = bake(work / "bake")
        name = target.module.removeprefix("bake:")
        return src / BAKE_PACKAGE / f"{name}.py", src, {"RAYACCEL_PLUGINS": f"{BAKE_PLUGIN}={BAKE_PACKAGE}.plugin"}
    spec = importlib.util.find_spec(target.module)
    if spec is None or spec.origin is None:
        raise SystemExit(f"error: no module {target.module!r} is installed; install the plugin (make install)")
    package_dir = Path(spec.origin).parent
    copy = work / "src" / package_dir.name
    shutil.copytree(package_dir, copy, ignore=shutil.ignore_patterns("__pycache__"))
    return copy / Path(spec.origin).name, work / "src", {}


def mutate(target: Target, timeout: float) -> int:
    with tempfile.TemporaryDirectory(prefix="rayaccel-mutation-") as scratch:
        work = Path(scratch)
        mutated, source_root, env = source_of(target, work)
        test_env = {"PYTHONPATH": str(source_root), **env}
        test = shlex.join(["env", *(f"{k}={v}" for k, v in test_env.items()), sys.executable,
                           str(Path(__file__).resolve()), "--check", target.plugin, "--tier", target.tier])
        baseline = subprocess.run(shlex.split(test), capture_output=True, text=True, timeout=timeout)
        if baseline.returncode != 0:
            print(f"error: {target.module} unmutated fails the suite, so no mutant can be graded: "
                  f"{baseline.stdout.strip()[-300:]}{baseline.stderr.strip()[-300:]}", file=sys.stderr)
            return 2
        original = mutated.read_text(encoding="utf-8")
        config = work / "cosmic-ray.toml"
        config.write_text(
            "[cosmic-ray]\n"
            f"module-path = {json.dumps(str(mutated))}\n"
            f"timeout = {timeout}\n"
            "excluded-modules = []\n"
            f"test-command = {json.dumps(test)}\n"
            "[cosmic-ray.distributor]\nname = \"local\"\n", encoding="utf-8")
        session = work / "session.sqlite"
        cosmic = Path(sys.executable).with_name("cosmic-ray")
        subprocess.run([str(cosmic), "init", str(config), str(session)], check=True, cwd=work)
        subprocess.run([str(cosmic), "exec", str(config), str(session)], check=True, cwd=work)
        return report(session, target, original)


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


def report(session: Path, target: Target, source: str) -> int:
    """Kill rate and survivors, read from cosmic-ray's session database; a survivor inside an annotation that
    is never evaluated is reported as equivalent."""
    lines = source.splitlines()
    spans = annotation_spans(source)
    with sqlite3.connect(session) as db:
        rows = db.execute(
            "SELECT m.operator_name, m.start_pos_row, m.start_pos_col, r.test_outcome FROM mutation_specs m "
            "JOIN work_results r ON r.job_id = m.job_id").fetchall()
    killed = [r for r in rows if r[3] != "SURVIVED"]
    survived = [r for r in rows if r[3] == "SURVIVED"]
    equivalent = [r for r in survived if any(start <= (r[1], r[2]) < end for start, end in spans)]
    graded = len(rows) - len(equivalent)
    rate = len(killed) / graded if graded else 0.0
    print(f"\nmutation: {len(killed)}/{graded} mutants of {target.module} killed by the conformance suite "
          f"(kill rate {rate:.1%}; plugin {target.plugin}, checks up to {target.tier})"
          + (f"; {len(equivalent)} more survive in annotations that are never evaluated (equivalent)"
             if equivalent else ""))
    name = target.module.split(":")[-1].split(".")[-1] + ".py"
    for operator, row, _, _ in sorted((r for r in survived if r not in equivalent), key=lambda r: (r[1], r[0])):
        print(f"  survived: {name}:{row} {operator.split('/')[-1]}: {lines[row - 1].strip()[:90]}")
    sys.stdout.flush()
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("module", nargs="?", help="module to mutate, or bake:<module> (default: every target)")
    parser.add_argument("--plugin", help="plugin whose conformance grades the module (default: from the table)")
    parser.add_argument("--tier", choices=("experimental", "supported", "certified"),
                        help="highest tier whose checks grade a mutant (default: from the table)")
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds one mutant's test may take")
    parser.add_argument("--check", metavar="PLUGIN", help="run the suite's in-process checks on PLUGIN and exit")
    args = parser.parse_args()
    if args.check:
        return check(args.check, args.tier or "certified")
    known = {t.module: t for t in DEFAULT_TARGETS}
    if args.module:
        default = known.get(args.module) or Target(args.module, BAKE_PLUGIN if args.module.startswith("bake:")
                                                   else "", "supported" if args.module.startswith("bake:")
                                                   else "certified")
        targets = [Target(args.module, args.plugin or default.plugin, args.tier or default.tier)]
    else:
        targets = DEFAULT_TARGETS
    status = 0
    for target in targets:
        if not target.plugin:
            print(f"error: which plugin grades {target.module}? give --plugin", file=sys.stderr)
            return 2
        status = max(status, mutate(target, args.timeout))
    return status


if __name__ == "__main__":
    sys.exit(main())
