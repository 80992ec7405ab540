"""Start Ray with the SDK: a local node (``init``), nodes of a test cluster (``add_node``), a driver
attaching to such a cluster (``connect``)."""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import weakref
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from rayaccel.errors import RayaccelError
from rayaccel.hosts.simulated import SIMULATE_HOSTNAME_ENV, SimulatedHost
from rayaccel.inventory.builder import collect_inventory
from rayaccel.inventory.visible_units import restrict_to_visible
from rayaccel.plugins.manager import PluginManager, default_manager
from rayaccel.ray.node import (
    NodeConfig,
    environ,
    forget_started_nodes,
    node_config,
    remember_started_node,
)
from rayaccel.ray.registry import family_specs, install
from rayaccel.simulation.host_factory import NodeHost, node_host
from rayaccel.support.monitor_interval import DEFAULT_MONITOR_INTERVAL

if TYPE_CHECKING:
    from ray.cluster_utils import Cluster

    from rayaccel.isolation.pool import WorkerPool

logger = logging.getLogger("rayaccel.ray.driver")


@dataclass
class _PendingMonitor:
    node_id: str
    interval: float
    plugins: list[str] | None


_lock = threading.Lock()
_pending_monitors: list[_PendingMonitor] = []
_created_files: list[str] = []
#: Per Cluster, the host names of the simulated nodes add_node started in it (each node is its own machine) and
#: their nodes: a name is free again once its node has left the cluster (``cluster.remove_node``).
_simulated_hosts: weakref.WeakKeyDictionary[Any, dict[str, Any]] = weakref.WeakKeyDictionary()


def configure_node(simulate: str | None = None, plugins: Sequence[str] | None = None, faults: Iterable[str] = (),
                   fault_file: str | None = None, manager: PluginManager | None = None,
                   isolated: bool = False, pool: WorkerPool | None = None,
                   check_installed_ray: bool = True) -> NodeConfig:
    """Build the inventory of the node to start and its :class:`NodeConfig`: the host this driver chooses
    (:func:`rayaccel.simulation.host_factory.node_host`: ``simulate``, ``faults``, ``fault_file``), then
    :func:`node_config_on` it.

    ``isolated``: run the plugins' hooks in worker processes (:mod:`rayaccel.isolation.pool`); else in this
    process, each hook in a thread with a timeout. ``pool``: in these workers, whose plugins ``manager`` knows
    by their description (:meth:`WorkerPool.load`). ``check_installed_ray``: as
    :func:`rayaccel.ray.node.node_config`.
    """
    manager = manager or default_manager()
    for name in plugins or []:
        manager.plugin(name)  # a clear error for an unknown plugin, before a fault file is made
    node = node_host(simulate, faults, fault_file, manager)
    if node.created and node.fault_file is not None:
        with _lock:
            _created_files.append(node.fault_file)
    try:
        return node_config_on(node, manager, plugins, isolated=isolated, pool=pool,
                              check_installed_ray=check_installed_ray)
    except BaseException:
        if node.created and node.fault_file is not None:  # made for a node that will not start
            remove_created_fault_file(node.fault_file)
        raise


def node_config_on(node: NodeHost, manager: PluginManager, plugins: Sequence[str] | None = None, *,
                   isolated: bool = False, pool: WorkerPool | None = None,
                   check_installed_ray: bool = True) -> NodeConfig:
    """The :class:`NodeConfig` of a node started on the host its starter chose (``rayaccel start`` chooses it
    itself): the plugins' inventory on that host, the operator's visible-devices setting applied, the node's
    Ray config made of it. Options as :func:`configure_node`'s."""
    plugin_list = list(plugins) if plugins is not None else None
    for name in plugin_list or []:
        manager.plugin(name)  # a clear error for an unknown plugin
    host = node.host
    if pool is not None:
        inventory = pool.build(host)
    elif isolated:
        from rayaccel.isolation.pool import isolated_inventory

        inventory = isolated_inventory(manager, host, plugins=plugin_list)
    else:
        inventory = collect_inventory(manager, host, plugins=plugin_list)
    inventory = restrict_to_visible(inventory, manager)  # the operator's CUDA_VISIBLE_DEVICES and the like
    config = node_config(inventory, simulate=node.simulate, fault_file=node.fault_file, plugins=plugin_list,
                         check_installed_ray=check_installed_ray)
    if isinstance(host, SimulatedHost):
        # What every process of the simulated machine has in its env (a GKE pod's TPU_* variables) reaches the
        # node's processes, as on the real machine: Ray's own code in the workers reads it. The node's own wins.
        state = host.state()
        config = replace(config, env={**{name: state.env[name] for name in state.process_env}, **config.env})
    return config


