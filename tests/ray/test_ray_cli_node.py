"""``rayaccel start`` / ``rayaccel stop`` as a user runs them: real subprocesses, a real ``ray start``.

``rayaccel stop`` without ``--address`` is ``ray stop``, which stops every Ray on the machine (other
test clusters included), so the test stops its node by address, which stops only that cluster.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from ports import free_ports

from rayaccel.ray.processes import cluster_processes, cluster_session_dirs
from rayaccel.support.liveness import alive
from rayaccel.support.polling import wait_for

ENV = {"RAYACCEL_PLUGINS": "acme=rayaccel_testplugins.acme",
       # Deterministic across machines: whether Ray turns token auth on depends on ~/.ray/auth_token.
       "RAY_AUTH_MODE": "disabled"}
RAY = os.path.join(os.path.dirname(sys.executable), "ray")


def _uses_dir(pid: int, directory: str) -> bool:
    """Whether the process holds a file under ``directory`` open (a driver does: its logs)."""
    import psutil

    try:
        paths = [f.path for f in psutil.Process(pid).open_files()]
    except (psutil.Error, OSError):
        return False
    return any(path == directory or path.startswith(directory + "/") for path in paths)


def run(*argv: str, timeout: float = 180, env: dict[str, str | None] | None = None) -> subprocess.CompletedProcess[str]:
    environ = {**os.environ, **ENV, **(env or {})}
    return subprocess.run(list(argv), capture_output=True, text=True, timeout=timeout,
                          env={k: v for k, v in environ.items() if v is not None})


def rayaccel(*args: str, env: dict[str, str | None] | None = None) -> subprocess.CompletedProcess[str]:
    return run(sys.executable, "-m", "rayaccel", *args, env=env)


def _holds(pid: int, directory: str) -> bool:
    return alive(pid) and _uses_dir(pid, directory)


def _node_start_processes(port: int) -> list[int]:
    """Pids of `rayaccel start`'s own `ray start` processes (rayaccel.ray.node_start) for the node on ``port``."""
    import psutil

    found = []
    for proc in psutil.process_iter(["cmdline"]):
        argv = proc.info.get("cmdline") or []
        if any("rayaccel.ray.node_start" in arg for arg in argv) and f"--port={port}" in argv:
            found.append(proc.pid)
    return found


def test_start_never_imports_ray_in_the_command():
    """The command builds the inventory and reads what its `ray start` process reports; only that process
    imports Ray (about a second of CPU, once): the command's inventory path and the reporting module import
    none of it, and the installed Ray is checked where it is loaded."""
    probe = ("import sys\n"
             "from rayaccel.cli.node import _prepare\n"
             "import rayaccel.ray.node_start\n"
             "config = _prepare('acme/acme-4', None, [], None)\n"
             "assert config.resources['ACME'] == 4, config.resources\n"
             "print(sorted(m for m in sys.modules if m == 'ray' or m.startswith('ray.')))\n")
    done = run(sys.executable, "-c", probe)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip() == "[]"


