"""Unit-addressed scheduling: Ray's instance ids are tokens, a node-local claims table binds them to devices.

Ray 2.60 hands out the instances of a unit-instance resource (GPU, a day-zero family) lowest free index
first, and a task cannot name instances. What Ray does guarantee: the instance ids held by running tasks
and actors are pairwise disjoint. So in each worker (:mod:`rayaccel.ray.worker_preload`) the ids Ray assigned are
taken as *tokens*: the worker claims as many physical units in this node's claims table and gives the
family's visible-devices variable (and ``get_accelerator_ids()``) the claimed units.

The rule that makes it correct without watching tasks end: when a task arrives with tokens R, every claim
holding a token of R is provably over (Ray reissued its token) and is dropped, as are claims of dead
processes. The claims left hold tokens disjoint from R and from each other, so at most N - |R| units are
claimed and |R| free units exist; the worker takes the best-connected |R| of them by the node's topology
(:func:`rayaccel.inventory.topology.best_connected_ids`). A normal task releases its claim when it ends
(where Ray restores the env var), so stale claims are rare; one that is left (an idle worker's) can only
make a later choice less good, never wrong.

On a uniform family (every choice as good as another) whose Ray ids are its units, a task keeps Ray's
choice and only locks its units (:class:`ClaimsTable`): it meets the table only around a cordon.

A cordon (the health monitor's) is a claim of the failed device's units that no task makes: it is tagged
with the token of the single-bundle placement group that holds one unit of the family for it, so Ray
offers N - 1 and the claims still add up.

The node's placement table (:func:`placement_table`, JSON in ``RAYACCEL_NODE_PLACEMENT``) is computed from
the inventory when the node starts: per family resource its schedulable units in the node's order, which
units share a device, the link weights between devices, and the units of each scale-up domain. A worker
never calls a plugin.
"""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import fcntl
import functools
import json
import logging
import os
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rayaccel.inventory.topology import Adjacency, best_connected_ids
from rayaccel.support.liveness import alive

if TYPE_CHECKING:
    from rayaccel.records import FamilyInventory, NodeInventory

logger = logging.getLogger("rayaccel.ray.claims")

#: JSON {resource: {"units", "devices", "links", "domains"}}: the node's placement table (set at node start).
PLACEMENT_ENV = "RAYACCEL_NODE_PLACEMENT"
#: How long a worker waits for the claims table's lock before failing its task (seconds).
LOCK_TIMEOUT = 30.0
#: How long a task that holds a cordoned unit's token (a new cordon's window, every healthy unit busy) waits
#: for a running task to release a healthy unit before it fails (seconds), and how often it looks.
CORDON_WAIT_S = 30.0
CORDON_POLL_S = 0.005
#: A claim younger than this is taken as its process's without asking whether the process runs (seconds).
LIVENESS_AFTER_S = 1.0
#: A worker chooses by exhaustive search up to this many candidate sets (a few ms), by greedy choice
#: improved by swaps beyond (optimal on the shipped topologies): it chooses while a task starts.
WORKER_EXHAUSTIVE_LIMIT = 2_000
#: Weight between two units of one device: more than any sum of link weights (whole MB/s), so a request
#: for several units of multi-unit devices fills the fewest devices.
SAME_DEVICE_WEIGHT = 10**15
#: The name of the health monitor's task that tags a cordon with its placement group's tokens: it claims
#: nothing itself (its token is the cordon's).
CORDON_TAG_TASK = "rayaccel-cordon-tag"
#: The separator in a per-domain resource name: ``<resource>_domain_<domain id>``.
DOMAIN_RESOURCE_INFIX = "_domain_"


def domain_resource(resource: str, domain_id: str) -> str:
    """The per-domain count resource of a family's units in one scale-up domain (a valid Ray resource name:
    the id's characters outside ``[A-Za-z0-9_.-]`` become ``-``)."""
    from rayaccel.labels import to_label_value

    return f"{resource}{DOMAIN_RESOURCE_INFIX}{to_label_value(domain_id)}"


