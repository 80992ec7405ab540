"""Register the plugins' tensor transports with Ray Direct Transport, and expose the path choice.

``rayaccel.ray.init`` and ``rayaccel.ray.connect`` call :func:`register_transports` on the driver before
any actor exists; users who start Ray themselves call it once after ``ray.init``. Ray's own transports
(NCCL, GLOO, CUDA_IPC, NIXL) are declared by plugins for path selection only and never registered again.
The SDK's reference shared-memory transport (``RAYACCEL_SHM``) is always registered. Every class is registered
measured (:func:`rayaccel.transports.metrics.measured`): its transfers, bytes, latency and failures reach the node's
metrics endpoint, and whatever it raises reaches the caller as one error naming the transport and the step.
"""

from __future__ import annotations

from collections.abc import Sequence

from rayaccel.errors import DeclarationError, RayaccelError
from rayaccel.inventory.transport_paths import RAY_TRANSPORTS, REFERENCE, Choice, Endpoint, choose_transport
from rayaccel.plugins.manager import PluginManager, default_manager
from rayaccel.ray.node import node_configs
from rayaccel.records import NodeInventory, TransportSpec
from rayaccel.support.lazy import DeclaredClassError, import_declared_class
from rayaccel.transports.metrics import class_path, measured, measured_class


class TransportRegistrationError(DeclarationError):
    """A declared transport cannot be registered: the message names the plugin and the fix."""


def declared_transports(manager: PluginManager | None = None,
                        plugins: Sequence[str] | None = None) -> dict[str, list[TransportSpec]]:
    """Plugin name -> the transports it declares (``rayaccel_transports``), each with what its class says it moves
    where the plugin runs in this process (:meth:`PluginManager.transports`; a driver imports the classes anyway to
    register them with Ray)."""
    manager = manager or default_manager()
    names = list(plugins) if plugins is not None else manager.plugin_names()
    return {name: manager.transports(name) for name in names}


def _import_class(plugin: str, spec: TransportSpec) -> type:
    from ray.experimental.rdt.tensor_transport_manager import TensorTransportManager

    try:
        return import_declared_class(spec.manager_class, TensorTransportManager,
                                     "ray.experimental.TensorTransportManager", "manager_class", "rayaccel_transports")
    except DeclaredClassError as e:
        raise TransportRegistrationError(f"plugin {plugin}: transport {spec.name}: {e}") from None


def register_transports(manager: PluginManager | None = None, plugins: Sequence[str] | None = None) -> list[str]:
    """Register every declared transport (and the reference one) with Ray in this process; return the
    names registered now or earlier. Idempotent: a transport already registered with the same class is
    left alone. Call it on the driver before creating the actors that use the transports.

    Raises :class:`TransportRegistrationError` naming the plugin for a name taken by Ray's own transports
    (without ``builtin_in_ray``), by another plugin, or a manager class that is missing or wrong. Without
    torch (``pip install 'rayaccel[rdt]'``) nothing can be registered and an empty list is returned.
    """
    try:
        import torch
    except ImportError:
        return []
    from ray.experimental.rdt import util as rdt_util

    rdt_util._ensure_default_transports_registered()  # type: ignore[no-untyped-call]  # Ray's own first, so collisions are seen
    declared = declared_transports(manager, plugins)
    wanted: dict[str, tuple[str, TransportSpec, type]] = {}
    for plugin, specs in [("rayaccel (reference)", [REFERENCE]), *declared.items()]:
        for spec in specs:
            if spec.name in RAY_TRANSPORTS:
                if not spec.builtin_in_ray:
                    raise TransportRegistrationError(
                        f"plugin {plugin}: transport name {spec.name} is Ray's own transport; declare it with "
                        "builtin_in_ray=True (for path selection) or give yours another name")
                continue
            if spec.builtin_in_ray:
                raise TransportRegistrationError(
                    f"plugin {plugin}: transport {spec.name} says builtin_in_ray but Ray's own transports are "
                    f"{', '.join(RAY_TRANSPORTS)}; set builtin_in_ray=False")
            cls = _import_class(plugin, spec)
            if spec.name in wanted and wanted[spec.name][2] is not cls:
                raise TransportRegistrationError(
                    f"plugin {plugin}: transport name {spec.name} is already declared by {wanted[spec.name][0]} "
                    "with another manager class; rename one of them")
            wanted.setdefault(spec.name, (plugin, spec, cls))
    names = []
    for name, (plugin, spec, cls) in wanted.items():
        known = rdt_util.transport_manager_info.get(name)
        if known is not None:
            if measured_class(known.transport_manager_class) is not cls:
                raise TransportRegistrationError(
                    f"plugin {plugin}: transport name {name} is already registered in this process with "
                    f"{class_path(measured_class(known.transport_manager_class))}; rename the transport")
        else:
            rdt_util.register_tensor_transport(name, list(spec.devices), measured(cls, name), torch.Tensor)
        names.append(name)
    return names


End = tuple[NodeInventory | str, str | None, str | None]


def _inventory(node: NodeInventory | str) -> NodeInventory:
    if isinstance(node, NodeInventory):
        return node
    config = node_configs().get(node)
    if config is None:
        raise RayaccelError(f"node {node} was not started by this process (rayaccel.ray.init/add_node): pass its "
                            "NodeInventory instead of its id")
    return config.inventory


def transport_between(a: End, b: End, manager: PluginManager | None = None, same_node: bool | None = None) -> Choice:
    """The transport for two actors' devices, each given as (its node: a ``NodeInventory``, or the node id an
    actor reads from ``ray.get_runtime_context().get_node_id()`` for a node this process started; the
    family; the device id). ``choice.transport`` is the name for ``.options(tensor_transport=...)`` and
    ``choice.reason`` says why. Family and device ``None`` mean CPU tensors in host memory."""
    ia, ib = _inventory(a[0]), _inventory(b[0])
    if same_node is None and isinstance(a[0], str) and isinstance(b[0], str):
        same_node = a[0] == b[0]
    return choose_transport(Endpoint(ia, a[1], a[2]), Endpoint(ib, b[1], b[2]), declared_transports(manager),
                            same_node=same_node)
