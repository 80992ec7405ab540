"""The node labels Ray's own manager gives where a variable it reads first stands beside the metadata server
(RAC270's ``labels-as-ray-reads-them``).

Ray's TPU manager reads GKE's variables before the GCE metadata server (``TPU_WORKER_ID`` before
``agent-worker-number``, ray/_private/accelerators/tpu.py): on a GKE TPU node both answer, and the pod's worker
index is what Ray labels the node with. No fixture sets both, so the suite does: Ray's manager is wired to the
simulated machine at its vendor interface (the process environment is the host's, its module's ``requests.get``
answered by the host's metadata server; its methods are called, never patched), the variables it reads while
labelling the node (of those its module names) are watched, each is set to a marker to find the label it feeds, and
a label holding a whole number (a worker id) is moved by one through its variable. The plugin's label must then be
Ray's. On every fixture as recorded, each label Ray's wired manager gives that the plugin also gives must hold Ray's
value (``labels-as-ray-gives-them``: TPU's pod type is ``v5litepod-8`` in Ray's words, not Cloud's ``v5e-8``).
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

from rayaccel.hosts.fixtures import Fixture
from rayaccel.hosts.seam import HttpUnavailable
from rayaccel.hosts.simulated import SimulatedHost
from rayaccel.records import FamilyInventory
from rayaccel.simulation.host_factory import simulated_host
from rayaccel_conformance.checks.ray_environment import RAY_PREFIX, environment_kept
from rayaccel_conformance.harness.subject import Subject

#: A value no recorded label holds, set to find which label a variable feeds.
MARKER = "7"
#: How long the wired manager's metadata calls may wait (the simulated server answers at once or hangs).
METADATA_TIMEOUT_S = 1.0


class _Requests:
    """``requests`` as Ray's manager module uses it, answered by a simulated host's metadata server."""

    def __init__(self, host: SimulatedHost, real: Any) -> None:
        self.host, self.RequestException = host, real.RequestException

    def get(self, url: str, headers: dict[str, str] | None = None, **_: Any) -> Any:
        try:
            response = self.host.http_get(url, headers=headers, timeout=METADATA_TIMEOUT_S)
        except HttpUnavailable as e:
            raise self.RequestException(str(e)) from None
        return SimpleNamespace(status_code=response.status, text=response.body)


@contextlib.contextmanager
def wired(manager: Any, host: SimulatedHost, env: dict[str, str], hide: set[str]) -> Iterator[set[str]]:
    """Ray's manager reading ``host`` with ``env`` beside it and the process's own ``hide`` unset; yields the
    variables it looks up meanwhile."""
    module = sys.modules[manager.__module__]
    real = getattr(module, "requests", None)
    seen: set[str] = set()
    original = type(os.environ)

    class Recording(original):  # type: ignore[valid-type,misc]
        def __getitem__(self, key: Any) -> Any:
            if isinstance(key, str):
                seen.add(key)
            return super().__getitem__(key)

    with environment_kept():
        for key in hide - env.keys():
            os.environ.pop(key, None)
        os.environ.update(env)
        if real is not None:
            vars(module)["requests"] = _Requests(host, real)
        os.environ.__class__ = Recording
        try:
            yield seen
        finally:
            os.environ.__class__ = original
            if real is not None:
                vars(module)["requests"] = real


def ray_labels(manager: Any, host: SimulatedHost, env: dict[str, str]) -> tuple[dict[str, str], set[str]]:
    """Ray's node labels for ``host`` with ``env``, and the variables it read to make them."""
    hide: set[str] = set()
    while True:
        with wired(manager, host, env, hide) as seen:
            try:
                labels = dict(manager.get_current_node_accelerator_labels() or {})
            except Exception:  # Ray's manager failing on this machine says nothing of the plugin: no labels to hold
                labels = {}
        # A variable it read that this process has (a real GKE node's) is not the simulated host's: asked again.
        own = {k for k in seen - env.keys() - hide if k in os.environ and not k.startswith(RAY_PREFIX)}
        if not own:
            return labels, seen
        hide |= own


def labels_read_first(subject: Subject, manager: Any, fx: Fixture) -> list[str]:
    """Where the plugin labels the node otherwise than Ray's manager once a variable Ray reads before the metadata
    server is set beside it to another whole number than the server's."""
    if not fx.host.http or not callable(getattr(manager, "get_current_node_accelerator_labels", None)):
        return []
    family = subject.family()
    fixture = fx.model_copy(update={"faults": []})
    host = simulated_host(fixture)
    env = dict(fx.host.env)
    recorded, read = ray_labels(manager, host, env)
    wrong = []
    named = {value for value in vars(sys.modules[manager.__module__]).values() if isinstance(value, str)}
    for var in sorted(v for v in read & named if v not in env and not v.startswith(RAY_PREFIX)):
        marked, _ = ray_labels(manager, host, {**env, var: MARKER})
        for key in [k for k, v in marked.items() if v == MARKER and recorded.get(k, "").isdigit()]:
            moved = str(int(recorded[key]) + 1)
            theirs = ray_labels(manager, host, {**env, var: moved})[0].get(key)
            state = fx.host.model_copy(update={"env": {**env, var: moved}})
            built = subject.build(simulated_host(fixture.model_copy(update={"host": state}))).family(family.name)
            ours = built.labels.get(key) if built else None
            if ours != theirs:
                wrong.append(f"invariant labels-as-ray-reads-them, {fx.ref} with {var}={moved} beside the metadata "
                             f"server's {recorded[key]}: label {key}={ours!r}; Ray's {manager.__name__} gives "
                             f"{theirs!r} (it reads {var} before the metadata server)")
    return wrong


def labels_as_ray_gives_them(manager: Any, fx: Fixture, family: FamilyInventory) -> list[str]:
    """Where a label Ray's manager gives the node on ``fx`` as recorded is given by the plugin with another value:
    Ray writes the same key itself (one key, one value on the node), and Ray's word is what its users select on."""
    if not callable(getattr(manager, "get_current_node_accelerator_labels", None)):
        return []
    theirs, _ = ray_labels(manager, simulated_host(fx.model_copy(update={"faults": []})), dict(fx.host.env))
    return [f"invariant labels-as-ray-gives-them, {fx.ref}: label {key}={family.labels[key]!r}; Ray's "
            f"{manager.__name__} gives {value!r} on this machine (Ray sets the same label itself: give Ray's value)"
            for key, value in sorted(theirs.items()) if key in family.labels and family.labels[key] != value]
