"""Day-zero families in Ray's accelerator registry, in one process (a driver or a worker).

Ray's registry is a closed set returned by ``ray._private.accelerators.get_all_accelerator_managers``.
The bridge replaces that function with one that returns Ray's set plus one generated
``AcceleratorManager`` subclass per family Ray does not know. Everything in Ray that asks the registry
looks it up at call time, so after :func:`install`:

- ``@ray.remote(resources={"ACME": 1.5})`` is refused with the plugin's quantity message;
- ``set_visible_accelerator_ids()`` sets the family's env var before each task and at actor creation
  (and Ray restores it after a task);
- ``ray.get_runtime_context().get_accelerator_ids()`` lists the family.

Families Ray knows (GPU, TPU, neuron_cores, HPU, ...) keep Ray's own managers.
"""

from __future__ import annotations

import json
import os
import re
import threading
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from rayaccel.support.raycompat import ray_family_for

if TYPE_CHECKING:  # records (pydantic) load on first use: every Ray worker of a node imports this module
    from rayaccel.plugins.manager import PluginManager
    from rayaccel.records import FamilyDeclaration, FamilyInventory, IdleFamily, QuantityRule

#: JSON list of :class:`FamilySpec`, set on nodes the SDK starts; workers read it in the preload module.
FAMILIES_ENV = "RAYACCEL_RAY_FAMILIES"
#: Ray manager class that owns "GPU" on this node, when it is not NVIDIA's (set on nodes the SDK starts).
GPU_MANAGER_ENV = "RAYACCEL_RAY_GPU_MANAGER"
#: Ray's own switch to leave a family's env var alone (``RAY_EXPERIMENTAL_NOSET_CUDA_VISIBLE_DEVICES``).
NOSET_PREFIX = "RAY_EXPERIMENTAL_NOSET_"


@dataclass(frozen=True)
class FamilySpec:
    """What a process needs to know about a day-zero family to schedule it: no discovery, no hardware."""

    plugin: str
    name: str
    resource_name: str
    env_var: str
    quantity_rule: dict[str, Any] = field(default_factory=lambda: {"kind": "fractional", "choices": []})
    #: The plugin implements rayaccel_parse_visible / rayaccel_visible_env: load it to call them.
    custom_parse: bool = False
    custom_env: bool = False
    #: The variables the family's visibility sets beside ``env_var`` (``FamilyDeclaration.visibility_variables``):
    #: a task's process gets these and ``env_var`` from the plugin's visible env, no other key it returns.
    companions: list[str] = field(default_factory=list)
    #: A partition profile's resource (``GPU_MIG_1g.10gb``): its ids are partition ids, which the claims
    #: table gives each task; the node's value of the env var (whole devices' ids) is not its list.
    partition: bool = False

    @property
    def rule(self) -> QuantityRule:
        from rayaccel.records import QuantityRule

        return QuantityRule.model_validate(self.quantity_rule)


def is_day_zero(resource_name: str, env_var: str) -> bool:
    """True for a family Ray has no manager for (Ray-known pairs keep Ray's manager)."""
    return ray_family_for(resource_name, env_var) is None


def family_specs(manager: PluginManager, plugins: Sequence[str] | None = None) -> list[FamilySpec]:
    """The day-zero families among the manager's plugins (all of them, or the named ones)."""
    specs = []
    for plugin in plugins if plugins is not None else manager.plugin_names():
        spec = _spec(plugin, manager.family(plugin), custom_parse=manager.implements(plugin, "rayaccel_parse_visible"),
                     custom_env=manager.implements(plugin, "rayaccel_visible_env"))
        if spec is not None:
            specs.append(spec)
    return specs


def family_spec(family: FamilyInventory | IdleFamily) -> FamilySpec | None:
    """The spec of an inventory's family (None when Ray knows the family): read from the inventory alone."""
    return _spec(family.plugin, family.family, custom_parse=family.worker.custom_parse,
                 custom_env=family.worker.custom_env)


def _spec(plugin: str, declaration: FamilyDeclaration, *, custom_parse: bool, custom_env: bool) -> FamilySpec | None:
    if not is_day_zero(declaration.resource_name, declaration.visible_devices_env_var):
        return None
    return FamilySpec(plugin=plugin, name=declaration.name, resource_name=declaration.resource_name,
                      env_var=declaration.visible_devices_env_var,
                      quantity_rule=declaration.quantity_rule.model_dump(mode="json"),
                      custom_parse=custom_parse, custom_env=custom_env,
                      companions=list(declaration.visibility_variables[1:]))


