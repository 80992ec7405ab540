"""The README's shell blocks, run verbatim: parsed from README.md at test time, never copied here.

Each block runs as one bash script (``set -e``: every line must succeed) from the repository root, in a
fresh user's environment: a temporary HOME, none of Ray's or rayaccel's variables set. The Ray journey
runs once, without a Ray token, where every line must find the one the ``export`` line's mode generates (the
README says a missing token is generated). A node started where a token exists (as ``make demo`` leaves one),
with ``ray status`` under the exported line, is test_ray_cli_node.py's DGX H100 journey; an explicit
``RAY_AUTH_MODE`` winning over the token file, test_ray_auth.py's.
"""

from __future__ import annotations

import os
import re
import socket
import subprocess
from pathlib import Path

import pytest

from rayaccel.cli.node import canonical_address
from rayaccel.ray.processes import cluster_processes
from rayaccel.support.polling import wait_for

REPO = Path(__file__).resolve().parents[2]
README = REPO / "README.md"
RAY_JOURNEY = "Running Ray on simulated hardware"
FIRST_LOOK = "A first look"


def shell_blocks(section: str) -> list[str]:
    """The fenced code blocks under the README heading ``## <section>``."""
    text = README.read_text(encoding="utf-8")
    parts = re.split(r"^## (.+)$", text, flags=re.MULTILINE)
    sections = dict(zip(parts[1::2], parts[2::2], strict=True))
    assert section in sections, f"README.md has no '## {section}' section (headings: {list(sections)})"
    blocks = re.findall(r"^```[a-z]*\n(.*?)^```", sections[section], flags=re.MULTILINE | re.DOTALL)
    assert blocks, f"README.md's '## {section}' has no code block"
    return blocks


def run_block(block: str, home: Path, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    # A file, not `bash -c BLOCK`: `rayaccel stop --address` signals every process whose command line
    # names the cluster, and the block's text does.
    script = home / "block.sh"
    script.write_text("set -euo pipefail\n" + block, encoding="utf-8")
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("RAY_", "RAYACCEL_")) and k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["HOME"] = str(home)
    return subprocess.run(["bash", str(script)], cwd=REPO, env=env, capture_output=True, text=True,
                          timeout=timeout)


def claimed(block: str, command: str) -> str:
    """What the README says a command shows: its ``# shows ...`` comment."""
    line = next(ln for ln in block.splitlines() if command in ln)
    found = re.search(r"#\s*shows (.+)$", line)
    assert found, f"the README line {line!r} says nothing it shows"
    return found.group(1).strip()


def test_the_first_look_commands_run_as_written(tmp_path: Path) -> None:
    before = set(REPO.iterdir())
    try:
        for block in shell_blocks(FIRST_LOOK):
            done = run_block(block, tmp_path, timeout=300)
            assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
            assert "nvidia/dgx-h100" in done.stdout  # `rayaccel fixtures` lists what the next lines inspect
    finally:  # the README writes what a user would (a recorded fixture) into the checkout: leave it clean
        for made in set(REPO.iterdir()) - before:
            if made.is_file():
                made.unlink()


@pytest.mark.ray
@pytest.mark.slow
def test_the_ray_journey_runs_as_written(tmp_path: Path) -> None:
    pytest.importorskip("rayaccel_nvidia", reason="the README's journey simulates an NVIDIA DGX H100")
    [block] = shell_blocks(RAY_JOURNEY)
    port = int(re.search(r"--port=(\d+)", block).group(1))  # type: ignore[union-attr]
    address = canonical_address(f"localhost:{port}")
    assert not cluster_processes(address), (
        f"a Ray cluster already runs at {address}, the port the README's journey uses: stop it "
        f"(rayaccel stop --address={address}) and run this test again")
    with socket.socket() as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as Ray's GCS binds: TIME_WAIT is no owner
        try:
            probe.bind(("", port))
        except OSError as e:
            pytest.fail(f"port {port}, which the README's Ray journey uses, is taken on this machine ({e}): "
                        "free it and run this test again")
    token_file = tmp_path / ".ray" / "auth_token"
    try:
        done = run_block(block, tmp_path)
    finally:
        if cluster_processes(address):  # a failed journey: stop its node, and only its node
            subprocess.run([str(REPO / ".venv" / "bin" / "rayaccel"), "stop", f"--address={address}", "--grace",
                            "3"], capture_output=True, timeout=120)
    out = done.stdout + done.stderr
    assert done.returncode == 0, out[-5000:]
    assert "Traceback" not in out, out[-5000:]
    assert claimed(block, "ray status") in done.stdout
    assert "Ray token authentication is ON" in done.stdout
    assert "stopped" in done.stdout and f"of cluster {address}" in done.stdout
    # The token the journey used: none was there, so one was generated for it.
    assert token_file.exists() and token_file.read_text().strip()
    wait_for(lambda: cluster_processes(address), lambda pids: pids == [], timeout=30,
             what=f"no process of the journey's cluster {address} left")