# The placement table (from the inventory, at node start) ----------------------------------------------

def family_placement(family: FamilyInventory) -> dict[str, Any]:
    """One family's entry of the placement table (JSON-ready; unit and device positions, not ids, in links)."""
    from rayaccel.inventory.topology import adjacency

    units = list(family.schedulable_units)
    position = {unit: i for i, unit in enumerate(units)}
    devices = [d for d in family.devices if any(u in position for u in d.unit_ids)]
    graph = adjacency(devices, family.topology.links)
    index = {d.id: i for i, d in enumerate(devices)}
    links = sorted([index[a], index[b], weight] for a, peers in graph.items() for b, weight in peers.items()
                   if index[a] < index[b] and weight > 0)
    domains = {}
    for domain in family.topology.domains:
        members = [position[u] for d in devices if d.id in domain.members for u in d.unit_ids if u in position]
        if members:
            domains[domain_resource(family.family.resource_name, domain.id)] = sorted(members)
    return {"units": units, "devices": [[position[u] for u in d.unit_ids if u in position] for d in devices],
            "device_ids": [d.id for d in devices], "links": links, "domains": domains}


def partition_placement(family: FamilyInventory, ids: Sequence[str]) -> dict[str, Any]:
    """A partition profile's entry of the placement table: its partitions as the units, grouped by the device
    they are part of and linked as their devices are, so a request for several fills the fewest devices (the
    8 CPX partitions of one MI300X before any of the next) and then the best-connected ones."""
    from rayaccel.inventory.topology import adjacency

    position = {unit: i for i, unit in enumerate(ids)}
    parents = [d for d in family.devices if any(p.id in position for p in d.partitions)]
    graph = adjacency(parents, family.topology.links)
    index = {d.id: i for i, d in enumerate(parents)}
    links = sorted([index[a], index[b], weight] for a, peers in graph.items() for b, weight in peers.items()
                   if a in index and b in index and index[a] < index[b] and weight > 0)
    return {"units": list(ids), "devices": [[position[p.id] for p in d.partitions if p.id in position]
                                            for d in parents],
            "device_ids": [d.id for d in parents], "links": links, "domains": {}}


def placement_table(inventory: NodeInventory) -> dict[str, dict[str, Any]]:
    """Resource name -> :func:`family_placement`, for every family with schedulable units, and
    :func:`partition_placement` for every partition profile's resource (``GPU_MIG_1g.10gb``)."""
    table = {f.family.resource_name: family_placement(f) for f in inventory.families if f.schedulable_units}
    for family in inventory.families:
        table.update({name: partition_placement(family, ids) for name, ids in family.partition_units.items() if ids})
    return table


def domain_resources(inventory: NodeInventory) -> dict[str, float]:
    """The per-domain count resources of a node: for each family and scale-up domain, its schedulable units
    in that domain (``{"QTS_domain_qts-node-qlink0": 3.0, ...}``)."""
    return {name: float(len(members)) for entry in placement_table(inventory).values()
            for name, members in entry["domains"].items()}