def partition_specs(family: FamilyInventory) -> list[FamilySpec]:
    """One spec per partition profile the family offers: its resource sets the family's visible-devices
    variable to the partition ids a task claimed (``CUDA_VISIBLE_DEVICES=MIG-<uuid>``), whether or not Ray
    knows the family itself. Partition ids are what the runtime accepts, so no plugin hook formats them."""
    declaration = family.family
    return [FamilySpec(plugin=family.plugin, name=f"{declaration.name}-{name}", resource_name=name,
                       env_var=declaration.visible_devices_env_var,
                       quantity_rule=declaration.quantity_rule.model_dump(mode="json"), partition=True)
            for name in sorted(family.partition_units)]


def dump_specs(specs: Iterable[FamilySpec]) -> str:
    return json.dumps([asdict(s) for s in specs], sort_keys=True)


def load_specs(text: str) -> list[FamilySpec]:
    return [FamilySpec(**item) for item in json.loads(text)]


# A plugin manager is only built in a worker when a family has its own parser/env: most need none.
def _plugin_manager() -> PluginManager:
    from rayaccel.plugins.manager import default_manager

    return default_manager()


def parse_visible(spec: FamilySpec, value: str) -> list[str]:
    if spec.custom_parse:
        return _plugin_manager().parse_visible(spec.plugin, value)
    return [part.strip() for part in value.split(",") if part.strip()]


def visible_env(spec: FamilySpec, unit_ids: Sequence[str]) -> dict[str, str]:
    """What a process given ``unit_ids`` is set: the family's variable and its declared companions only, as Ray's
    managers write only theirs; any other key the plugin returns (a library path) stays the process's own (the
    inventory's problems say it was dropped)."""
    if spec.custom_env:
        owned = {spec.env_var, *spec.companions}
        return {key: value for key, value in _plugin_manager().visible_env(spec.plugin, unit_ids).items()
                if key in owned}
    return {spec.env_var: ",".join(unit_ids)}


def manager_class(spec: FamilySpec) -> type:
    """An ``AcceleratorManager`` subclass for one day-zero family.

    Node-level answers (count, type, extra resources) are deliberately empty: the bridge gives Ray a
    node's resources and labels through ``RAY_OVERRIDE_RESOURCES`` / ``RAY_OVERRIDE_LABELS`` from the
    inventory, so a process that starts a node never probes hardware through this class.
    """
    from ray._private.accelerators.accelerator import AcceleratorManager

    rules: list[QuantityRule] = []  # validated on first use, not when a worker starts
    # Each companion's value in this process before the manager first wrote it (None: unset). Ray reuses a worker
    # for tasks of other sizes: a task whose env leaves the companion out gets the node's value back, as Ray's TPU
    # manager removes the sub-host bounds it wrote for a 1- or 2-chip task before a whole host's.
    node_values: dict[str, str | None] = {}

    def get_resource_name() -> str:
        return spec.resource_name

    def get_visible_accelerator_ids_env_var() -> str:
        return spec.env_var

    def get_current_node_num_accelerators() -> int:
        return 0

    def get_current_node_accelerator_type() -> str | None:
        return None

    def get_current_node_additional_resources() -> dict[str, float] | None:
        return None

    def validate_resource_request_quantity(quantity: float) -> tuple[bool, str | None]:
        from rayaccel.inventory.quantity import check_quantity

        if not rules:
            rules.append(spec.rule)
        return check_quantity(rules[0], spec.resource_name, quantity)

    def get_current_process_visible_accelerator_ids() -> list[str] | None:
        value = os.environ.get(spec.env_var)
        if value is None or spec.partition:  # a partition resource's instance ids are claims-table tokens
            return None
        return parse_visible(spec, value)

    def set_current_process_visible_accelerator_ids(ids: list[str]) -> None:
        if os.environ.get(NOSET_PREFIX + spec.env_var):
            return
        env = visible_env(spec, [str(i) for i in ids])
        for key in spec.companions:
            if key in env:
                node_values.setdefault(key, os.environ.get(key))
            elif key in node_values:  # written for an earlier task of this worker, not for this one
                node_value = node_values[key]
                if node_value is None:
                    os.environ.pop(key, None)
                else:
                    os.environ[key] = node_value
        os.environ.update(env)

    methods = (get_resource_name, get_visible_accelerator_ids_env_var, get_current_node_num_accelerators,
               get_current_node_accelerator_type, get_current_node_additional_resources,
               validate_resource_request_quantity, get_current_process_visible_accelerator_ids,
               set_current_process_visible_accelerator_ids)
    namespace: dict[str, Any] = {fn.__name__: staticmethod(fn) for fn in methods}
    namespace["__doc__"] = f"rayaccel: the {spec.name} family ({spec.plugin} plugin) in Ray's registry."
    namespace["rayaccel_spec"] = spec
    words = re.split(r"[^A-Za-z0-9]+", spec.name)
    class_name = "Rayaccel" + "".join(p[:1].upper() + p[1:] for p in words) + "AcceleratorManager"
    return type(class_name, (AcceleratorManager,), namespace)


