"""The variables Ray's own manager writes beside its visible-devices variable for some counts of devices and leaves
unset for the others, against the plugin's env for every count a node offers (RAC270's
``companions-only-where-ray-writes-them``; issue 46, held-out round 16's ``p1``: a TPU wrapper writing single-host
bounds for a 4-chip task too, ``TPU_CHIPS_PER_HOST_BOUNDS=2,2,1`` and ``TPU_HOST_BOUNDS=1,1,1``, where Ray 2.60's
TPUAcceleratorManager writes them for 1 or 2 chips only and leaves the runtime's own for a whole host, so a host of
a multi-host slice is told it is alone). The SDK's manager takes the place of Ray's, so a task's process gets the
plugin's variables only: one Ray leaves unset for this count must stay unset.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from rayaccel.records import Device, FamilyInventory
from rayaccel_conformance.checks.ray_environment import environment_kept

INVARIANT = "invariant companions-only-where-ray-writes-them"


def count_lists(family: FamilyInventory) -> list[list[str]]:
    """For each count of whole healthy devices the node offers (1, 2, ... all), the first that many devices' units."""
    down = {h.device for h in family.health if h.state == "unhealthy"}
    devices: list[Device] = [d for d in family.devices if d.id not in down and not d.partitions]
    return [[u for d in devices[:n] for u in d.unit_ids] for n in range(1, len(devices) + 1)]


def ray_writes(manager: Any, var: str, units: Sequence[str], cleared: Sequence[str]) -> dict[str, str]:
    """The variables besides ``var`` Ray's manager leaves set for a task of ``units``, in a process holding none of
    ``cleared`` (nor ``var``) before: what it writes, never the node's."""
    with environment_kept():
        for key in (var, *cleared):
            os.environ.pop(key, None)
        before = dict(os.environ)
        manager.set_current_process_visible_accelerator_ids(list(units))
        return {k: v for k, v in os.environ.items() if k != var and before.get(k) != v}


def companions_only_where_ray_writes_them(manager: Any, var: str, family: FamilyInventory,
                                          visible_env: Callable[[list[str]], Mapping[str, str]],
                                          where: str) -> list[str]:
    """Each variable Ray's manager writes beside ``var`` for some count of devices (TPU's sub-host bounds, for one
    or two chips) the plugin's env (``visible_env``, asked in the same process environment) must leave unset for
    every count Ray leaves it unset for: Ray's manager then keeps the node's value (the runtime's defaults, a
    multi-host slice's host bounds), and the SDK's manager, which replaces Ray's, writes the plugin's."""
    lists = count_lists(family)
    written = [ray_writes(manager, var, units, ()) for units in lists]
    keys = sorted({key for env in written for key in env})
    wrong: list[str] = []
    for units in lists:
        ray_env = ray_writes(manager, var, units, keys)
        with environment_kept():
            for key in (var, *keys):
                os.environ.pop(key, None)
            ours = dict(visible_env(units))
        devices = lists.index(units) + 1
        counts = {key: [n for n, env in enumerate(written, 1) if key in env] for key in keys}
        wrong += [f"{INVARIANT}, {where}: units {units} ({devices} of {len(lists)} devices) set {key}={ours[key]!r} "
                  f"beside {var}={ours.get(var)!r}; Ray's {manager.__name__} writes {key} only for "
                  f"{' or '.join(str(n) for n in counts[key])} devices and leaves it unset for {devices}, so a task's "
                  f"process keeps the node's value (the runtime's own; on a host of a multi-host slice its place in "
                  f"the slice): the plugin's replaces it"
                  for key in keys if key in ours and key not in ray_env]
    return wrong