@dataclass(frozen=True, eq=False)  # hashed by identity: one per worker, a cache key
class FamilyUnits:
    """A family's placement table entry as a worker uses it."""

    resource: str
    units: tuple[str, ...]
    graph: Mapping[str, Mapping[str, int]]
    domains: Mapping[str, frozenset[str]]
    #: Device id -> its units (the health monitor cordons a device by them).
    device_units: Mapping[str, tuple[str, ...]]
    #: Every set of k units is as well connected as any other (one unit per device, every pair linked
    #: alike, each domain all of them): which free units a task gets cannot change any later choice.
    uniform: bool = False
    #: Unit -> its position in ``units`` (its byte in a uniform family's unit locks).
    position: Mapping[str, int] = field(default_factory=dict)
    #: The instance ids Ray gives out for the resource are the units' ids (so a task of a uniform family can
    #: keep them): true when the units are ``0..n-1`` (Ray's own indices) unless :meth:`with_rays_ids` says
    #: otherwise (a partition profile's units are partition ids, its tokens indices).
    rays_ids: bool = False

    @classmethod
    def from_json(cls, resource: str, entry: Mapping[str, Any]) -> FamilyUnits:
        units = tuple(str(u) for u in entry["units"])
        graph: Adjacency = {u: {} for u in units}
        devices = [[units[i] for i in group] for group in entry.get("devices", [])]
        for group in devices:
            for a in group:
                for b in group:
                    if a != b:
                        graph[a][b] = SAME_DEVICE_WEIGHT
        for i, j, weight in entry.get("links", []):
            for a in devices[i]:
                for b in devices[j]:
                    graph[a][b] = graph[b][a] = int(weight)
        domains = {str(name): frozenset(units[i] for i in members)
                   for name, members in entry.get("domains", {}).items()}
        device_units = {str(d): tuple(group) for d, group in zip(entry.get("device_ids", []), devices, strict=False)}
        weights = {graph[a].get(b, 0) for a in units for b in units if a != b}
        uniform = (all(len(group) == 1 for group in devices) and len(weights) <= 1
                   and all(len(members) == len(units) for members in domains.values()))
        return cls(resource=resource, units=units, graph=graph, domains=domains, device_units=device_units,
                   uniform=uniform, position={u: i for i, u in enumerate(units)},
                   rays_ids=units == tuple(str(i) for i in range(len(units))))

    def with_rays_ids(self, original: Sequence[object] | None) -> FamilyUnits:
        """This family in a worker whose Ray maps its instance index i to ``original[i]`` (the visible-devices
        variable the node started with; None: Ray's ids are the indices)."""
        ids = [str(i) for i in original] if original is not None else [str(i) for i in range(len(self.units))]
        return dataclasses.replace(self, rays_ids=set(ids) == set(self.units))

    def choose(self, candidates: Sequence[str], k: int) -> list[str]:
        """The best-connected k of ``candidates`` (ties: earlier in the node's order), in the node's order."""
        rank = {u: i for i, u in enumerate(self.units)}
        ordered = tuple(sorted(set(candidates), key=rank.__getitem__))
        return sorted(_best(self, ordered, k), key=rank.__getitem__)


@functools.lru_cache(maxsize=256)
def _best(family: FamilyUnits, ordered: tuple[str, ...], k: int) -> tuple[str, ...]:
    # The same free set recurs (an idle node, a steady mix of work): choose once per worker.
    return tuple(best_connected_ids(ordered, {u: dict(family.graph[u]) for u in ordered}, k,
                                    exhaustive_limit=WORKER_EXHAUSTIVE_LIMIT))


def load_placement(text: str | None) -> dict[str, FamilyUnits]:
    """The placement table of ``RAYACCEL_NODE_PLACEMENT`` (empty when unset or unreadable: Ray's choice stands)."""
    if not text:
        return {}
    try:
        data = json.loads(text)
        return {str(name): FamilyUnits.from_json(str(name), entry) for name, entry in data.items()}
    except (ValueError, KeyError, TypeError, IndexError) as e:
        logger.error("rayaccel: %s is not a placement table (%s); Ray's instance order is used", PLACEMENT_ENV, e)
        return {}


# The claims table ------------------------------------------------------------------------------------

#: Width of the decimal length that prefixes the claims table's text in its file.
_LENGTH_WIDTH = 10
#: Bytes read with the length (a node's table is a few KB): one read in the common case.
_READ_AHEAD = 16 * 1024
#: (path, pid) -> this process's open descriptor of a claims table or of a family's unit locks.
_OPEN: dict[tuple[str, int], int] = {}
#: (unit-lock path, pid) -> the tokens this process holds of a uniform family and the units they gave it.
_HELD: dict[tuple[str, int], tuple[list[str], list[str]]] = {}
#: The threads of one process share its descriptors, and so its flock: they take turns here first.
_THREADS = threading.Lock()
#: This process's id, in [0]: a uniform family's claim and release asked the kernel five times, each a point
#: where a loaded node's scheduler sets the worker aside (~1/8 of the hook's wall-clock samples under py-spy at
#: load 80); a forked child sets its own before it runs anything else.
_PID = [os.getpid()]


