"""A visible env sets the family's visibility variables and nothing else (RAC107, ``invariant
sets-only-its-visibility-variables``; held-out round 13's ``c1``: a command-csv bake whose ``rayaccel_visible_env``
also returned ``LD_LIBRARY_PATH``).

Ray's managers write only their own variable for a task (``set_current_process_visible_accelerator_ids``), TPU's
beside it its two sub-host bounds (``RAY_VISIBLE_ENV_COMPANIONS``, checked against Ray by
tests/support/test_raycompat.py); a day-zero family's are the companions its declaration lists
(``FamilyDeclaration.visible_env_companions``, which the record keeps to Ray's for a pair Ray owns). Any other key
belongs to the process: written into each worker and the raylet's env, a library path or thread count would replace
the node's for every task, so the SDK drops it; a plugin returning one is named.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from rayaccel.records import FamilyDeclaration
from rayaccel.support.raycompat import RAY_VISIBLE_ENV_COMPANIONS, ray_family_for

INVARIANT = "invariant sets-only-its-visibility-variables"


def unowned_variables(family: FamilyDeclaration, env: Mapping[str, str]) -> dict[str, str]:
    """The keys of ``env`` that are no visibility variable of ``family``, with their values, in name order."""
    owned = set(family.visibility_variables)
    return {key: env[key] for key in sorted(env) if key not in owned}


def unowned_variable_errors(family: FamilyDeclaration, found: Sequence[tuple[list[str], dict[str, str]]]) -> list[str]:
    """One line per key the plugin's visible env sets beyond the family's visibility variables (the first unit set
    that sets it quoted), from (units, unowned keys) pairs."""
    first: dict[str, tuple[list[str], str]] = {}
    for units, unowned in found:
        for key, value in unowned.items():
            first.setdefault(key, (units, value))
    if not first:
        return []
    manager = ray_family_for(family.resource_name, family.visible_devices_env_var)
    if manager is not None:
        rays = [family.visible_devices_env_var, *RAY_VISIBLE_ENV_COMPANIONS.get(manager, ())]
        owner = f"Ray's {manager} writes only {', '.join(rays)} for a task"
    else:
        companions = ", ".join(family.visible_env_companions) or "none"
        owner = (f"family {family.name}'s visibility is {family.visible_devices_env_var} and the companions its "
                 f"declaration lists in visible_env_companions ({companions})")
    return [f"{INVARIANT}: rayaccel_visible_env for units {units} sets {key}={value!r}, which is no visibility "
            f"variable: {owner}. A key a visible env returns is written into every task's process and the node's "
            f"env, replacing the node's own {key} (the SDK drops it)"
            for key, (units, value) in first.items()]
