"""The main job, on simulated hardware: ``make demo`` (``python -m demo`` from the repository root).

1. a simulated DGX H100's inventory, as Ray will see it;
2. the conformance tier of every reference plugin, signed with a demo key and verified with its public key;
3. a plugin freshly baked from the template, installed and certified;
4. a real Ray node scheduling tasks on simulated devices;
5. the tier table of every reference plugin again, to end on.

Each step runs the same commands a user would (``rayaccel ...``, ``pytest --conformance``), in a scratch
directory that is removed at the end. ``--keep DIR`` keeps the reports there instead.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.rule import Rule

# Piped (CI logs) rich would wrap at 80 columns; the rayaccel commands' own tables are 160 wide.
console = Console(width=None if sys.stdout.isatty() else 160)

REFERENCE_PLUGINS = ("nvidia", "amd", "tpu", "neuron", "gaudi")
DEMO_FIXTURE = "nvidia/dgx-h100"
TEMPLATE_ANSWERS = ("vendor_name=Example Silicon", "family_name=exsi")


def _run(argv: list[str], env: dict[str, str] | None = None, cwd: Path | None = None,
         check: bool = True) -> subprocess.CompletedProcess[str]:
    console.print(f"[dim]$ {' '.join(argv)}[/dim]")
    done = subprocess.run(argv, env={**os.environ, **(env or {})}, cwd=cwd, text=True, capture_output=True,
                          check=False)
    if check and done.returncode != 0:
        _show(done.stdout[-4000:])
        _show(done.stderr[-4000:])
        raise SystemExit(f"demo step failed: {' '.join(argv)} exited {done.returncode}")
    return done


def _rayaccel(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return _run([sys.executable, "-m", "rayaccel", *args], env=env)


def _show(text: str) -> None:
    """A command's own output, as it printed it (already laid out)."""
    sys.stdout.write(text if text.endswith("\n") else text + "\n")
    sys.stdout.flush()


def step_inventory() -> None:
    console.print(Rule(f"1. Inventory of a simulated node ({DEMO_FIXTURE})"))
    _show(_rayaccel("inspect", "--simulate", DEMO_FIXTURE).stdout)


def step_tiers(work: Path) -> None:
    console.print(Rule("2. Conformance tiers of the reference plugins (simulated hardware), signed"))
    key = work / "demo-signing.key"  # a throwaway key in the scratch directory; a vendor keeps theirs secret
    if not key.exists():  # keygen never overwrites a key: with --keep DIR, a second demo reuses the first's
        _show(_rayaccel("certify", "keygen", str(key)).stdout)
    report = work / "reference-report.json"
    argv = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--conformance",
            f"--conformance-report={report}", f"--conformance-sign-key={key}"]
    for plugin in REFERENCE_PLUGINS:
        argv.append(f"--conformance-plugin={plugin}")
    done = _run(argv, cwd=work, check=False)
    if not report.exists():
        _show(done.stdout[-3000:])
        raise SystemExit("the conformance run wrote no report")
    _show(_rayaccel("certify", "verify", "--key", f"{key}.pub", str(report)).stdout)
    _show(_rayaccel("certify", "summary", str(report)).stdout)


def step_template(work: Path) -> None:
    console.print(Rule("3. A plugin baked from the template, installed and certified"))
    _rayaccel("new", "--no-input", *TEMPLATE_ANSWERS, "-o", str(work))
    project = next(p for p in work.iterdir() if p.is_dir() and p.name.startswith("rayaccel-"))
    site = work / "site"
    _run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation", "--target",
          str(site), str(project)])
    env = {"PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")])}
    _show(_rayaccel("inspect", "--simulate", "exsi/exsi-4", env=env).stdout)
    report = work / "baked-report.json"
    _run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--conformance",
          "--conformance-plugin=exsi", f"--conformance-report={report}"], env=env, cwd=work, check=False)
    _show(_rayaccel("certify", "summary", str(report)).stdout)


def step_summary(work: Path) -> None:
    console.print(Rule("Tiers of every reference plugin (from step 2's verified report)"))
    _show(_rayaccel("certify", "summary", str(work / "reference-report.json")).stdout)


def step_ray() -> None:
    console.print(Rule(f"4. A real Ray node scheduling tasks on simulated devices ({DEMO_FIXTURE})"))
    import logging

    import ray

    import rayaccel.ray as rayaccel_ray

    # Ray's INFO lines (the label override it applies, for one) would drown the demo's own output.
    rayaccel_ray.init(simulate=DEMO_FIXTURE, num_cpus=4, include_dashboard=False, log_to_driver=False,
                      logging_level=logging.WARNING)
    try:
        resources: dict[str, float] = ray.cluster_resources()  # type: ignore[no-untyped-call]
        console.print(f"cluster resources: GPU={resources.get('GPU')}, "
                      f"accelerator_type:H100={resources.get('accelerator_type:H100')}")

        @ray.remote(num_gpus=2, label_selector={"ray.io/accelerator-type": "H100"})
        def visible() -> str:
            return os.environ.get("CUDA_VISIBLE_DEVICES", "")

        seen = ray.get([visible.remote() for _ in range(4)])
        for i, ids in enumerate(seen):
            console.print(f"task {i} (num_gpus=2) sees CUDA_VISIBLE_DEVICES={ids}")
        used = [i for ids in seen for i in ids.split(",")]
        console.print(f"{len(set(used))} distinct GPUs used by 4 concurrent 2-GPU tasks")
    finally:
        rayaccel_ray.shutdown()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m demo", description=__doc__.splitlines()[0])
    parser.add_argument("--keep", type=Path, help="keep reports and the baked plugin in this directory")
    args = parser.parse_args(argv)
    started = time.monotonic()
    work = args.keep or Path(tempfile.mkdtemp(prefix="rayaccel-demo-"))
    work.mkdir(parents=True, exist_ok=True)
    try:
        step_inventory()
        step_tiers(work)
        step_template(work)
        step_ray()
        step_summary(work)
    finally:
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)
    console.print(Rule(f"done in {time.monotonic() - started:.0f} s"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
