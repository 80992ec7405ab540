"""The one host factory: ``--simulate`` (a fixture ref, file or Fixture), faults and a fault file -> a Host.

The CLI, the Ray bridge, onboarding, the conformance suite and every process on a simulated Ray node
(through RAYACCEL_SIMULATE) build their host here, so a simulated machine means the same thing everywhere.
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

from rayaccel.errors import FixtureError
from rayaccel.hosts.fixtures import Fixture, installed_fixtures, resolve_fixture
from rayaccel.hosts.seam import Host, RealHost
from rayaccel.hosts.simulated import SimulatedHost
from rayaccel.plugins.manager import PluginManager, default_manager

#: Ray nodes started by the SDK carry these, so each process on the node sees the same simulated machine.
SIMULATE_ENV = "RAYACCEL_SIMULATE"
SIMULATE_FAULTS_ENV = "RAYACCEL_SIMULATE_FAULT_FILE"

#: The fault files rayaccel creates for simulated nodes (in the temporary directory) are named so, and are
#: removed with their node: by :func:`rayaccel.ray.shutdown`, or by ``rayaccel stop --address``.
CREATED_FAULT_FILE_PREFIX = "rayaccel-faults-"

#: What a caller asking for faults on the real machine is told (callers with options of their own say it their way).
NO_FAULTS_ON_REAL = "faults need a simulated node: pass simulate=<fixture> as well"


def simulated_fixture(simulate: str | Fixture, faults: Iterable[str] = (),
                      manager: PluginManager | None = None) -> Fixture:
    """The fixture named by ``simulate`` (``plugin/name`` or file, looked up in ``manager``'s plugins,
    default the installed ones), with ``faults`` checked against it."""
    fixture = simulate if isinstance(simulate, Fixture) else resolve_fixture(simulate, manager or default_manager())
    for name in faults:
        fixture.fault(name)  # a clear error naming the fixture's faults, before anything is written
    return fixture


def simulated_host(simulate: str | Fixture, faults: Iterable[str] = (), fault_file: str | None = None,
                   manager: PluginManager | None = None) -> SimulatedHost:
    """A simulated host with ``faults`` active from the start.

    With a ``fault_file`` the faults are appended to it, so every process reading the file (workers, the
    health monitor) sees them too, and more can be switched on later by appending names.
    """
    faults = list(faults)
    fixture = simulated_fixture(simulate, faults, manager)
    if fault_file is None:
        return SimulatedHost(fixture, faults=faults)
    if faults:
        _append_faults(fault_file, faults)
    return SimulatedHost(fixture, fault_file=fault_file)


def _append_faults(fault_file: str, faults: list[str]) -> None:
    """Append fault names to a regular file: never through a symlink (into whatever it names), never blocking
    on a FIFO; anything else is one line naming the file."""
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    try:
        fd = os.open(fault_file, flags, 0o644)
    except OSError as e:
        raise FixtureError(f"fault file {fault_file!r} cannot be written ({e.strerror or e}): give a regular file, "
                           "not a symlink or a FIFO") from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise FixtureError(f"fault file {fault_file!r} is not a regular file: give the path of one")
        os.write(fd, "".join(f"{name}\n" for name in faults).encode())
    finally:
        os.close(fd)


def make_host(simulate: str | Fixture | None, faults: Iterable[str] = (), fault_file: str | None = None,
              manager: PluginManager | None = None) -> Host:
    """This machine when ``simulate`` is None (faults then are an error), else :func:`simulated_host`."""
    faults = list(faults)
    if simulate is None:
        if faults or fault_file:
            raise FixtureError(NO_FAULTS_ON_REAL)
        return RealHost()
    return simulated_host(simulate, faults, fault_file, manager)


@dataclass(frozen=True)
class NodeHost:
    """The host a node is started for, chosen at the edge (``rayaccel start``, a driver's ``init``/``add_node``):
    ``simulate`` and ``fault_file`` are what the node's processes get in their env to see the same machine
    (:func:`host_from_env`); ``created``: the fault file was made for this node (remove it if the node does not
    start, or with it)."""

    host: Host
    simulate: str | None
    fault_file: str | None
    created: bool = False

    def discard(self) -> None:
        """Remove the fault file made for this node (one that will not start); a given one is never removed."""
        if self.created and self.fault_file is not None:
            with contextlib.suppress(OSError):
                os.unlink(self.fault_file)


def node_host(simulate: str | Fixture | None, faults: Iterable[str] = (), fault_file: str | None = None,
              manager: PluginManager | None = None) -> NodeHost:
    """The host a node is started for, and its fault file: made for a simulated node when not given, so every
    process on the node (workers, the health monitor) sees the faults asked for at start, and more can be
    switched on later by appending names."""
    faults = list(faults)
    machine = simulate
    created = False
    if simulate is not None and fault_file is None:
        machine = simulated_fixture(simulate, faults, manager)  # checked before a file is made for it
        fd, fault_file = tempfile.mkstemp(prefix=CREATED_FAULT_FILE_PREFIX, suffix=".txt")
        os.close(fd)
        created = True
    ref = simulate if isinstance(simulate, str) else None
    try:
        host = make_host(machine, faults, fault_file, manager)
    except BaseException:
        NodeHost(RealHost(), ref, fault_file, created).discard()
        raise
    return NodeHost(host, ref, fault_file, created)


def host_from_env(manager: PluginManager) -> Host:
    """The simulated host named by RAYACCEL_SIMULATE (fixture ref or path), else the real one."""
    ref = os.environ.get(SIMULATE_ENV)
    if not ref:
        return RealHost()  # a fault file without a fixture means nothing
    return simulated_host(ref, fault_file=os.environ.get(SIMULATE_FAULTS_ENV) or None, manager=manager)


def fixture_hosts(manager: PluginManager, plugins: Sequence[str] | None = None) -> Iterator[tuple[str, SimulatedHost]]:
    """Each installed fixture of ``manager``'s plugins (or those named) as ``(plugin/name, its simulated host)``,
    loaded one at a time as the caller asks: the recordings of machines the cloud catalog checks hints against."""
    for ref, path in installed_fixtures(manager).items():
        if plugins is None or ref.split("/", 1)[0] in plugins:
            yield ref, simulated_host(str(path), manager=manager)
