"""``rayaccel start`` / ``rayaccel stop`` as a user runs them: real subprocesses, a real ``ray start``.

``rayaccel stop`` without ``--address`` is ``ray stop``, which stops every Ray on the machine (other
test clusters included), so the test stops its node by address, which stops only that cluster.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys

import pytest

from rayaccel.cli.node import _alive, _uses_dir, cluster_processes, cluster_session_dirs

ENV = {"RAYACCEL_PLUGINS": "acme=rayaccel_testplugins.acme",
       # Deterministic across machines: whether Ray turns token auth on depends on ~/.ray/auth_token.
       "RAY_AUTH_MODE": "disabled"}


def run(*argv: str, timeout: float = 180) -> subprocess.CompletedProcess[str]:
    return subprocess.run(list(argv), capture_output=True, text=True, timeout=timeout, env={**os.environ, **ENV})


def rayaccel(*args: str) -> subprocess.CompletedProcess[str]:
    return run(sys.executable, "-m", "rayaccel", *args)


def _holds(pid: int, directory: str) -> bool:
    return _alive(pid) and _uses_dir(pid, directory)


def free_ports(n: int) -> list[int]:
    sockets = [socket.socket() for _ in range(n)]
    for s in sockets:
        s.bind(("", 0))
    ports = [s.getsockname()[1] for s in sockets]
    for s in sockets:
        s.close()
    return ports


@pytest.mark.ray
def test_start_dgx_h100_shows_in_ray_status_and_stop_stops_it():
    from ray.util import get_node_ip_address

    pytest.importorskip("rayaccel_nvidia", reason="the NVIDIA reference plugin provides nvidia/dgx-h100")
    port, client, agent, agent_grpc, metrics, runtime_env, objects = free_ports(7)
    address = f"{get_node_ip_address()}:{port}"
    started = rayaccel("start", "--head", "--simulate", "nvidia/dgx-h100",
                       "--monitor-interval", "2", f"--port={port}", f"--ray-client-server-port={client}",
                       f"--dashboard-agent-listen-port={agent}", f"--dashboard-agent-grpc-port={agent_grpc}",
                       f"--metrics-export-port={metrics}", f"--runtime-env-agent-port={runtime_env}",
                       f"--object-manager-port={objects}", "--num-cpus=1", "--include-dashboard=false")
    try:
        assert started.returncode == 0, started.stderr[-3000:]
        assert "node started with GPU=8, accelerator_type:H100=1" in started.stdout
        assert "health monitor polling every 2s" in started.stdout
        status = run(os.path.join(os.path.dirname(sys.executable), "ray"), "status", f"--address={address}")
        assert status.returncode == 0, status.stderr[-3000:]
        assert "0.0/8.0 GPU" in status.stdout
        sessions = cluster_session_dirs(address)
        assert sessions
    finally:
        stopped = rayaccel("stop", f"--address={address}", "--grace", "3")
    assert stopped.returncode == 0, stopped.stderr
    assert "stopped" in stopped.stdout
    assert cluster_processes(address) == []
    # Nothing of the node survives, not even the agents that rename themselves (ray::DashboardAgent).
    for session in sessions:
        assert not [pid for pid in os.listdir("/proc") if pid.isdigit() and _holds(int(pid), session)], session


@pytest.mark.parametrize(("args", "message"), [
    (["start", "--head", "--simulate", "acme/nope"], "unknown fixture 'acme/nope'"),
    (["start", "--simulate", "acme/acme-4"], "ray start needs --head"),
    (["start", "--head", "--simulate", "acme/acme-4", "--fault", "melted"], "declares no fault 'melted'"),
    (["start", "--head", "--fault", "fatal-2"], "faults need a simulated node"),
    (["stop", "--address=127.0.0.1:1"], "no Ray processes of cluster 127.0.0.1:1"),
])
def test_bad_input_is_one_line_and_exit_2(args, message):
    done = rayaccel(*args)
    assert done.returncode == 2, done.stderr
    assert message in done.stderr
    assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1
