"""A node's Ray configuration from its inventory: resources, labels, and the env a node is started with.

Everything reaches Ray through environment variables read when a node starts (``ray start``,
``ray.init()`` starting a local node, ``Cluster.add_node``); nothing in Ray's files is changed:

- ``RAY_OVERRIDE_RESOURCES`` / ``RAY_OVERRIDE_LABELS`` (JSON): the inventory's resources and labels. They
  beat parameters, and the labels path skips ``ray start --labels``' ``ray.io/`` check, so
  ``ray.io/accelerator-type`` reaches Ray for families Ray does not know.
- ``RAY_custom_unit_instance_resources``: Ray's default list plus every day-zero resource, so Ray hands
  out per-unit instance ids for them (and refuses fractions above 1).
- ``RAY_preload_python_modules``: ``rayaccel.ray.worker_preload``, which installs the day-zero families in each
  worker (read from ``RAYACCEL_RAY_FAMILIES``) and registers the plugins' collective backends (read from
  ``RAYACCEL_RAY_COLLECTIVES``, JSON: plugin, name, ``module:Class``; :mod:`rayaccel.ray.collectives`).
- the family's visible-devices env var, set to the schedulable units (healthy, best-connected first):
  Ray maps its instance index i to the i-th id of that variable, as it does for
  ``CUDA_VISIBLE_DEVICES=2,3 ray start``. Always for day-zero families; for families Ray knows only when
  the units are not simply ``0..n-1`` (or the variable is already set in the starting process).
- ``RAYACCEL_SIMULATE`` / ``RAYACCEL_SIMULATE_FAULT_FILE`` / ``RAYACCEL_PLUGINS``: passed on so the health
  monitor on the node sees the same (simulated) machine and plugins.
- ``RAYACCEL_NODE_PLACEMENT`` (JSON): the placement table workers claim units by
  (:mod:`rayaccel.ray.claims`); the resources gain one ``<resource>_domain_<id>`` count per scale-up domain.
- ``RAYACCEL_NODE_UNITS`` (JSON, plugin -> unit ids): what the node offers, so the monitor ignores faults
  of devices it does not offer; ``RAYACCEL_NODE_BASELINE`` (JSON list): the devices already unhealthy when
  the node started, which the monitor does not cordon for.

All of it is a function of the inventory: what a family's workers need (its visible-devices env, whether
the plugin parses its own syntax) was computed by the inventory builder and is read from
``FamilyInventory.worker``; no plugin hook runs here. (Day-zero plugins that found no devices still give
their declaration, so every worker of the node validates their quantities.)

An operator's visible-devices setting in the starting process (``CUDA_VISIBLE_DEVICES=0,1``, or the
variable any plugin's family declares) is honoured: the node offers only those of its schedulable units,
its resources and ``rayaccel.io/count`` say so, and a warning problem records it. A value naming units
the node does not have is refused (:func:`rayaccel.inventory.visible_units.restrict_to_visible`, which the driver
applies to the inventory before :func:`node_config`).
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field

from rayaccel.errors import RayaccelError
from rayaccel.hosts.simulated import SIMULATE_HOSTNAME_ENV
from rayaccel.plugins.configuration import PLUGINS_ENV
from rayaccel.ray.claims import PLACEMENT_ENV, domain_resources, placement_table
from rayaccel.ray.collectives import COLLECTIVES_ENV, dump, node_declarations
from rayaccel.ray.registry import (
    FAMILIES_ENV,
    GPU_MANAGER_ENV,
    FamilySpec,
    dump_specs,
    family_spec,
    is_day_zero,
    partition_specs,
)
from rayaccel.records import FamilyInventory, IdleFamily, NodeInventory
from rayaccel.simulation.host_factory import SIMULATE_ENV, SIMULATE_FAULTS_ENV
from rayaccel.support.raycompat import RAY_DEFAULT_UNIT_INSTANCE_RESOURCES, ray_family_for
from rayaccel.support.safe_text import MAX_ARG_BYTES

OVERRIDE_RESOURCES_ENV = "RAY_OVERRIDE_RESOURCES"
OVERRIDE_LABELS_ENV = "RAY_OVERRIDE_LABELS"
UNIT_INSTANCE_ENV = "RAY_custom_unit_instance_resources"
PRELOAD_ENV = "RAY_preload_python_modules"
WORKER_MODULE = "rayaccel.ray.worker_preload"
#: Names of the plugins a node was started with (comma-separated; unset = all): the monitor uses them.
NODE_PLUGINS_ENV = "RAYACCEL_NODE_PLUGINS"
#: JSON {plugin: [unit ids]}: the units the node offers (after the operator's visible-devices setting).
NODE_UNITS_ENV = "RAYACCEL_NODE_UNITS"
#: JSON [device ids]: the devices unhealthy when the node started (the monitor's baseline).
NODE_BASELINE_ENV = "RAYACCEL_NODE_BASELINE"
#: Label marking nodes the SDK started (the monitor and placement helpers look for it).
MANAGED_LABEL = "rayaccel.io/managed"


@dataclass(frozen=True)
class NodeConfig:
    """What a Ray node is started with. ``env`` holds every variable to set; see the module docstring."""

    inventory: NodeInventory
    resources: dict[str, float]
    labels: dict[str, str]
    env: dict[str, str]
    families: list[FamilySpec] = field(default_factory=list)
    fault_file: str | None = None

    @contextlib.contextmanager
    def applied(self) -> Iterator[None]:
        """Set ``env`` in this process while a node starts (Ray reads it, children inherit it); restore after."""
        with environ(self.env):
            yield


_started_lock = threading.Lock()
_started: dict[str, NodeConfig] = {}


def node_configs() -> dict[str, NodeConfig]:
    """Node id (hex) -> the config of each node this process started."""
    with _started_lock:
        return dict(_started)


def remember_started_node(node_id: str, config: NodeConfig) -> None:
    with _started_lock:
        _started[node_id] = config


def forget_started_nodes() -> None:
    with _started_lock:
        _started.clear()


@contextlib.contextmanager
def environ(updates: Mapping[str, str | None]) -> Iterator[None]:
    """``os.environ`` with ``updates`` (``None``: unset) for the block, restored after."""
    saved = {key: os.environ.get(key) for key in updates}
    for key, value in updates.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def _merged_json(env_name: str, ours: Mapping[str, object]) -> str:
    # An autoscaler may already set the override for the node: keep what it set that we do not.
    try:
        existing = json.loads(os.environ.get(env_name) or "{}")
    except json.JSONDecodeError:
        existing = {}
    if not isinstance(existing, dict):
        existing = {}
    return json.dumps({**existing, **ours}, sort_keys=True)


def _appended(env_name: str, default: Sequence[str], extra: Sequence[str]) -> str:
    current = os.environ.get(env_name)
    items = [p.strip() for p in current.split(",")] if current is not None else list(default)
    for item in extra:
        if item not in items:
            items.append(item)
    return ",".join(p for p in items if p)


def node_config(inventory: NodeInventory, *, simulate: str | None = None, fault_file: str | None = None,
                plugins: Sequence[str] | None = None, check_installed_ray: bool = True) -> NodeConfig:
    """The resources, labels and env of a node with this inventory (a pure function of it: apply an
    operator's visible-devices setting first, :func:`rayaccel.inventory.visible_units.restrict_to_visible`).

    ``simulate``/``fault_file`` default to this process's ``RAYACCEL_SIMULATE``/``..._FAULT_FILE``;
    ``plugins`` (names) restricts the families, as ``rayaccel inspect --plugin`` does.
    ``check_installed_ray=False``: the caller checks the installed Ray itself, where Ray is loaded (``rayaccel
    start`` does, in the process that runs ``ray start``, so that the command never imports Ray).
    """
    if check_installed_ray:
        from rayaccel.ray.internals import check_ray

        check_ray()  # a node must never start with hooks Ray does not have
    # Every active plugin's family, with devices here or not (idle): each worker validates their quantities.
    everyone: list[FamilyInventory | IdleFamily] = [*inventory.families, *inventory.idle]
    specs = [spec for family in everyone
             if (plugins is None or family.plugin in plugins) and (spec := family_spec(family)) is not None]
    specs += [spec for family in inventory.families if plugins is None or family.plugin in plugins
              for spec in partition_specs(family)]
    resources = {**inventory.resources, **domain_resources(inventory)}
    for family in inventory.families:
        if family.partition_units and not family.schedulable_units:
            # Every device is partitioned: none is offered whole, even where Ray would count it itself
            # (Ray's NVIDIA manager counts a MIG-mode GPU as one GPU).
            resources.setdefault(family.family.resource_name, 0.0)
    labels = {**inventory.labels, MANAGED_LABEL: "true"}
    env: dict[str, str] = {
        OVERRIDE_RESOURCES_ENV: _merged_json(OVERRIDE_RESOURCES_ENV, resources),
        OVERRIDE_LABELS_ENV: _merged_json(OVERRIDE_LABELS_ENV, labels),
        UNIT_INSTANCE_ENV: _appended(UNIT_INSTANCE_ENV, RAY_DEFAULT_UNIT_INSTANCE_RESOURCES,
                                     sorted({s.resource_name for s in specs})),
        PRELOAD_ENV: _appended(PRELOAD_ENV, (), [WORKER_MODULE]),
        FAMILIES_ENV: dump_specs(specs),
        COLLECTIVES_ENV: dump(node_declarations(f for f in everyone if plugins is None or f.plugin in plugins)),
        NODE_UNITS_ENV: json.dumps({f.plugin: [*f.schedulable_units, *(p for ids in f.partition_units.values()
                                                                       for p in ids)]
                                    for f in inventory.families}, sort_keys=True),
        NODE_BASELINE_ENV: json.dumps(unhealthy_devices(inventory)),
        PLACEMENT_ENV: json.dumps(placement_table(inventory), sort_keys=True, separators=(",", ":")),
    }
    if plugins is not None:
        env[NODE_PLUGINS_ENV] = ",".join(plugins)
    for family in inventory.families:
        units = family.schedulable_units
        declaration = family.family
        env_var = declaration.visible_devices_env_var
        if not units:
            continue
        owner = ray_family_for(declaration.resource_name, env_var)
        if declaration.resource_name == "GPU" and owner and owner != "NvidiaGPUAcceleratorManager":
            env[GPU_MANAGER_ENV] = owner
        if is_day_zero(declaration.resource_name, env_var):
            # Always set: a value inherited from the starting process must not reach the workers, and a
            # task without units then sees exactly the healthy devices.
            visible = family.worker.visible_env or {env_var: ",".join(units)}  # (a hand-made inventory)
            # The family's visibility variables only: any other key (a library path) stays the node's own.
            env.update({key: value for key, value in visible.items() if key in declaration.visibility_variables})
        elif units != [str(i) for i in range(len(units))] or env_var in os.environ:
            # Ray's own manager parses this variable: give it Ray's format (comma-separated ids). Left
            # unset when Ray's instance ids are the unit ids already, as on a plain `ray start`.
            env[env_var] = ",".join(units)
    simulate = simulate if simulate is not None else os.environ.get(SIMULATE_ENV)
    fault_file = fault_file if fault_file is not None else os.environ.get(SIMULATE_FAULTS_ENV)
    if simulate:
        env[SIMULATE_ENV] = simulate
        if os.environ.get(SIMULATE_HOSTNAME_ENV):  # every process of the node is the same simulated machine
            env[SIMULATE_HOSTNAME_ENV] = os.environ[SIMULATE_HOSTNAME_ENV]
        if fault_file:
            env[SIMULATE_FAULTS_ENV] = fault_file
    if os.environ.get(PLUGINS_ENV):
        env[PLUGINS_ENV] = os.environ[PLUGINS_ENV]
    for name, value in env.items():  # Ray starts its processes with this env: one string over the limit, and none runs
        size = len(f"{name}={value}".encode()) + 1
        if size >= MAX_ARG_BYTES:
            raise RayaccelError(f"the node's {name} would be {size} bytes; the kernel starts no process with an env "
                                f"string of {MAX_ARG_BYTES} bytes or more (MAX_ARG_STRLEN): offer fewer partitions or "
                                "families on this node (--plugin)")
    return NodeConfig(inventory=inventory, resources=resources, labels=labels, env=env, families=specs,
                      fault_file=fault_file if simulate else None)


def unhealthy_devices(inventory: NodeInventory) -> list[str]:
    """Ids of the inventory's unhealthy devices: a monitor started with it cordons for none of them."""
    return [h.device for f in inventory.families for h in f.health if h.state == "unhealthy"]
