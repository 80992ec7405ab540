"""rayaccel's adapter for Ray's ``ray.accelerator_managers`` entry-point group (a proposed Ray change:
``upstream/ray-accelerator-entry-points.patch``, ``docs/rep-accelerator-entry-points.md``).

With that change, Ray asks every installed distribution for ``AcceleratorManager`` classes; rayaccel's entry point
(``rayaccel = "rayaccel.ray.accelerator_managers:accelerator_managers"``) answers with one per installed plugin's
day-zero family (families Ray knows keep Ray's managers). Nothing of rayaccel's activation is involved: Ray itself
loads them, in every process that reads its registry.

- In a worker of a node (``RAYACCEL_RAY_FAMILIES`` in its environment, put there by the node's start): the
  families are read from it; no plugin is imported, no hardware is read.
- Elsewhere (the process running ``ray start`` or ``ray.init()``, a driver): the installed plugins are described
  once per process by their isolated workers (:class:`rayaccel.isolation.pool.WorkerPool`, bounded), and a
  manager's node-level answers (count, type, extra resources, labels) come from the node's inventory, built the
  first time Ray asks one of them (once per process, through the same isolated workers). That first answer also
  puts in the environment what the node's workers read: the families (``RAYACCEL_RAY_FAMILIES``) and each
  day-zero family's visible-devices variable (its schedulable units, as an operator's ``CUDA_VISIBLE_DEVICES=2,3``
  tells Ray which ids its instances map to).

A plugin that fails costs its own family (a warning in Ray's log); a failure of the whole description costs
rayaccel's families, never Ray's.
"""

from __future__ import annotations

import logging
import os
import threading
from typing import Any

from rayaccel.ray.registry import FAMILIES_ENV, FamilySpec, dump_specs, load_specs, manager_class

logger = logging.getLogger("rayaccel.ray.accelerator_managers")

#: The entry-point group the patched Ray reads (``ray._private.accelerators.ACCELERATOR_MANAGERS_ENTRY_POINT_GROUP``).
GROUP = "ray.accelerator_managers"

_lock = threading.Lock()
_node: list[Any] = []  # the NodeConfig of this process's node, once built
_failed: list[Exception] = []  # why it could not be built (warned once)
_warn_lock = threading.Lock()
_warned: set[str] = set()


def accelerator_managers() -> list[type]:
    """The entry point: one ``AcceleratorManager`` subclass per installed plugin's day-zero family."""
    published = os.environ.get(FAMILIES_ENV)
    if published is not None:  # a worker of a node: what its start put in the environment
        return [manager_class(spec) for spec in load_specs(published)]
    try:
        specs = _described_specs()
    except Exception as e:
        logger.warning("rayaccel: Ray's registry lacks the plugins' families: %s: %s", type(e).__name__, e)
        return []
    return [node_manager_class(spec) for spec in specs]


def _described_specs() -> list[FamilySpec]:
    from rayaccel.isolation.pool import WorkerPool
    from rayaccel.ray.registry import family_specs

    with WorkerPool.load(None) as pool:
        for problem in pool.manager.problems:
            _warn_once(problem)
        return family_specs(pool.manager)


def _warn_once(problem: Any) -> None:
    """A plugin's problem, once per process (the description and the inventory both meet a broken plugin)."""
    text = " ".join(problem.render().split())
    with _warn_lock:
        if text in _warned:
            return
        _warned.add(text)
    logger.warning("rayaccel: %s", text)


def node_config() -> Any:
    """The :class:`rayaccel.ray.node.NodeConfig` of the node this process starts (built once, on first use), its
    workers' part put in the environment."""
    with _lock:
        if not _node:
            from rayaccel.isolation.pool import WorkerPool
            from rayaccel.ray.driver import configure_node
            from rayaccel.simulation.host_factory import SIMULATE_ENV, SIMULATE_FAULTS_ENV

            simulate = os.environ.get(SIMULATE_ENV) or None
            with WorkerPool.load(None) as pool:
                config = configure_node(simulate, None, [], os.environ.get(SIMULATE_FAULTS_ENV) or None,
                                        manager=pool.manager, pool=pool, check_installed_ray=False)
            for problem in config.inventory.problems:
                if problem.severity != "info":
                    _warn_once(problem)
            os.environ[FAMILIES_ENV] = dump_specs(config.families)
            for family in config.inventory.families:
                env_var = family.family.visible_devices_env_var
                if env_var in config.env and env_var not in os.environ:
                    os.environ[env_var] = config.env[env_var]
            _node.append(config)
        return _node[0]


def _family(spec: FamilySpec) -> Any:
    """The family's part of this node's inventory; None when it has no devices here, or when the inventory could
    not be built (said once in a warning: Ray's node start must never fail on a plugin's account)."""
    if _failed:
        return None
    try:
        config = node_config()
    except Exception as e:
        with _lock:
            if not _failed:
                _failed.append(e)
                logger.warning("rayaccel: this node offers none of the plugins' families: %s: %s",
                               type(e).__name__, " ".join(str(e).split()))
        return None
    return next((f for f in config.inventory.families if f.plugin == spec.plugin), None)


def node_manager_class(spec: FamilySpec) -> type:
    """:func:`rayaccel.ray.registry.manager_class`, answering Ray's node-level questions from the inventory."""
    base = manager_class(spec)

    def get_current_node_num_accelerators() -> int:
        family = _family(spec)
        return len(family.schedulable_units) if family is not None else 0

    def get_current_node_accelerator_type() -> str | None:
        family = _family(spec)
        return family.accelerator_type if family is not None else None

    def get_current_node_additional_resources() -> dict[str, float] | None:
        # Ray adds the family's count and accelerator_type:<TYPE> itself; the rest of the family's resources
        # (a slice's extras, the per-domain counts) come from here.
        family = _family(spec)
        if family is None:
            return None
        own = {spec.resource_name, f"accelerator_type:{family.accelerator_type}"}
        extra = {name: value for name, value in _node[0].resources.items()
                 if name not in own and (name in family.resources or name.startswith(f"{spec.resource_name}_domain_"))}
        return extra or None

    def get_current_node_accelerator_labels() -> dict[str, str] | None:
        family = _family(spec)
        return dict(family.labels) if family is not None else None

    methods = (get_current_node_num_accelerators, get_current_node_accelerator_type,
               get_current_node_additional_resources, get_current_node_accelerator_labels)
    namespace: dict[str, Any] = {fn.__name__: staticmethod(fn) for fn in methods}
    namespace["__module__"] = __name__  # what Ray's warnings and logs name
    return type(base.__name__, (base,), namespace)