def _refresh_pid() -> None:
    _PID[0] = os.getpid()


os.register_at_fork(after_in_child=_refresh_pid)


def _open(path: str, pid: int) -> int:
    # One open file description per process: flock and fcntl locks belong to it (fcntl ones to the process,
    # dropped when any descriptor of the file closes: this is the only one, never closed), so a forked child
    # opens its own.
    fd = _OPEN.get((path, pid))
    if fd is None:
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        fd = _OPEN[(path, pid)] = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o666)
    return fd


def _lock_unit(fd: int, position: int, shared: bool) -> bool:
    """Lock one unit's byte for this process, without waiting: False when another process holds it (shared:
    beside other shared holders only)."""
    try:
        fcntl.lockf(fd, (fcntl.LOCK_SH if shared else fcntl.LOCK_EX) | fcntl.LOCK_NB, 1, position)
        return True
    except OSError as e:
        if e.errno in (errno.EAGAIN, errno.EACCES):
            return False
        raise


def _unlock_units(fd: int) -> None:
    fcntl.lockf(fd, fcntl.LOCK_UN, 0, 0)  # every byte this process locked in the file: one syscall


def _parse(text: bytes, path: Path) -> dict[str, list[dict[str, Any]]]:
    if not text:
        return {}
    try:
        data = json.loads(text)
    except ValueError:
        logger.warning("rayaccel: the claims table %s was unreadable; starting a new one", path)
        return {}
    return data if isinstance(data, dict) else {}


