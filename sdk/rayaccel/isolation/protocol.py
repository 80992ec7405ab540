"""What the parent and a worker process of :mod:`rayaccel.isolation.pool` say to each other, one JSON line each.

The parent sends a :class:`Setup` (which plugins to import, the hook timeout), then one :class:`Request` per
question: ``describe`` (import the plugins and say what each declares: a parent that imports no plugin code
learns the plugins this way), ``build`` (each plugin's family on the host the request describes, and with
``record`` what each plugin read of it, as fixture ``host`` data) or ``call`` (one hook of one plugin, its
arguments as JSON: the host as a :class:`HostSpec`, records as their JSON); the worker answers one
:class:`Reply` per plugin, in order (for ``call``: one). Records cross the boundary as pydantic JSON, never
as pickled plugin objects.
"""

from __future__ import annotations

import os
import sys
from types import ModuleType
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from rayaccel.errors import PluginError
from rayaccel.hosts.seam import Host, RealHost
from rayaccel.records import FamilyDeclaration, FamilyInventory, MetricSample, Problem, TransportSpec, WorkerNeeds

if TYPE_CHECKING:
    from rayaccel.plugins.manager import PluginManager

WORKER_MEMORY_ENV = "RAYACCEL_WORKER_MEMORY_MIB"
DEFAULT_WORKER_MEMORY_MIB = 4096


class _Message(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class HostSpec(_Message):
    """How a worker rebuilds the host: this machine (under a root), or a simulated fixture."""

    kind: Literal["real", "simulated"]
    root: str = "/"
    env: dict[str, str] | None = None
    fixture: dict[str, Any] | None = None
    faults: list[str] = Field(default_factory=list)
    fault_file: str | None = None


class PluginTarget(_Message):
    name: str
    module: str
    #: The plugin is this attribute of the module (``RAYACCEL_PLUGINS``' ``name=module:attr``); "": the module.
    attr: str = ""
    distribution: str | None = None
    version: str | None = None


class Setup(_Message):
    plugins: list[PluginTarget]
    timeout: float


class Request(_Message):
    #: describe: import the plugins and say what they declare; build: each plugin's family on ``host``;
    #: call: ``plugin``'s ``hook`` with ``arguments`` (and ``host``, for a hook that takes one); transports: each
    #: plugin's transport declarations with what their classes say they move (the classes imported there).
    kind: Literal["describe", "build", "call", "transports"] = "build"
    #: None: the host of the worker's previous request (the parent sends each worker process a host once).
    host: HostSpec | None = None
    with_metrics: bool = True
    #: build, for a poll that repeats the last one (the health monitor): see :meth:`InventoryBuilder.refresh`.
    refresh: bool = False
    #: build: also record what each plugin read of the host (``rayaccel record``).
    record: bool = False
    #: build: only these plugins of the worker (None: all of them); call: exactly one.
    plugins: list[str] | None = None
    hook: str | None = None
    arguments: dict[str, Any] = Field(default_factory=dict)


class Reply(_Message):
    """One plugin's answer; a worker serving several plugins answers one line per plugin, in order."""

    plugin: str
    family: FamilyInventory | None = None
    problems: list[Problem] = Field(default_factory=list)
    #: Set when the worker is left with threads or child processes it did not start with.
    leaked: str | None = None
    #: Answering ``describe``: the plugin's declaration (None: refused, ``problems`` say why) and what the parent
    #: answers in the plugin's place from then on (the hooks that take no arguments: its fixture directories,
    #: its tensor transports); answering ``transports``: those with their classes' answers.
    declaration: FamilyDeclaration | None = None
    fixture_dirs: list[str] = Field(default_factory=list)
    transports: list[TransportSpec] = Field(default_factory=list)
    #: Answering ``build`` for a plugin without devices: what its workers would need (its own env syntax).
    idle_worker: WorkerNeeds | None = None
    #: Answering a ``refresh`` build: the plugin's family is the one this worker last sent, with ``metrics``
    #: new (its devices and their health answered as before), so only the metrics cross the pipe.
    kept: bool = False
    metrics: list[MetricSample] = Field(default_factory=list)
    #: Answering ``describe``: the hooks the plugin answers (implemented, or by its file layout).
    hooks: list[str] = Field(default_factory=list)
    #: Answering ``call``: the plugin's validated answer as JSON (None: it had none; ``problems`` say why).
    answer: Any = None
    #: Answering ``call`` with a record loaded from a file (a SKU catalog): that file, which its JSON does not carry.
    answer_source: str | None = None
    #: Answering a recording ``build``: what the plugin read (fixture ``host`` data), or why it cannot be recorded.
    recording: dict[str, Any] | None = None
    recording_error: str | None = None


def host_spec(host: Host) -> HostSpec | None:
    """The spec a worker rebuilds ``host`` from, or None when it cannot be rebuilt in another process."""
    from rayaccel.hosts.simulated import SimulatedHost

    if type(host) is RealHost:
        return HostSpec(kind="real", root=host.root,
                        env=dict(host.given_env) if host.given_env is not None else None)
    if type(host) is SimulatedHost:
        return HostSpec(kind="simulated", fixture=host.fixture.model_dump(mode="json", by_alias=True),
                        faults=list(host.faults), fault_file=host.fault_file)
    return None


def plugin_target(manager: PluginManager, name: str) -> PluginTarget | None:
    """What a worker imports to load plugin ``name``; None for a plugin that is not an importable module."""
    loaded = manager.plugin(name)
    module = loaded.module
    if not isinstance(module, ModuleType) or sys.modules.get(module.__name__) is not module:
        return None
    return PluginTarget(name=name, module=module.__name__, distribution=loaded.distribution, version=loaded.version)


def worker_memory_mib() -> int:
    raw = os.environ.get(WORKER_MEMORY_ENV, "")
    if not raw.strip():
        return DEFAULT_WORKER_MEMORY_MIB
    try:
        value = int(raw)
    except ValueError:
        value = -1
    if value < 0:
        raise PluginError(f"{WORKER_MEMORY_ENV}={raw!r} must be a whole number of MiB (0: no limit)")
    return value


def make_host(spec: HostSpec) -> Host:
    """The host a spec describes (in the worker)."""
    if spec.kind == "real":
        return RealHost(spec.root, spec.env)
    from rayaccel.hosts.fixtures import Fixture
    from rayaccel.hosts.simulated import SimulatedHost

    return SimulatedHost(Fixture.model_validate(spec.fixture), faults=spec.faults, fault_file=spec.fault_file)
