"""Plain Ray loads the plugins: ``rayaccel enable`` / ``rayaccel disable`` (opt-in, per environment).

``rayaccel enable`` writes ONE file into the environment's site-packages, :data:`PTH_NAME`. Python runs its
one line at every interpreter start (``site``); the line only puts a small finder first on ``sys.meta_path``
(:data:`HOOK_SOURCE`), which compares each imported module's name with ``ray._private.node`` and otherwise does
nothing: no rayaccel module, no plugin, no file is read in a process that never imports Ray. When Ray's
``ray._private.node`` has been executed (``import ray`` does it), the finder takes itself off the meta path and
calls :func:`activate`, which wraps ``ray._private.node.Node.__init__``. From then on, whenever this process
starts a Ray node (plain ``ray start``, ``ray start --address=...`` on a second machine, ``ray.init()``
starting a local node), before Ray resolves the node's resources:

1. the node's inventory is built through the plugins' isolated worker processes
   (:class:`rayaccel.isolation.pool.WorkerPool`, bounded by ``RAYACCEL_INVENTORY_TIMEOUT``), once per node
   start, on this machine or on ``RAYACCEL_SIMULATE``'s fixture;
2. its :func:`rayaccel.ray.node.node_config` is set in ``os.environ``, exactly what ``rayaccel start`` sets:
   ``RAY_OVERRIDE_RESOURCES`` / ``RAY_OVERRIDE_LABELS`` (resources and counts, ``accelerator_type``, the
   vocabulary labels), per-unit instance ids, the worker preload (``rayaccel.ray.worker_preload``: the families in each
   worker's registry, each task's visible-devices variable, quantity validation, the claims table) and the
   families' visible-devices variables. Ray's daemons inherit it; a driver gets its own environment back
   once the node has started, and its registry gains the day-zero families;
3. each problem of the inventory (a plugin that raised at import, one that missed its deadline) is one
   warning line on stderr: that plugin's family is missing, the node starts with the others.

A node whose environment already carries a rayaccel node config (``rayaccel start``, ``rayaccel.ray.init``,
``rayaccel.ray.add_node``) is left to it. ``RAYACCEL_NO_ACTIVATION=1`` skips the activation in one process.
Anything that goes wrong here costs the plugins' families, never the node: Ray starts as it would without.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import inspect
import os
import sys
import sysconfig
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rayaccel.errors import RayaccelError

#: The file ``rayaccel enable`` writes into site-packages (``site`` runs .pth lines that start with ``import``).
PTH_NAME = "rayaccel-ray-activation.pth"
#: Set to 1 in a process (and its children) to start Ray nodes without the plugins while the activation is on.
NO_ACTIVATION_ENV = "RAYACCEL_NO_ACTIVATION"
#: The Ray module whose loading calls :func:`activate` (it defines ``Node``, which every node start creates).
WATCHED_MODULE = "ray._private.node"

#: The finder the .pth line installs. Self-contained (nothing of rayaccel is importable before ``site`` has
#: processed every .pth) and small (``site`` compiles it at every interpreter start): one string comparison per
#: import until Ray's node module is imported, and then :func:`find_ray_node` does the rest.
HOOK_SOURCE = f"""\
class RayaccelRayActivation:
 def find_spec(self, name, path=None, target=None):
  if name != {WATCHED_MODULE!r}: return None
  sys.meta_path.remove(self)
  try: from rayaccel.ray.activation import find_ray_node
  except Exception as e: return sys.stderr.write(f"rayaccel: WARNING: Ray starts without the plugins: the Ray \\
activation is on but rayaccel cannot be imported ({{e!r}}): reinstall rayaccel or delete {PTH_NAME}\\n") and None
  return find_ray_node(name, path, target)
sys.meta_path.insert(0, RayaccelRayActivation())
"""


def pth_line() -> str:
    """The .pth file's text: one ``import`` line (``site`` executes such lines), running :data:`HOOK_SOURCE`."""
    # site may process a venv's site-packages twice (its prefix is listed twice): the second time costs one look
    # at the meta path, not a compile.
    return ("import sys; any(type(f).__name__ == 'RayaccelRayActivation' for f in sys.meta_path) or "
            f"exec({HOOK_SOURCE!r}, {{'sys': sys}})\n")


def site_packages() -> Path:
    """The environment's site-packages: where this interpreter installs pure-Python packages."""
    return Path(sysconfig.get_path("purelib"))


@dataclass(frozen=True)
class ActivationState:
    on: bool
    path: Path
    current: bool  # the file is the one this rayaccel writes (False: an older or edited one)

    def describe(self) -> str:
        if not self.on:
            return (f"off: plain `ray start` / `ray.init()` do not load the plugins (`rayaccel enable` writes "
                    f"{self.path})")
        stale = "" if self.current else " (written by another rayaccel version: run `rayaccel enable` again)"
        return f"on: plain `ray start` / `ray.init()` load the plugins ({self.path}){stale}"


def state(directory: Path | None = None) -> ActivationState:
    path = (directory or site_packages()) / PTH_NAME
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return ActivationState(on=False, path=path, current=False)
    except OSError as e:
        raise RayaccelError(f"cannot read {path} ({e.strerror}): check its permissions") from None
    return ActivationState(on=True, path=path, current=text == pth_line())


def enable(directory: Path | None = None) -> ActivationState:
    """Write the activation file (atomically: a reader never sees half of it). A directory this process
    cannot write is one :class:`RayaccelError` line, and nothing is changed."""
    from rayaccel.files.atomic import write_atomically

    target = (directory or site_packages())
    path = target / PTH_NAME
    if not target.is_dir():
        raise RayaccelError(f"cannot enable the Ray activation: {target} is not a directory (the environment's "
                            "site-packages); run `rayaccel enable` with the Python of the environment to change")
    try:
        write_atomically(path, pth_line())
    except OSError as e:
        raise RayaccelError(f"cannot enable the Ray activation: {target} is not writable here ({e.strerror}); "
                            "run `rayaccel enable` as the user that owns this environment") from None
    return state(target)


def disable(directory: Path | None = None) -> tuple[ActivationState, bool]:
    """Remove the activation file; returns the new state and whether a file was removed."""
    target = (directory or site_packages())
    path = target / PTH_NAME
    try:
        path.unlink()
    except FileNotFoundError:
        return state(target), False
    except OSError as e:
        raise RayaccelError(f"cannot disable the Ray activation: {path} cannot be removed here ({e.strerror}); "
                            "run `rayaccel disable` as the user that owns this environment") from None
    return state(target), True


# After Ray's node module is loaded ---------------------------------------------------------------------------


def _warn(message: str) -> None:
    print(f"rayaccel: WARNING: {message}", file=sys.stderr, flush=True)


def find_ray_node(name: str, path: Any, target: Any) -> Any:
    """The spec of Ray's node module, its loader made to call :func:`activate` once the module is executed (the
    finder of the .pth line calls this, once per process, after taking itself off the meta path)."""
    from importlib.machinery import PathFinder

    spec = PathFinder.find_spec(name, path, target)
    loader = getattr(spec, "loader", None)
    if spec is None or loader is None or not hasattr(loader, "exec_module"):
        return spec
    run = loader.exec_module

    def exec_module(module: Any) -> None:
        run(module)
        activate(module)

    loader.exec_module = exec_module
    return spec


def activate(node_module: Any) -> None:
    """Wrap ``Node.__init__`` of Ray's freshly loaded node module (never raises: Ray must still load)."""
    try:
        node_class = node_module.Node
        original = node_class.__init__
        if getattr(original, "rayaccel_activation", False):
            return

        signature = inspect.signature(original)

        @functools.wraps(original)
        def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
            connect_only = bool(signature.bind(self, *args, **kwargs).arguments.get("connect_only", False))
            config = None if connect_only else node_start_config()
            if config is None:
                original(self, *args, **kwargs)
                return
            from rayaccel.ray.node import environ

            with environ(config.env):  # Ray's daemons inherit it; this process gets its own back
                original(self, *args, **kwargs)
            _install_registry(config.families)

        __init__.rayaccel_activation = True  # type: ignore[attr-defined]
        node_class.__init__ = __init__
    except Exception as e:  # a Ray without the shape we expect: Ray as it is
        _warn(f"the Ray activation could not hook Ray's node start ({type(e).__name__}: {e}); "
              "Ray nodes start without the plugins' families")


def _install_registry(families: list[Any]) -> None:
    """The day-zero families in this process's registry (a driver of ``ray.init()`` validates quantities)."""
    if not families:
        return
    try:
        from rayaccel.ray.registry import install

        install(families)
    except Exception as e:
        _warn(f"this process's Ray registry lacks the plugins' families ({type(e).__name__}: {e})")


def node_start_config() -> Any:
    """The :class:`rayaccel.ray.node.NodeConfig` of the node this process is starting, or None: the
    activation is off for this process, a rayaccel node config is already applied, or building it failed
    (said in one warning). Problems of the inventory are warnings, one line each."""
    from rayaccel.ray.registry import FAMILIES_ENV

    if os.environ.get(NO_ACTIVATION_ENV, "") in ("1", "true", "yes") or FAMILIES_ENV in os.environ:
        return None
    try:
        from rayaccel.ray.internals import check_ray

        check_ray()  # a node must never start with hooks Ray does not have
        config = _build_config()
    except Exception as e:
        detail = str(e) if isinstance(e, RayaccelError) else f"{type(e).__name__}: {e}"
        _warn(f"the node starts without the plugins' families: {' '.join(detail.split())}")
        return None
    for problem in config.inventory.problems:
        if problem.severity != "info":
            _warn(" ".join(problem.render().split()))
    return config


def _build_config() -> Any:
    from rayaccel.isolation.pool import WorkerPool
    from rayaccel.ray.driver import configure_node
    from rayaccel.simulation.host_factory import SIMULATE_ENV, SIMULATE_FAULTS_ENV

    simulate = os.environ.get(SIMULATE_ENV) or None
    given = os.environ.get(SIMULATE_FAULTS_ENV) or None
    with WorkerPool.load(None) as pool:
        config = configure_node(simulate, None, [], given, manager=pool.manager, pool=pool, check_installed_ray=False)
    if config.fault_file and config.fault_file != given and "ray.scripts.scripts" not in sys.modules:
        # The fault file created for a simulated node started by `ray.init()` goes with this driver (the node
        # stops with it); one created by `ray start` stays with the node (`rayaccel stop --address` removes it).
        atexit.register(_remove, config.fault_file)
    return config


def _remove(path: str) -> None:
    with contextlib.suppress(OSError):
        os.unlink(path)