class ClaimsTable:
    """One node's claims, a JSON file rewritten in place under ``fcntl.flock``. Each claim: ``pid``,
    ``tokens`` (Ray instance ids), ``units`` (the physical units), ``cordon`` (the health monitor's, naming
    the device).

    A task of a family with topology to exploit goes through it at its start and end, so it costs a few
    syscalls: each process keeps the file open (one descriptor per process and path), locks it, reads it and
    writes it back with one ``pwrite`` of a length-prefixed text (a writer killed mid-way leaves the old length
    or the new text whole, never half of one: no temporary file and rename, which cost milliseconds per task
    on ext4 under load).

    A uniform family (:attr:`FamilyUnits.uniform`: no choice is better than another) whose Ray ids are its
    units' (:attr:`FamilyUnits.rays_ids`; a partition profile's are not) keeps Ray's choice: a
    task uses the units Ray's ids name, marking each with a shared ``fcntl`` lock on its byte of the family's
    unit-lock file (:meth:`units_path`), and releases them with one unlock, never reading the table. Such a
    task goes through the table only when its units are not simply its ids': while the family has a cordon
    (:meth:`cordoned_path` exists) or when a unit its ids name is locked exclusively (another task was given
    it in place of a cordoned one). Under the table's lock it then takes its ids' units where it can and any
    other unit no process has locked for the rest, locking those exclusively. The kernel drops a dead
    process's locks, so no liveness check is needed, and a unit in use is always locked before it is used.
    """

    def __init__(self, path: str | Path, lock_timeout: float = LOCK_TIMEOUT) -> None:
        self.path = Path(path)
        self.lock_timeout = lock_timeout
        self._files: dict[str, tuple[str, str]] = {}  # resource -> its unit locks and cordon marker, as text

    def _fd(self) -> int:
        return _open(str(self.path), _PID[0])

    def _family_files(self, resource: str) -> tuple[str, str]:
        # Every task start and end asks: computed once (pathlib would cost more than the locking).
        files = self._files.get(resource)
        if files is None:
            files = self._files[resource] = (str(self.units_path(resource)), str(self.cordoned_path(resource)))
        return files

    def units_path(self, resource: str) -> Path:
        """A uniform family's unit locks: byte i is locked (``fcntl``) by every process that uses unit i."""
        return self.path.with_name(f"{self.path.name}.{resource}.units")

    def cordoned_path(self, resource: str) -> Path:
        """Exists while ``resource`` has a cordon: every task of a uniform family then chooses under the lock."""
        return self.path.with_name(f"{self.path.name}.{resource}.cordoned")

    @contextlib.contextmanager
    def _locked(self) -> Iterator[dict[str, list[dict[str, Any]]]]:
        """The table, under an exclusive lock; written back when the block ends normally and changed it."""
        fd = self._fd()
        deadline = time.monotonic() + self.lock_timeout
        if not _THREADS.acquire(timeout=self.lock_timeout):  # flock does not exclude threads sharing the fd
            raise TimeoutError(f"rayaccel: the claims table {self.path} stayed locked for {self.lock_timeout:g} s "
                               "by another thread of this process")
        try:
            yield from self._flocked(fd, deadline)
        finally:
            _THREADS.release()

    def _flocked(self, fd: int, deadline: float) -> Iterator[dict[str, list[dict[str, Any]]]]:
        # A holder keeps the lock for a few syscalls: look again soon, then less often (a holder the
        # scheduler set aside on a loaded node), so that waiters neither add latency nor burn a core.
        pause = 0.00005
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except OSError as e:
                if e.errno not in (errno.EAGAIN, errno.EACCES) or time.monotonic() > deadline:
                    raise TimeoutError(f"rayaccel: the claims table {self.path} stayed locked for "
                                       f"{self.lock_timeout:g} s; a process of this node holds it (lsof "
                                       f"{self.path} names it)") from e
                time.sleep(pause)
                pause = min(2 * pause, 0.002)
        try:
            text = self._read(fd)
            table = _parse(text, self.path)
            yield table
            after = json.dumps(table, sort_keys=True, separators=(",", ":")).encode()
            if after != text:
                record = f"{len(after):{_LENGTH_WIDTH}d}\n".encode() + after
                os.pwrite(fd, record, 0)  # one write: the length and the text it counts
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)

    @staticmethod
    def _read(fd: int) -> bytes:
        head = os.pread(fd, _LENGTH_WIDTH + 1 + _READ_AHEAD, 0)
        if len(head) <= _LENGTH_WIDTH:
            return b""
        try:
            length = int(head[:_LENGTH_WIDTH])
        except ValueError:
            return b"?"  # not a table this class wrote: _parse says so
        body = head[_LENGTH_WIDTH + 1:]
        if length > len(body):
            body += os.pread(fd, length - len(body), _LENGTH_WIDTH + 1 + len(body))
        return body[:length]

    def snapshot(self) -> dict[str, list[dict[str, Any]]]:
        """Resource -> its claims, as they are now (read under the lock)."""
        with self._locked() as table:
            return json.loads(json.dumps(table))  # type: ignore[no-any-return]

    def claim(self, family: FamilyUnits, tokens: Sequence[str], within: str | None = None,
              pid: int | None = None, shared: bool = False, wait: float = CORDON_WAIT_S) -> list[str]:
        """Bind ``tokens`` (what Ray assigned this process) to as many physical units and return them.

        ``within``: a per-domain resource the task holds too; its units are preferred (all of them from
        that domain when enough are free there). ``shared``: the task holds a fraction of its token (e.g.
        ``num_gpus=0.5``), which Ray may give other running tasks too: a claim of exactly that token is
        then not over but shared, and its units are this task's as well.

        A cordoned unit is never chosen. Only while a new cordon waits for its placement group's token can
        a task find fewer healthy free units than it holds tokens (every other unit busy): it then waits up
        to ``wait`` seconds for a running task to release one (its claim, ``waiting`` and holding no unit,
        says so meanwhile), and fails with :class:`CordonedUnitsError` after that.
        """
        own = pid is None or pid == _PID[0]
        pid = _PID[0] if pid is None else pid
        wanted = sorted({str(t) for t in tokens})
        if not wanted:
            return []
        if family.uniform and family.rays_ids and own:  # the unit locks (class docstring); nothing to look up
            return self._claim_uniform(family, wanted, wait)
        return self._until_claimed(family, wanted, pid, wait,
                                   lambda table: _claim(table, family, wanted, within, pid, shared))

    def _until_claimed(self, family: FamilyUnits, wanted: list[str], pid: int, wait: float,
                       attempt: Any) -> list[str]:
        """``attempt`` the claim under the lock until it gives units, for up to ``wait`` seconds."""
        deadline = time.monotonic() + wait
        while True:
            with self._locked() as table:
                chosen = attempt(table)
            if isinstance(chosen, list):
                return chosen
            if time.monotonic() > deadline:
                with self._locked() as table:
                    table[family.resource] = [c for c in table.get(family.resource, [])
                                              if not (c.get("waiting") and c.get("pid") == pid)]
                why = (f"the health monitor cordoned {', '.join(chosen[1])} (its placement group does not hold the "
                       "token yet), and a cordoned device is never given to a task" if chosen[1] else
                       "live processes hold the rest (a task that ended without Ray's env reset keeps its units "
                       "until its process exits)")
                raise CordonedUnitsError(
                    f"rayaccel: this task holds {len(wanted)} {family.resource} token(s) but only "
                    f"{chosen[0]} healthy unit(s) stayed free for {wait:g} s: {why}: the task does not start here "
                    "(Ray retries it while its max_retries last); the node offers one unit fewer once the cordon "
                    "holds its token")
            time.sleep(CORDON_POLL_S)

    def _claim_uniform(self, family: FamilyUnits, wanted: list[str], wait: float) -> list[str]:
        path, marker = self._family_files(family.resource)
        pid = _PID[0]
        held = _HELD.get((path, pid))
        if held is not None and held[0] == wanted:  # the same task or actor asking again: the same units
            return list(held[1])
        fd = _open(path, pid)
        if held is not None:  # other tokens: the last task's release was missed; its units are not this one's
            _unlock_units(fd)
            del _HELD[(path, pid)]
        natural = [u for u in wanted if u in family.position]
        # Locked before the cordon marker is looked at: a task that finds no marker started before the cordon,
        # and a substitute chosen under the table's lock never takes a unit locked here.
        if (len(natural) == len(wanted) and all(_lock_unit(fd, family.position[u], shared=True) for u in natural)
                and not os.path.exists(marker)):
            natural.sort(key=family.position.__getitem__)
            _HELD[(path, pid)] = (wanted, natural)
            return list(natural)
        _unlock_units(fd)
        chosen = self._until_claimed(family, wanted, pid, wait,
                                     lambda table: _claim_units(table, family, wanted, fd, pid, Path(marker)))
        _HELD[(path, pid)] = (wanted, chosen)
        return list(chosen)

    def release(self, resource: str, pid: int | None = None) -> None:
        """Drop the claims of ``pid`` (this process): its task ended."""
        if pid is None or pid == _PID[0]:
            path = self._family_files(resource)[0]
            if _HELD.pop((path, _PID[0]), None) is not None:  # a uniform family's: unlocked, table untouched
                _unlock_units(_open(path, _PID[0]))
                return
        pid = _PID[0] if pid is None else pid
        with self._locked() as table:
            if resource in table:
                table[resource] = [c for c in table[resource] if c.get("cordon") or c.get("pid") != pid]

    def cordon(self, resource: str, device: str, units: Sequence[str]) -> None:
        """Keep ``units`` (one failed device's) from every later claim, until :meth:`uncordon`."""
        with self._locked() as table:
            # The marker first: a uniform family's task that does not find it started before this cordon.
            self.cordoned_path(resource).touch()
            claims = table.setdefault(resource, [])
            if not any(c.get("cordon") == device for c in claims):
                claims.append({"pid": os.getpid(), "tokens": [], "units": list(units), "cordon": device,
                               "at": time.time()})

    def tag_cordon(self, resource: str, device: str, tokens: Sequence[str]) -> bool:
        """Give a cordon the tokens its placement group holds; claims holding them are over and dropped.
        False when the cordon is gone (released meanwhile)."""
        wanted = sorted({str(t) for t in tokens})
        with self._locked() as table:
            claims = table.get(resource, [])
            cordon = next((c for c in claims if c.get("cordon") == device), None)
            if cordon is None:
                return False
            table[resource] = [c for c in claims if c is cordon or not set(wanted) & set(c.get("tokens", []))]
            cordon["tokens"] = wanted
            return True

    def uncordon(self, resource: str, device: str) -> None:
        with self._locked() as table:
            if resource in table:
                table[resource] = [c for c in table[resource] if c.get("cordon") != device]
            if not any(c.get("cordon") for c in table.get(resource, [])):
                self.cordoned_path(resource).unlink(missing_ok=True)

    def cordons(self, resource: str) -> dict[str, list[str]]:
        """Cordoned device -> its tokens (empty until its placement group's task tagged it)."""
        return {str(c["cordon"]): list(c.get("tokens", [])) for c in self.snapshot().get(resource, [])
                if c.get("cordon")}


