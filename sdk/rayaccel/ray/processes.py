"""The Ray processes of one cluster on this machine, found by process tree and command line, and stopped.

What ``rayaccel stop --address`` does, and what tests use to see that a node left nothing behind.
"""

from __future__ import annotations

import os
import re
import signal
import tempfile
import time
from typing import TYPE_CHECKING

from rayaccel.support.signalling import alive_held, signal_held

if TYPE_CHECKING:
    import psutil

_SESSION_DIR = re.compile(r"(/[^\s=,]*/session_\d{4}-\d\d-\d\d_[\d_-]+)")


def _proc_table() -> dict[int, tuple[int, list[str]]]:
    """pid -> (parent pid, argv) for every process we may read."""
    return {pid: (ppid, argv) for pid, (ppid, argv, _) in _scan().items()}


def _scan() -> dict[int, tuple[int, list[str], psutil.Process]]:
    """pid -> (parent pid, argv, the process held by identity) for every process we may read."""
    import psutil

    table = {}
    for proc in psutil.process_iter(["ppid", "cmdline"]):
        info = proc.info
        table[proc.pid] = (int(info.get("ppid") or 0), list(info.get("cmdline") or []), proc)
    return table


def _core_processes(address: str, table: dict[int, tuple[int, list[str]]]) -> set[int]:
    port = address.rsplit(":", 1)[-1]
    markers = (f"--gcs-address={address}", f"--gcs_address={address}", f"--gcs_server_port={port}",
               f"--address={address}")
    return {pid for pid, (_, argv) in table.items() if any(arg in markers for arg in argv)}


def _sessions(pids: set[int], table: dict[int, tuple[int, list[str]]]) -> set[str]:
    return {m.group(1) for pid in pids for arg in table[pid][1] for m in [_SESSION_DIR.search(arg)] if m}


def cluster_session_dirs(address: str) -> set[str]:
    """The session directories (``/tmp/ray/session_...``) of the cluster's processes on this machine."""
    table = _proc_table()
    return _sessions(_core_processes(address, table), table)


def _spared() -> set[int]:
    """This process and its ancestors: ``rayaccel stop`` never stops its caller."""
    import psutil

    me = psutil.Process()
    return {me.pid, *(p.pid for p in me.parents())}


def cluster_processes(address: str) -> list[int]:
    """Pids of this machine's Ray processes that belong to the cluster at ``address`` (HOST:PORT): the pids of
    :func:`cluster_members`."""
    return [process.pid for process in cluster_members(address)]


def cluster_members(address: str) -> list[psutil.Process]:
    """This machine's Ray processes that belong to the cluster at ``address`` (HOST:PORT), held by identity (what
    :func:`stop_processes` signals: a number alone may name a stranger by then).

    The cluster's own processes only, found by process tree and command line (psutil): those whose
    command line names the cluster (``--gcs-address=HOST:PORT``, the GCS's ``--gcs_server_port=PORT``)
    or its session directory (the log monitor, the dashboard, re-parented when ``ray start`` exits), and
    every descendant of those (raylet workers, the agents that rename themselves ``ray::DashboardAgent``,
    the health monitor's plugin workers). A driver that merely connected (it holds log files in the
    session directory, but is no descendant of the node) is not one of them, and neither is the caller
    or any of its ancestors. Linux and macOS.
    """
    scan = _scan()
    table = {pid: (ppid, argv) for pid, (ppid, argv, _) in scan.items()}
    spared = _spared()
    found = _core_processes(address, table) - spared
    sessions = _sessions(found, table)
    for pid, (_, argv) in table.items():
        if pid not in found and pid not in spared and any(d in arg for arg in argv for d in sessions):
            found.add(pid)
    grew = True
    while grew:  # descendants of what was found (workers, agents)
        more = {pid for pid, (ppid, _) in table.items() if ppid in found and pid not in found and pid not in spared}
        found |= more
        grew = bool(more)
    return [scan[pid][2] for pid in sorted(found)]


def stop_processes(processes: list[psutil.Process], grace: float) -> None:
    """SIGTERM each, wait up to ``grace`` seconds for all to end, then SIGKILL what is left. Each is signalled as
    the process it was when found (psutil checks its start time): one that ended meanwhile, and whose number
    another process took, is never reached."""
    signal_held(processes, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline and alive_held(processes):
        time.sleep(0.2)
    signal_held(alive_held(processes), signal.SIGKILL)


def created_fault_files(processes: list[psutil.Process]) -> list[str]:
    """The fault files rayaccel created for these processes' simulated node (named in their environment), so
    that stopping the node removes them too; a fault file the operator gave is never one of them."""
    import psutil

    from rayaccel.simulation.host_factory import CREATED_FAULT_FILE_PREFIX, SIMULATE_FAULTS_ENV

    found = set()
    for process in processes:
        try:
            path = process.environ().get(SIMULATE_FAULTS_ENV, "")
        except (psutil.Error, OSError):
            continue
        if (path and os.path.dirname(path) == tempfile.gettempdir()
                and os.path.basename(path).startswith(CREATED_FAULT_FILE_PREFIX)):
            found.add(path)
    return sorted(found)
