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
from rayaccel.inventory.builder import InventoryBuilder
from rayaccel.plugins.manager import PluginManager
from rayaccel.records import NodeInventory, Problem


def restrict_to_visible(inventory: NodeInventory, manager: PluginManager,
                        environ: Mapping[str, str] | None = None) -> NodeInventory:
    """The inventory limited to the units an operator's visible-devices variables name.

    For each family whose ``visible_devices_env_var`` is set in ``environ`` (default: this process's
    env), only the schedulable units it names (parsed by the plugin's ``rayaccel_parse_visible``) stay;
    the family's resource count, the node's and ``rayaccel.io/count`` follow, and a warning problem says
    what was left out. Raises :class:`RayaccelError` when the variable names units the node lacks.
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
        allowed = manager.parse_visible(family.plugin, value)
        known = [unit for device in family.devices for unit in device.unit_ids]
        unknown = [unit for unit in allowed if unit not in known]
        if unknown:
            raise RayaccelError(
                f"{env_var}={value!r} names {', '.join(map(repr, unknown[:5]))}, which this node's {name} devices "
                f"do not have (units: {', '.join(known[:16]) or 'none'}): name units of this node, or unset "
                f"{env_var} to offer all of them")
        units = [unit for unit in family.schedulable_units if unit in set(allowed)]
        if units == family.schedulable_units:
            families.append(family)
            continue
        resource = family.family.resource_name
        family_resources = dict(family.resources)
        if units:
            if resources.get(resource) == family_resources.get(resource):
                resources[resource] = float(len(units))
            family_resources[resource] = float(len(units))
        else:
            for key, amount in family.resources.items():
                if resources.get(key) == amount:
                    resources.pop(key)
            family_resources = {}
        family_labels = {**family.labels, "rayaccel.io/count": str(len(units))}
        if labels.get("rayaccel.io/family") == name:
            labels["rayaccel.io/count"] = str(len(units))
        worker = InventoryBuilder(manager, []).worker_needs(family.plugin, units)  # the env for these units
        families.append(family.model_copy(update={"schedulable_units": units, "resources": family_resources,
                                                  "labels": family_labels, "worker": worker}))
        left_out = [unit for unit in family.schedulable_units if unit not in units]
        problems.append(Problem(
            plugin=family.plugin, distribution=manager.plugin(family.plugin).distribution, hook=None,
            code="visible-devices", severity="warning",
            message=f"{env_var}={value!r} is set: the node offers {len(units)} of its {len(family.schedulable_units)} "
                    f"healthy {name} units ({', '.join(units) or 'none'}); left out: {', '.join(left_out)}",
            fix=f"unset {env_var} before starting the node to offer every healthy device"))
    return inventory.model_copy(update={"families": families, "resources": resources, "labels": labels,
                                        "problems": problems})