def log_problems(config: NodeConfig) -> None:
    """Log what the node's inventory found wrong or held back, as ``rayaccel start`` prints it: a node that
    offers fewer units than it has (an inherited ``NEURON_RT_VISIBLE_CORES=0``, a plugin that missed its
    deadline) must not do so silently."""
    for problem in config.inventory.problems:
        if problem.severity != "info":
            logger.warning("rayaccel: %s", problem.render())


def install_driver(plugins: Sequence[str] | None = None, manager: PluginManager | None = None) -> None:
    """Add the installed plugins' day-zero families to this driver's Ray registry: quantities are then
    validated at ``@ray.remote``/``.options()`` time with the plugin's message. Register their collective
    backends with ``ray.util.collective`` (:mod:`rayaccel.ray.collectives`; a bad declaration raises
    ``CollectiveRegistrationError`` naming the plugin)."""
    from rayaccel.ray.collectives import register_collective_backends

    manager = manager or default_manager()
    install(family_specs(manager, plugins))
    register_collective_backends(manager, plugins)


def init(simulate: str | None = None, plugins: Sequence[str] | None = None, faults: Iterable[str] = (),
         fault_file: str | None = None, monitor: bool = False,
         monitor_interval: float = DEFAULT_MONITOR_INTERVAL, manager: PluginManager | None = None,
         **ray_init_kwargs: Any) -> Any:
    """``ray.init`` on a local node whose resources and labels come from the inventory.

    ``simulate``: a fixture (``plugin/name`` or file) instead of this machine; ``faults``: fault names
    active from the start; ``fault_file``: where more can be switched on later; ``manager``: the plugins
    (default: the installed ones, as every process on the node loads them). Returns ray.init's context.
    """
    import ray

    # Always a new local node: plain ray.init() would join a cluster `ray start` left on this machine.
    address = ray_init_kwargs.setdefault("address", "local")
    if address != "local":
        raise RayaccelError(f"rayaccel.ray.init starts a node; to join the cluster at {address} use "
                            "rayaccel.ray.connect(address)")
    manager = manager or default_manager()
    from rayaccel.ray.collectives import register_collective_backends

    register_collective_backends(manager, plugins)  # a bad declaration stops here, before any node starts
    config = configure_node(simulate, plugins, faults, fault_file, manager)
    log_problems(config)
    with config.applied():
        context = ray.init(**ray_init_kwargs)
    install_driver(plugins, manager)
    from rayaccel.ray.transports import register_transports

    register_transports(manager, plugins)  # driver side, before any actor exists
    node_id = ray.get_runtime_context().get_node_id()
    remember_started_node(node_id, config)
    if monitor:
        from rayaccel.ray.monitor import start_monitor

        start_monitor(node_id, monitor_interval, plugins)
    return context


def shutdown() -> None:
    """``ray.shutdown()``, and forget the nodes and temporary fault files of this process."""
    import ray

    from rayaccel.ray.node_view import close_all

    close_all()  # before the GCS goes, where this process started it
    ray.shutdown()
    forget_started_nodes()
    with _lock:
        _pending_monitors.clear()
        created = list(_created_files)
    for path in created:
        remove_created_fault_file(path)


def remove_created_fault_file(path: str) -> None:
    """Remove a fault file :func:`configure_node` made (a node that was refused or has stopped)."""
    with _lock:
        if path not in _created_files:
            return
        _created_files.remove(path)
    with contextlib.suppress(OSError):
        os.unlink(path)


