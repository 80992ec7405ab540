"""The proposed Ray change (``upstream/ray-accelerator-entry-points.patch``) applied to a copy of the installed Ray:
plain ``ray start`` finds a day-zero family through rayaccel's ``ray.accelerator_managers`` entry point, with
rayaccel's activation off; Ray's own families are unchanged.

The copy costs no disk: the installed ``ray`` package is hard-linked (``cp -al``) into a scratch directory put first
on ``PYTHONPATH``, and only the files the patch changes are replaced by real copies before ``patch`` runs, so the
installed Ray is never written. rayaccel's entry point reaches ``importlib.metadata`` through a ``dist-info``
written there from ``pyproject.toml``'s own declaration (what ``pip install`` writes; the shared .venv's editable
install predates the entry point).
"""

from __future__ import annotations

import configparser
import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest
from ports import free_ports
from test_ray_activation import PROBE, ray_cli, status_shows, warnings

from rayaccel.ray.activation import PTH_NAME, site_packages
from rayaccel.support.polling import wait_for

ROOT = Path(__file__).parents[2]
PATCH = ROOT / "upstream" / "ray-accelerator-entry-points.patch"
INSTALLED_RAY = Path(sysconfig.get_path("purelib")) / "ray"
PLUGINS = "acme=rayaccel_testplugins.acme,broken-import=rayaccel_testplugins.broken_import"

REGISTRY = ("import json, ray._private.accelerators as a; "
            "print(json.dumps(sorted([m.__module__ + '.' + m.__name__, m.get_resource_name()] "
            "for m in a.get_all_accelerator_managers())))")


def patched_files() -> list[str]:
    return [line.split()[1].removeprefix("b/python/") for line in PATCH.read_text().splitlines()
            if line.startswith("+++ ")]


