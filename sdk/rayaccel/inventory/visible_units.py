"""An operator's visible-devices setting applied to a node's inventory, before anything is made of it.

``CUDA_VISIBLE_DEVICES=0,1 rayaccel start`` (or the variable any plugin's family declares) offers only those
of the node's schedulable units. The value is in the plugin's syntax, so its ``rayaccel_parse_visible``
reads it, and the env for the units left is the plugin's ``rayaccel_visible_env``: both are plugin calls,
so this runs where plugins are called (the inventory layer), and the outputs read the result.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from rayaccel.errors import RayaccelError
from rayaccel.inventory.builder import InventoryBuilder, partition_label
from rayaccel.plugins.manager import PluginManager
from rayaccel.records import NodeInventory, Problem


def restrict_to_visible(inventory: NodeInventory, manager: PluginManager,
                        environ: Mapping[str, str] | None = None) -> NodeInventory:
    """The inventory limited to the units an operator's visible-devices variables name.

    For each family whose ``visible_devices_env_var`` is set in ``environ`` (default: this process's
    env), only the schedulable units it names (parsed by the plugin's ``rayaccel_parse_visible``) stay;
    the family's resource count, the node's and ``rayaccel.io/count`` follow, and a warning problem says
    what was left out. A device stays when the variable names its unit or its own id (``GPU-<uuid>``), a
    partition when it names the partition (``MIG-<uuid>``) or its device.
    Raises :class:`RayaccelError` when the variable names units the node lacks.
    """
    environ = os.environ if environ is None else environ
    families = []
    resources = dict(inventory.resources)
    labels = dict(inventory.labels)
    problems = list(inventory.problems)
    for family in inventory.families:
        env_var = family.family.visible_devices_env_var
        value = environ.get(env_var)
        if value is None:
            families.append(family)
            continue
        name = family.family.name
        known = [unit for device in family.devices for unit in device.unit_ids]
        # A device named by its own id (CUDA_VISIBLE_DEVICES=GPU-<uuid>, as the runtimes take it) is its units:
        # the parser keeps the entry as written, and only the inventory knows which device has that id.
        units_of = {d.id: list(d.unit_ids) for d in family.devices if d.id not in known}
        allowed = [unit for entry in manager.parse_visible(family.plugin, value)
                   for unit in units_of.get(entry, [entry])]
        known += [p.id for device in family.devices for p in device.partitions]
        unknown = [unit for unit in allowed if unit not in known]
        if unknown:
            raise RayaccelError(
                f"{env_var}={value!r} names {', '.join(map(repr, unknown[:5]))}, which this node's {name} devices "
                f"do not have (units: {', '.join(known[:16]) or 'none'}): name units of this node, or unset "
                f"{env_var} to offer all of them")
        units = [unit for unit in family.schedulable_units if unit in set(allowed)]
        parent = {p.id: set(d.unit_ids) for d in family.devices for p in d.partitions}
        partitions = {profile: kept for profile, ids in family.partition_units.items()
                      if (kept := [p for p in ids if p in allowed or parent[p] & set(allowed)])}
        if units == family.schedulable_units and partitions == family.partition_units:
            families.append(family)
            continue
        resource = family.family.resource_name
        family_resources = dict(family.resources)
        counts = {resource: units, **{profile: partitions.get(profile, []) for profile in family.partition_units}}
        if units or partitions:
            for counted, offered in counts.items():
                if counted not in family_resources:
                    continue
                if not offered:
                    if resources.get(counted) == family_resources[counted]:
                        resources.pop(counted)
                    family_resources.pop(counted)
                    continue
                if resources.get(counted) == family_resources[counted]:
                    resources[counted] = float(len(offered))
                family_resources[counted] = float(len(offered))
        else:
            for key, amount in family.resources.items():
                if resources.get(key) == amount:
                    resources.pop(key)
            family_resources = {}
        kept_ids = {p for ids in partitions.values() for p in ids}
        count = len(units) + sum(any(p.id in kept_ids for p in d.partitions) for d in family.devices)
        family_labels = {**family.labels, "rayaccel.io/count": str(count)}
        for profile, ids in family.partition_units.items():  # the partition labels count what is left
            first = next(q for d in family.devices for q in d.partitions if q.id == ids[0])
            key = partition_label(first.kind, first.profile)
            if profile in partitions:
                family_labels[key] = str(len(partitions[profile]))
            else:
                family_labels.pop(key, None)
            if labels.get("rayaccel.io/family") == name:
                if profile in partitions:
                    labels[key] = family_labels[key]
                else:
                    labels.pop(key, None)
        if labels.get("rayaccel.io/family") == name:
            labels["rayaccel.io/count"] = str(count)
        worker = InventoryBuilder(manager, []).worker_needs(family.plugin, units)  # the env for these units
        families.append(family.model_copy(update={"schedulable_units": units, "resources": family_resources,
                                                  "labels": family_labels, "worker": worker,
                                                  "partition_units": partitions}))
        left_out = [unit for unit in family.schedulable_units if unit not in units]
        left_out += [p for ids in family.partition_units.values() for p in ids if p not in kept_ids]
        problems.append(Problem(
            plugin=family.plugin, distribution=manager.plugin(family.plugin).distribution, hook=None,
            code="visible-devices", severity="warning",
            message=f"{env_var}={value!r} is set: the node offers {len(units)} of its {len(family.schedulable_units)} "
                    f"healthy {name} units ({', '.join(units) or 'none'})"
                    + (f" and {len(kept_ids)} partitions ({', '.join(sorted(kept_ids))})" if kept_ids else "")
                    + f"; left out: {', '.join(left_out)}",
            fix=f"unset {env_var} before starting the node to offer every healthy device"))
    return inventory.model_copy(update={"families": families, "resources": resources, "labels": labels,
                                        "problems": problems})