def add_node(cluster: Cluster, simulate: str | None = None, plugins: Sequence[str] | None = None,
             faults: Iterable[str] = (), fault_file: str | None = None, monitor: bool = False,
             monitor_interval: float = DEFAULT_MONITOR_INTERVAL, manager: PluginManager | None = None,
             hostname: str | None = None, **node_kwargs: Any) -> Any:
    """``cluster.add_node(**node_kwargs)`` for a ``ray.cluster_utils.Cluster``, with the inventory's
    resources and labels. The first node added is the head (``Cluster(initialize_head=False)``);
    ``head=True``/``False`` states which one is meant, and is checked.

    ``hostname``: the simulated machine's host name (default its fixture's). A further node simulated from a
    fixture already in this cluster gets one of its own unasked (``dgx-h100-01-2``), so host-local scale-up
    domain ids (``dgx-h100-01-2-nvswitch``) name two machines' domains apart, as real host names do.

    With ``monitor=True`` the node's health monitor starts now if this process is connected to the
    cluster, else on :func:`connect`. Returns the ``ray._private.node.Node``.
    """
    import ray

    head = node_kwargs.pop("head", None)
    if head is not None and bool(head) != (cluster.head_node is None):
        raise RayaccelError("the first node of a Cluster is its head, and only the first: "
                            + ("this cluster has a head already" if head else "add the head node first"))
    if hostname is not None and simulate is None:
        raise RayaccelError("hostname= names a simulated machine: pass simulate=<fixture> as well")
    with environ({SIMULATE_HOSTNAME_ENV: hostname} if hostname else {}):
        config = configure_node(simulate, plugins, faults, fault_file, manager)
    unique = config.inventory.host
    node: Any = None
    try:
        if simulate is not None:
            with _lock:
                started = _simulated_hosts.setdefault(cluster, {})
                taken = {name for name, other in started.items()
                         if other is None or other is cluster.head_node or other in cluster.worker_nodes}
                number = 2
                while unique in taken and hostname is None:
                    unique, number = f"{config.inventory.host}-{number}", number + 1
                started[unique] = None  # held while the node starts
            if unique != config.inventory.host:
                remove_created_fault_file(config.fault_file or "")
                with environ({SIMULATE_HOSTNAME_ENV: unique}):
                    config = configure_node(simulate, plugins, faults, fault_file, manager)
        log_problems(config)
        with config.applied():
            node = cluster.add_node(**node_kwargs)
    finally:
        if simulate is not None:
            with _lock:
                if node is None:
                    _simulated_hosts.get(cluster, {}).pop(unique, None)  # it never started: the name is free
                else:
                    _simulated_hosts[cluster][unique] = node
    node_id = str(node.node_id)
    remember_started_node(node_id, config)
    if monitor:
        pending = _PendingMonitor(node_id, monitor_interval, list(plugins) if plugins is not None else None)
        if ray.is_initialized():
            from rayaccel.ray.monitor import start_monitor

            start_monitor(pending.node_id, pending.interval, pending.plugins)
        else:
            with _lock:
                _pending_monitors.append(pending)
    return node


def connect(address: str, plugins: Sequence[str] | None = None, **ray_init_kwargs: Any) -> Any:
    """``ray.init(address=...)`` plus the driver-side registry, and the monitors ``add_node`` queued.

    Token authentication as ``rayaccel start`` decides it (:mod:`rayaccel.ray.auth`): with
    ``RAY_AUTH_MODE`` unset, a token here means token mode (plain ``ray.init(address=...)`` would not send it).
    """
    import ray

    from rayaccel.ray.auth import agree_with_cluster
    from rayaccel.ray.collectives import register_collective_backends

    register_collective_backends(plugins=plugins)  # a bad declaration stops here, before connecting
    agree_with_cluster()
    context = ray.init(address=address, **ray_init_kwargs)
    install_driver(plugins)
    from rayaccel.ray.transports import register_transports

    register_transports(plugins=plugins)  # driver side, before any actor exists
    with _lock:
        pending = list(_pending_monitors)
        _pending_monitors.clear()
    if pending:
        from rayaccel.ray.monitor import start_monitor

        for item in pending:
            start_monitor(item.node_id, item.interval, item.plugins)
    return context