@pytest.mark.ray
def test_start_dgx_h100_shows_in_ray_status_and_stop_stops_it(tmp_path):
    """With a Ray token in HOME and RAY_AUTH_MODE unset, Ray's own rule turns token auth on: rayaccel
    start says so and prints the line to export, and `ray status` with that line works as soon as start
    returns (start waits until `ray status` lists the node)."""
    from ray.util import get_node_ip_address

    pytest.importorskip("rayaccel_nvidia", reason="the NVIDIA reference plugin provides nvidia/dgx-h100")
    (tmp_path / ".ray").mkdir()
    (tmp_path / ".ray" / "auth_token").write_text("e2c5c3f0c6b94d3a8f1d7a9b4e6c2d10")
    home = {"HOME": str(tmp_path), "RAY_AUTH_MODE": None}
    port, client, agent, agent_grpc, metrics, runtime_env, objects = free_ports(7)
    address = f"{get_node_ip_address()}:{port}"
    started = rayaccel("start", "--head", "--simulate", "nvidia/dgx-h100",
                       "--monitor-interval", "2", f"--port={port}", f"--ray-client-server-port={client}",
                       f"--dashboard-agent-listen-port={agent}", f"--dashboard-agent-grpc-port={agent_grpc}",
                       f"--metrics-export-port={metrics}", f"--runtime-env-agent-port={runtime_env}",
                       f"--object-manager-port={objects}", "--num-cpus=1", "--include-dashboard=false", env=home)
    try:
        assert started.returncode == 0, started.stderr[-3000:]
        assert "node started with GPU=8, GPU_domain_dgx-h100-01-nvswitch=8, accelerator_type:H100=1" in started.stdout
        assert "health monitor polling every 2s" in started.stdout
        assert "Ray token authentication is ON" in started.stdout
        fault_file = started.stdout.split("switch a fault on with: echo <fault> >> ", 1)[1].split()[0]
        assert os.path.isfile(fault_file)  # created for the simulated node: `rayaccel stop` removes it
        assert "export RAY_AUTH_MODE=token" in started.stdout
        node_id = started.stdout.split("rayaccel: node ", 2)[-1].split()[0]
        assert f"node {node_id} is up" in started.stdout
        # The process that ran `ray start` and joined the node has ended with the command (Ray's daemons run on).
        assert not _node_start_processes(port)
        # Right away, once: start returned only when `ray status` listed the node.
        status = run(RAY, "status", "--address=localhost:" + str(port), env={**home, "RAY_AUTH_MODE": "token"})
        assert status.returncode == 0, status.stderr[-3000:]
        assert node_id in status.stdout
        # The resources are in the same status report, but poll for them: a later report may be needed.
        wait_for(lambda: run(RAY, "status", f"--address={address}", env={**home, "RAY_AUTH_MODE": "token"}),
                 lambda done: "0.0/8.0 GPU" in done.stdout, timeout=60, interval=1,
                 what="`ray status` to show 0.0/8.0 GPU")
        # Without the exported line, Ray's own `ray status` is refused: the line is needed.
        refused = run(RAY, "status", f"--address={address}", env=home)
        assert refused.returncode != 0 and "AuthenticationError" in refused.stderr
        sessions = cluster_session_dirs(address)
        assert sessions
    finally:
        stopped = rayaccel("stop", f"--address={address}", "--grace", "3")
    assert stopped.returncode == 0, stopped.stderr
    assert "stopped" in stopped.stdout
    assert not os.path.exists(fault_file)
    wait_for(lambda: cluster_processes(address), lambda pids: pids == [], timeout=30,
             what=f"no process of cluster {address} left")
    # Nothing of the node survives, not even the agents that rename themselves (ray::DashboardAgent).
    for session in sessions:
        wait_for(lambda s=session: [pid for pid in os.listdir("/proc") if pid.isdigit() and _holds(int(pid), s)],
                 lambda holders: holders == [], timeout=30, what=f"no process holding a file in {session}")


@pytest.mark.parametrize(("args", "message"), [
    (["start", "--head", "--simulate", "acme/nope"], "unknown fixture 'acme/nope'"),
    (["start", "--simulate", "acme/acme-4"], "ray start needs --head"),
    (["start", "--head", "--simulate", "acme/acme-4", "--fault", "melted"], "declares no fault 'melted'"),
    (["start", "--head", "--fault", "fatal-2"], "faults need a simulated node"),
    (["stop", "--address=127.0.0.1:1"], "no Ray processes of cluster 127.0.0.1:1"),
    # Ray's own refusal of an option passed through: its exception in one line, not its traceback.
    (["start", "--head", "--simulate", "acme/acme-4", "--port=10005", "--min-worker-port=10000",
      "--max-worker-port=10010", "--no-monitor"], "ValueError: Ray component worker_ports is trying to use a port"),
])
def test_bad_input_is_one_line_and_exit_2(args, message):
    done = rayaccel(*args)
    assert done.returncode == 2, done.stderr
    assert message in done.stderr
    assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1