def _holder_alive(claim: dict[str, Any]) -> bool:
    """Whether the process that made ``claim`` still runs: its pid held by a process that had started by the
    claim's time (a process given the number since is a stranger: the holder is gone, its units free)."""
    at = claim.get("at")
    return alive(int(claim.get("pid", 0)), running_at=float(at) if isinstance(at, (int, float)) else None)


class CordonedUnitsError(RuntimeError):
    """A task's tokens outnumber the node's free healthy units for longer than it may wait (a new cordon)."""


def _claim(table: dict[str, list[dict[str, Any]]], family: FamilyUnits, wanted: list[str], within: str | None,
           pid: int, shared: bool) -> list[str] | tuple[int, list[str]]:
    """One try of :meth:`ClaimsTable.claim` on the locked table: the units, or (free healthy units, the
    cordoned devices) when only cordoned units are left for it."""
    claims = table.setdefault(family.resource, [])
    mine = next((c for c in claims if c.get("pid") == pid and not c.get("cordon") and not c.get("waiting")
                 and bool(c.get("shared")) == shared and c.get("tokens") == wanted), None)
    if mine is not None:  # the same task or actor asking again: the same units
        return [u for u in family.units if u in set(mine["units"])]
    cordoned = {u for c in claims if c.get("cordon") for u in c.get("units", [])}
    now = time.time()
    if shared:
        sharing = next((c for c in claims if not c.get("cordon") and c.get("shared") and c.get("tokens") == wanted
                        and not cordoned & set(c.get("units", [])) and _holder_alive(c)), None)
        if sharing is not None:  # another fraction of the same instance: the same units
            claims.append({"pid": pid, "tokens": wanted, "units": list(sharing["units"]), "shared": True, "at": now})
            return [u for u in family.units if u in set(sharing["units"])]
    token_set = set(wanted)
    k = len(wanted)

    def holding(check_young: bool) -> list[dict[str, Any]]:
        # Claims that still hold their units: not over (no token of this task) and their process alive. On a
        # uniform family (every set of k units as good as another) a claim younger than LIVENESS_AFTER_S is
        # taken as alive unless units run short: a dead one (a killed worker) cannot make the choice worse
        # there, and asking the kernel about every holder at every task start is most of a claim's cost.
        return [c for c in claims
                if not token_set & set(c.get("tokens", []))
                and (c.get("cordon") or (c.get("pid") != pid and (
                    (not check_young and now - float(c.get("at", 0.0)) < LIVENESS_AFTER_S)
                    or _holder_alive(c))))]

    kept = holding(check_young=not family.uniform)
    taken = {u for c in kept for u in c.get("units", [])}
    free = [u for u in family.units if u not in taken]
    if len(free) < k:
        kept = holding(check_young=True)
        taken = {u for c in kept for u in c.get("units", [])}
        free = [u for u in family.units if u not in taken]
    if len(free) < k:
        untagged = [str(c["cordon"]) for c in kept if c.get("cordon") and not c.get("tokens")]
        if untagged:  # a new cordon's window: wait for a healthy unit rather than take the failed one
            if not any(c.get("waiting") and c.get("pid") == pid for c in claims):  # says so, holding nothing
                claims.append({"pid": pid, "tokens": wanted, "units": [], "waiting": True, "at": now})
            return len(free), untagged
        free = _short(family, kept, free, k)
    candidates = free
    if within is not None:
        inside = [u for u in free if u in family.domains.get(within, frozenset())]
        if len(inside) >= k:
            candidates = inside
    chosen = family.choose(candidates, k)
    kept.append({"pid": pid, "tokens": wanted, "units": chosen, "at": now, "shared": shared})
    table[family.resource] = kept
    return chosen


