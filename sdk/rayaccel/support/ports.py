"""Free TCP ports for a Ray node started beside others.

A port found by binding port 0 and closing the socket comes from the kernel's ephemeral range, the range
every process's outgoing connection and every ``bind(0)`` draws from, Ray's own processes included. Between
choosing such a port and the node's process binding it, another process can be handed the same port: then
one of the node's processes fails to bind (Ray's dashboard agent dies on its metrics port, the raylet exits
with it, and ``ray start`` waits 30 s for a raylet that is gone). So ports are chosen outside the ephemeral
range and outside the range Ray's workers bind in, where nothing is handed out unasked, and each is checked
free before it is handed out, never twice by one process.
"""

from __future__ import annotations

import random
import socket
import threading
from collections.abc import Sequence
from pathlib import Path

#: The kernel's ephemeral port range (Linux).
EPHEMERAL_RANGE_FILE = Path("/proc/sys/net/ipv4/ip_local_port_range")
#: Linux's default, for a kernel that does not say.
DEFAULT_EPHEMERAL = (32768, 60999)
#: `ray start`'s defaults for --min-worker-port / --max-worker-port: Ray's workers bind there.
RAY_WORKER_PORTS = range(10002, 20000)
#: Below this, ports of well-known services (and Ray's fixed defaults: 6379, 8265, 10001).
LOWEST = 20000
HIGHEST = 65535
#: Candidates tried before falling back to the kernel's choice (only where nearly nothing is free).
MAX_TRIES = 2000

_handed_out: set[int] = set()
_lock = threading.Lock()
_random = random.SystemRandom()


def ephemeral_range(path: Path = EPHEMERAL_RANGE_FILE) -> tuple[int, int]:
    """The kernel's ephemeral range, inclusive; Linux's default where it cannot be read."""
    try:
        low, high = (int(word) for word in path.read_text(encoding="ascii").split()[:2])
    except (OSError, ValueError):
        return DEFAULT_EPHEMERAL
    return (low, high) if 0 < low <= high <= HIGHEST else DEFAULT_EPHEMERAL


def candidate_ports(ephemeral: tuple[int, int] | None = None) -> list[int]:
    """Ports nobody is handed without asking: not ephemeral, not Ray's worker ports, not well-known."""
    low, high = ephemeral or ephemeral_range()
    return [port for port in range(LOWEST, HIGHEST + 1)
            if not low <= port <= high and port not in RAY_WORKER_PORTS]


def _bindable(port: int) -> bool:
    with socket.socket() as probe:
        try:
            probe.bind(("", port))
        except OSError:
            return False
    return True


def _kernel_port() -> int:
    with socket.socket() as probe:
        probe.bind(("", 0))
        return int(probe.getsockname()[1])


def free_ports(n: int, pool: Sequence[int] | None = None) -> list[int]:
    """``n`` distinct ports, each free now and never handed out before by this process, from ``pool``
    (default :func:`candidate_ports`)."""
    pool = list(candidate_ports() if pool is None else pool)
    ports: list[int] = []
    with _lock:
        for _ in range(MAX_TRIES):
            if len(ports) == n or not pool:
                break
            port = _random.choice(pool)
            if port not in _handed_out and _bindable(port):
                _handed_out.add(port)
                ports.append(port)
        while len(ports) < n:  # nearly everything outside the ephemeral range is taken: the kernel chooses
            port = _kernel_port()
            if port not in _handed_out:
                _handed_out.add(port)
                ports.append(port)
    return ports


def free_port() -> int:
    """One port, as :func:`free_ports`."""
    return free_ports(1)[0]
