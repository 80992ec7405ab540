"""Preloaded into every Python worker of a node the SDK starts (raylet config ``preload_python_modules``).

Ray's ``default_worker.py`` imports this module after connecting and before the first task. It adds the
node's day-zero families (from ``RAYACCEL_RAY_FAMILIES``; no discovery, no plugin import unless a plugin
parses its own env var) to the worker's accelerator registry, then re-reads the ids the node was started
with, which Ray recorded when ``ray._private.worker`` was imported, before the registry knew the family.
"""

from __future__ import annotations

import logging
import os
import sys
from typing import Any

logger = logging.getLogger("rayaccel.ray.worker")


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


try:
    setup_worker()
except Exception as e:  # a worker must still run: say why the families are missing, loudly, in its log
    message = f"rayaccel: day-zero accelerator families NOT installed in this worker: {e}"
    logger.error(message)
    print(message, file=sys.stderr, flush=True)