def _claim_units(table: dict[str, list[dict[str, Any]]], family: FamilyUnits, wanted: list[str], fd: int,
                 pid: int, marker: Path) -> list[str] | tuple[int, list[str]]:
    """One try of a uniform family's claim under the table's lock (see :class:`ClaimsTable`): the units its
    tokens name where not cordoned (locked shared, as other fractions of the same token may hold them), then
    any other unit that is not cordoned and no process has locked (locked exclusively, so that the task Ray
    gives that unit's token later goes through the table too); or (units found, untagged cordons)."""
    claims = table.get(family.resource, [])
    cordons = [c for c in claims if c.get("cordon")]
    if not cordons:  # a marker left by a cordon that never got written (its process died between the two)
        marker.unlink(missing_ok=True)
    cordoned = {u for c in cordons for u in c.get("units", [])}
    tokens = set(wanted)
    chosen = [u for u in family.units
              if u in tokens and u not in cordoned and _lock_unit(fd, family.position[u], shared=True)]
    for unit in family.units:
        if len(chosen) == len(wanted):
            break
        if unit not in cordoned and unit not in chosen and _lock_unit(fd, family.position[unit], shared=False):
            chosen.append(unit)
    waiting = [c for c in claims if c.get("waiting")]
    if len(chosen) < len(wanted):
        _unlock_units(fd)
        if not any(c.get("pid") == pid for c in waiting):  # says so, holding nothing
            table.setdefault(family.resource, []).append({"pid": pid, "tokens": wanted, "units": [],
                                                          "waiting": True, "at": time.time()})
        return len(chosen), [str(c["cordon"]) for c in cordons if not c.get("tokens")]
    if waiting:  # its own wait is over; so is a dead process's
        table[family.resource] = [c for c in claims if not c.get("waiting")
                                  or (c.get("pid") != pid and _holder_alive(c))]
    return [u for u in family.units if u in set(chosen)]


def _short(family: FamilyUnits, kept: list[dict[str, Any]], free: list[str], k: int) -> list[str]:
    # Only possible with a table of another node's life (a live process that kept stale claims): share the
    # oldest claims' units (never a cordoned one) rather than fail the task, and say so.
    oldest = sorted((c for c in kept if not c.get("cordon")), key=lambda c: float(c.get("at", 0.0)))
    more = [u for u in dict.fromkeys(u for c in oldest for u in c.get("units", [])) if u not in free]
    logger.warning("rayaccel: only %d %s units unclaimed for a %d-unit task; claimed ones are shared",
                   len(free), family.resource, k)
    return free + more[:k - len(free)]


def claims_path(session_dir: str | Path, node_id: str) -> Path:
    """Where a node's claims table lives: in the Ray session directory, one file per node (several nodes of
    a test cluster share a machine and a session)."""
    return Path(session_dir) / f"rayaccel-claims-{node_id}.json"


def node_claims_table() -> ClaimsTable:
    """This Ray process's node's table (a worker or actor of the node; needs a connected Ray)."""
    import ray._private.worker

    worker: Any = ray._private.worker.global_worker
    return ClaimsTable(claims_path(worker.node.get_session_dir_path(), worker.current_node_id.hex()))