# Installation ---------------------------------------------------------------------------------------

_install_lock = threading.Lock()
_installed: dict[str, type] = {}
_ORIGINAL_ATTR = "_rayaccel_original_get_all_accelerator_managers"


def installed() -> dict[str, type]:
    """Resource name -> generated manager, for the families installed in this process."""
    return dict(_installed)


def install(specs: Iterable[FamilySpec]) -> dict[str, type]:
    """Add the day-zero families to this process's Ray registry (idempotent; checks the Ray version)."""
    from rayaccel.ray.internals import check_ray

    check_ray()
    import ray._private.accelerators as accelerators

    with _install_lock:
        for spec in specs:
            current = _installed.get(spec.resource_name)
            if current is None or current.rayaccel_spec != spec:  # type: ignore[attr-defined]
                _installed[spec.resource_name] = manager_class(spec)
        original = getattr(accelerators, _ORIGINAL_ATTR, None)
        if original is None:
            original = accelerators.get_all_accelerator_managers
            setattr(accelerators, _ORIGINAL_ATTR, original)

        # Ray's set is a literal in its source, and ours changes only here: combined once, not on every call
        # (Ray asks before and after every task, through get_all_accelerator_resource_names).
        ray_managers = frozenset(original())
        ray_names = {m.get_resource_name() for m in ray_managers}
        # A family Ray knows stays Ray's, even if a plugin of the same resource were installed.
        combined = ray_managers | {m for name, m in _installed.items() if name not in ray_names}

        def get_all_accelerator_managers() -> set[Any]:
            return set(combined)  # a new set per call, as Ray's: a caller may change it

        accelerators.get_all_accelerator_managers = get_all_accelerator_managers
        # Ray caches resource name -> manager on the lookup function; rebuild it on next use.
        cache = accelerators.get_accelerator_manager_for_resource
        if hasattr(cache, "_resource_name_to_accelerator_manager"):
            del cache._resource_name_to_accelerator_manager
        pin_gpu_manager()
    return installed()


def pin_gpu_manager() -> type | None:
    """Give "GPU" to the manager named by RAYACCEL_RAY_GPU_MANAGER in this process.

    Ray decides who owns "GPU" by probing the machine (AMD, Intel, Apple, Metax if they find devices, else
    NVIDIA). The node's inventory already knows, and a simulated AMD node has nothing for Ray to find:
    without this, its workers would get CUDA_VISIBLE_DEVICES instead of HIP_VISIBLE_DEVICES.
    """
    name = os.environ.get(GPU_MANAGER_ENV)
    if not name:
        return None
    import ray._private.accelerators as accelerators

    manager = getattr(accelerators, name, None)
    if manager is None or manager.get_resource_name() != "GPU":
        raise ValueError(f"{GPU_MANAGER_ENV}={name!r} is not one of Ray's GPU accelerator managers")
    lookup = accelerators.get_accelerator_manager_for_resource
    lookup("GPU")  # builds Ray's cache, which we then correct
    lookup._resource_name_to_accelerator_manager["GPU"] = manager  # type: ignore[attr-defined]
    return manager  # type: ignore[no-any-return]


def uninstall() -> None:
    """Give this process Ray's registry back (tests)."""
    import ray._private.accelerators as accelerators

    with _install_lock:
        original = getattr(accelerators, _ORIGINAL_ATTR, None)
        if original is not None:
            accelerators.get_all_accelerator_managers = original
            delattr(accelerators, _ORIGINAL_ATTR)
        _installed.clear()
        cache = accelerators.get_accelerator_manager_for_resource
        if hasattr(cache, "_resource_name_to_accelerator_manager"):
            del cache._resource_name_to_accelerator_manager
