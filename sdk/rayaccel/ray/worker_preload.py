"""Preloaded into every Python worker of a node the SDK starts (raylet config ``preload_python_modules``).

Ray's ``default_worker.py`` imports this module after connecting and before the first task. It adds the
node's day-zero families (from ``RAYACCEL_RAY_FAMILIES``; no discovery, no plugin import unless a plugin
parses its own env var) to the worker's accelerator registry, then re-reads the ids the node was started
with, which Ray recorded when ``ray._private.worker`` was imported, before the registry knew the family.

It registers the node's plugins' collective backends with ``ray.util.collective``
(:func:`rayaccel.ray.collectives.register_in_worker`: when the worker first imports it).

Then it makes the ids Ray assigns tokens of the node's claims table (:mod:`rayaccel.ray.claims`): the
family's visible-devices variable and ``get_accelerator_ids()`` name the best-connected free units, and a
normal task's claim is released when it ends. On a uniform family (no choice better than another) a task
keeps the units Ray's ids name and only locks them, unless a cordon or a substitute is in the way.
"""

from __future__ import annotations

import logging
import os
import sys
from typing import Any

logger = logging.getLogger("rayaccel.ray.worker_preload")


def setup_worker() -> list[str]:
    """Install the families named by the node's env; returns their resource names."""
    from rayaccel.ray.registry import FAMILIES_ENV, install, load_specs

    specs = load_specs(os.environ.get(FAMILIES_ENV) or "[]")
    managers: dict[str, Any] = dict(install(specs)) if specs else {}  # none: Ray's registry as it is
    from rayaccel.ray.registry import pin_gpu_manager

    gpu_manager = pin_gpu_manager()
    if gpu_manager is not None:
        managers["GPU"] = gpu_manager
    if not managers:
        return []
    import ray._private.worker

    # Ray maps its instance index i to the i-th id of the env var the node was started with (how
    # CUDA_VISIBLE_DEVICES=2,3 at `ray start` works); do the same for the families added above.
    worker: Any = ray._private.worker.global_worker
    manager: Any
    for name, manager in managers.items():
        worker.original_visible_accelerator_ids[name] = manager.get_current_process_visible_accelerator_ids()
    return list(managers)


def install_claims() -> list[str]:
    """Route this worker's accelerator ids through the node's claims table (``RAYACCEL_NODE_PLACEMENT``);
    returns the resources that now go through it."""
    from rayaccel.ray.claims import (
        CORDON_TAG_TASK,
        DOMAIN_RESOURCE_INFIX,
        PLACEMENT_ENV,
        load_placement,
        node_claims_table,
    )

    placement = load_placement(os.environ.get(PLACEMENT_ENV))
    if not placement:
        return []
    import ray._private.utils
    import ray._private.worker

    worker: Any = ray._private.worker.global_worker
    # Whether Ray's ids are the units' (then a uniform family keeps them): Ray maps its index i to the i-th id
    # of the variable the node started with, where one was set.
    placement = {name: family.with_rays_ids(worker.original_visible_accelerator_ids.get(name))
                 for name, family in placement.items()}
    assigned = worker.get_accelerator_ids_for_accelerator_resource  # Ray's own: the tokens
    tables: list[Any] = []
    claimed: set[str] = set()

    def table() -> Any:
        if not tables:
            tables.append(node_claims_table())
        return tables[0]

    group_domains: dict[str, str | None] = {}  # placement group id -> the domain its bundles ask for

    def held_domain(resource: str) -> str | None:
        # A task that asked for a per-domain resource (<resource>_domain_<id>) gets that domain's units; so
        # does a task in a placement group whose bundles ask for one (a scale_up_domain_placement_group).
        domains = placement[resource].domains
        for name in worker.core_worker.resource_ids():
            found = next((d for d in domains if name == d or name.startswith(d + "_group_")), None)
            if found is not None:
                return found
        group = worker.placement_group_id
        if group is None or group.is_nil():
            return None
        key = group.hex()
        if key not in group_domains:  # one GCS call per group and worker
            from rayaccel.ray.group_topology import group_table

            gcs_group = group_table(group)
            # Its bundles ask for a domain's resource, or Ray packed it into a domain (topology_strategy).
            group_domains[key] = next((d for b in gcs_group.bundles for d in domains if d in b), None) or next(
                (d for value in gcs_group.assignments.values() for d in domains
                 if d == f"{resource}{DOMAIN_RESOURCE_INFIX}{value}"), None)
        return group_domains[key]

    def fractional(resource: str) -> bool:
        # Ray gives a fractional request (num_gpus=0.5) a share of one instance, which other tasks may hold.
        return any(0 < float(amount) < 1 for name, assignment in worker.core_worker.resource_ids().items()
                   if name == resource or name.startswith(resource + "_group_") for _, amount in assignment)

    def claimed_ids(resource_name: str, resource_regex: str) -> Any:
        # Ray asks for every accelerator resource it knows before and after each task: most have no placement.
        family = placement.get(resource_name)
        ids = assigned(resource_name, resource_regex)
        if family is None or not ids or worker.core_worker.get_current_task_name() == CORDON_TAG_TASK:
            return ids
        if family.uniform and family.rays_ids:  # Ray's ids are as good as any choice: nothing to look up
            units = table().claim(family, [str(i) for i in ids])
        else:
            units = table().claim(family, [str(i) for i in ids], within=held_domain(resource_name),
                                  shared=fractional(resource_name))
        claimed.add(resource_name)
        return units

    original_reset = ray._private.utils.reset_visible_accelerator_env_vars

    def reset_and_release(original_env: Any) -> None:
        # Ray calls this after each normal task (not for actors, which keep their units): the task is over
        # while its tokens are still held, so releasing here never races with their next holder.
        try:
            original_reset(original_env)
        finally:
            for resource in sorted(claimed):
                table().release(resource)
            claimed.clear()

    worker.get_accelerator_ids_for_accelerator_resource = claimed_ids
    worker.rayaccel_assigned_ids = assigned
    ray._private.utils.reset_visible_accelerator_env_vars = reset_and_release  # type: ignore[assignment]
    return sorted(placement)


def assigned_tokens(resource: str) -> list[str]:
    """The instance ids Ray assigned this process for ``resource`` (the tokens, not the claimed units)."""
    import ray._private.worker

    worker: Any = ray._private.worker.global_worker
    lookup = getattr(worker, "rayaccel_assigned_ids", worker.get_accelerator_ids_for_accelerator_resource)
    return [str(i) for i in lookup(resource, f"^{resource}_group_[0-9A-Za-z]+$")]


def _say(message: str) -> None:
    logger.error(message)
    print(message, file=sys.stderr, flush=True)


try:
    setup_worker()
except Exception as e:  # a worker must still run: say why the families are missing, loudly, in its log
    _say(f"rayaccel: day-zero accelerator families NOT installed in this worker: {e}")
try:
    # rayaccel.ray.collectives.COLLECTIVES_ENV, read here so that a node declaring none imports nothing (~2 ms)
    if os.environ.get("RAYACCEL_RAY_COLLECTIVES", "[]") != "[]":
        from rayaccel.ray.collectives import register_in_worker

        register_in_worker()
except Exception as e:
    _say(f"rayaccel: the node's collective backends are NOT registered in this worker: {e}")
try:
    install_claims()
except Exception as e:
    _say(f"rayaccel: this worker does NOT claim units through the node's claims table (its tasks get Ray's "
         f"instance order, which may overlap other tasks' units): {e}")