def write_dist_info(directory: Path) -> None:
    """rayaccel's metadata as pip writes it from pyproject.toml: every entry point group it declares."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    info = directory / f"rayaccel-{project['version']}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: rayaccel\nVersion: {project['version']}\n")
    groups = configparser.ConfigParser(interpolation=None)
    groups.optionxform = str  # type: ignore[assignment,method-assign]  (entry point names keep their case)
    groups["console_scripts"] = project["scripts"]
    for group, points in project["entry-points"].items():
        groups[group] = points
    with (info / "entry_points.txt").open("w") as f:
        groups.write(f)


@pytest.fixture(scope="module")
def patched() -> Iterator[Path]:
    root = Path(tempfile.mkdtemp(prefix="rayaccel-patched-ray-"))
    try:
        subprocess.run(["cp", "-al", str(INSTALLED_RAY), str(root / "ray")], check=True, timeout=120)
        for name in patched_files():  # a real copy: patch must never write through a hard link
            (root / name).unlink()
            shutil.copyfile(INSTALLED_RAY / name.removeprefix("ray/"), root / name)
        done = subprocess.run(["patch", "-p2", "--forward", "--no-backup-if-mismatch", "-i", str(PATCH)], cwd=root,
                              capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stdout + done.stderr
        write_dist_info(root)
        yield root
    finally:
        shutil.rmtree(root, ignore_errors=True)


def env_for(patched: Path, **extra: str) -> dict[str, str]:
    path = os.pathsep.join([str(patched), os.environ.get("PYTHONPATH", "")])
    return {**os.environ, "PYTHONPATH": path, "PYTHONDONTWRITEBYTECODE": "1", "RAYACCEL_PLUGINS": PLUGINS, **extra}


def python(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    # Not from the repository's root: its rayaccel.egg-info (`-c` puts the working directory first on sys.path)
    # would be the rayaccel distribution importlib.metadata finds first.
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, timeout=300, env=env,
                          cwd=tempfile.gettempdir())


def test_the_patch_leaves_the_installed_ray_untouched_and_rays_own_families_unchanged(patched: Path):
    assert not (site_packages() / PTH_NAME).exists()  # rayaccel's activation is off in this environment
    for name in patched_files():
        assert (patched / name).read_bytes() != (INSTALLED_RAY / name.removeprefix("ray/")).read_bytes()
        assert os.stat(INSTALLED_RAY / name.removeprefix("ray/")).st_nlink == 1  # never linked into the copy
    original = json.loads(python("-c", REGISTRY, env={**os.environ, "RAYACCEL_PLUGINS": PLUGINS}).stdout)
    assert len(original) == 13
    # The discovery off: exactly Ray's set; on: Ray's set, each family with Ray's own manager, plus ACME.
    off = python("-c", REGISTRY, env=env_for(patched, RAY_ACCELERATOR_ENTRY_POINTS="0"))
    assert off.returncode == 0, off.stderr[-2000:]
    assert json.loads(off.stdout) == original
    on = python("-c", f"import ray; assert ray.__file__.startswith({str(patched)!r}); " + REGISTRY,
                env=env_for(patched, RAYACCEL_SIMULATE="acme/acme-4"))
    assert on.returncode == 0, on.stderr[-2000:]
    added = [entry for entry in json.loads(on.stdout) if entry not in original]
    assert added == [["rayaccel.ray.accelerator_managers.RayaccelAcmeAcceleratorManager", "ACME"]]
    # The plugin that raises at import costs its own family, with one warning naming it.
    (warning,) = [line for line in on.stderr.splitlines() if "broken-import" in line]
    assert "No module named 'acme_vendor_bindings'" in warning


@pytest.mark.ray
def test_plain_ray_start_on_the_patched_ray_finds_the_family_through_the_entry_point(patched: Path):
    from ray.util import get_node_ip_address

    port, *more = free_ports(6)
    address = f"{get_node_ip_address()}:{port}"
    env = env_for(patched, RAYACCEL_SIMULATE="acme/acme-4")
    try:
        started = python("-m", "ray.scripts.scripts", "start", "--head", f"--port={port}", "--num-cpus=1",
                         "--include-dashboard=false", f"--dashboard-agent-listen-port={more[0]}",
                         f"--dashboard-agent-grpc-port={more[1]}", f"--metrics-export-port={more[2]}",
                         f"--runtime-env-agent-port={more[3]}", f"--object-manager-port={more[4]}", env=env)
        assert started.returncode == 0, started.stderr[-3000:]
        assert not warnings(started.stderr)  # rayaccel's activation said nothing: it is off
        # The adapter's one warning for the plugin that raises at import; the node is up with ACME.
        (warning,) = [line for line in started.stderr.splitlines() if "broken-import" in line]
        assert "No module named 'acme_vendor_bindings'" in warning
        status_shows(address, "0.0/4.0 ACME", timeout=60)  # looked at in this process: no process per look
        wait_for(lambda: ray_cli("status", f"--address={address}"), lambda done: "0.0/4.0 ACME" in done.stdout,
                 timeout=60, interval=0.5, what="`ray status` to show 0.0/4.0 ACME")
        seen = python("-c", PROBE, address, env=env)
        assert seen.returncode == 0, seen.stderr[-3000:]
        found = json.loads(seen.stdout.strip().splitlines()[-1])
        assert found["resources"]["ACME"] == 4.0 and found["resources"]["accelerator_type:R1"] == 1.0
        (labels,) = found["labels"].values()
        # Ray's own label from the manager's type, and the vocabulary the manager publishes for its node.
        assert labels["ray.io/accelerator-type"] == "R1" and labels["rayaccel.io/family"] == "acme"
        assert "rayaccel.io/managed" not in labels  # no rayaccel node config was applied
        for seen in (found["tasks"], found["seen"]):  # 4 tasks at once, then 4 actors: one unit each
            assert sorted(env_value for env_value, _ in seen) == ["0", "1", "2", "3"]
            assert all([env_value] == ids for env_value, ids in seen)
        # A plain driver on the patched Ray validates the plugin's quantity rule (whole ACMEs only).
        assert found["refused"] and "ACME" in found["refused"]
    finally:
        subprocess.run([sys.executable, "-m", "rayaccel", "stop", f"--address={address}", "--grace", "3"],
                       capture_output=True, text=True, timeout=120)
