"""The Ray internals the bridge relies on, checked before any of them is touched.

None of these is a public Ray plugin API (ray-project/ray#40880 asks for one), so the bridge refuses to
run on a Ray version it was not tested with, and verifies that every attribute it reads or replaces
exists and has the expected shape. ``RAYACCEL_ALLOW_UNTESTED_RAY=1`` lifts the version check (not the
attribute checks) for people who want to try a newer Ray at their own risk.
"""

from __future__ import annotations

import os
from typing import Any

from rayaccel.errors import RayaccelError
from rayaccel.support.raycompat import TESTED_RAY_VERSIONS

ALLOW_UNTESTED_ENV = "RAYACCEL_ALLOW_UNTESTED_RAY"

#: Methods of ``ray._private.accelerators.AcceleratorManager`` the generated managers implement.
MANAGER_METHODS = (
    "get_resource_name", "get_visible_accelerator_ids_env_var", "get_current_node_num_accelerators",
    "get_current_node_accelerator_type", "get_current_node_additional_resources",
    "validate_resource_request_quantity", "get_current_process_visible_accelerator_ids",
    "set_current_process_visible_accelerator_ids",
)

#: (module, attribute) pairs the bridge reads or replaces, and why.
REQUIRED_ATTRIBUTES: tuple[tuple[str, str, str], ...] = (
    ("ray._private.accelerators", "get_all_accelerator_managers", "replaced to add day-zero families"),
    ("ray._private.accelerators", "get_accelerator_manager_for_resource", "its cache is cleared"),
    ("ray._private.accelerators", "get_all_accelerator_resource_names", "looks the registry up at call time"),
    ("ray._private.accelerators.accelerator", "AcceleratorManager", "base class of the generated managers"),
    ("ray._private.utils", "get_visible_accelerator_ids", "re-read in workers after the registry grows"),
    ("ray._private.utils", "set_visible_accelerator_ids", "sets each family's env var before a task"),
    ("ray._private.utils", "reset_visible_accelerator_env_vars",
     "wrapped in workers: a normal task's unit claim is released where Ray restores the env"),
    ("ray._private.worker", "global_worker", "holds original_visible_accelerator_ids"),
    ("ray._private.node", "Node", "its __init__ is wrapped where `rayaccel enable` is on (plain `ray start`)"),
    ("ray._raylet", "GcsClient", "drain_node for the health monitor"),
    ("ray._raylet", "AuthenticationTokenLoader", "whether a Ray token exists (the node's auth mode)"),
    ("ray._raylet", "Config", "re-reads RAY_AUTH_MODE once rayaccel has decided it; the metrics report interval"),
    ("ray.experimental.internal_kv", "_internal_kv_put", "the health monitor publishes its status"),
    ("ray.experimental.internal_kv", "_internal_kv_get", "readers get the health monitor's status"),
    ("ray._private.state", "state", "a placement group's topology_strategy and assigned domain (GCS table data)"),
    ("ray._private.gcs_utils", "create_gcs_channel", "a gRPC channel to the GCS for its node channel (node_view)"),
    ("ray.core.generated.gcs_service_pb2_grpc", "ControlPlanePubSubGcsServiceStub",
     "subscribes to and long-polls the GCS node channel (node_view)"),
    ("ray.core.generated.pubsub_pb2", "GCS_NODE_INFO_CHANNEL", "the channel a node's registration and death go on"),
)


#: Attributes of ``ray._private.worker.Worker`` (the class of ``global_worker``) the claims table relies on.
WORKER_ATTRIBUTES = (
    ("get_accelerator_ids_for_accelerator_resource", "replaced in workers: Ray's ids become claimed units"),
    ("current_task_name", "the cordon's tag task claims nothing"),
    ("placement_group_id", "a task in a domain placement group gets units of that domain"),
)


class UnsupportedRayError(RayaccelError):
    """The installed Ray is not one the bridge was tested with, or lacks an internal it needs."""


def ray_version() -> str:
    import ray

    return str(ray.__version__)


def check_ray_version(version: str | None = None) -> None:
    version = version or ray_version()
    if version in TESTED_RAY_VERSIONS:
        return
    if os.environ.get(ALLOW_UNTESTED_ENV, "") in ("1", "true", "yes"):
        return
    raise UnsupportedRayError(
        f"rayaccel's Ray bridge was tested with Ray {', '.join(TESTED_RAY_VERSIONS)}, but Ray {version} is "
        "installed; it hooks into Ray internals that change between versions. Install a tested Ray "
        f"(pip install 'ray[default]=={TESTED_RAY_VERSIONS[-1]}'), or set {ALLOW_UNTESTED_ENV}=1 to try "
        "this one at your own risk")


def missing_internals() -> list[str]:
    """What the bridge needs but the installed Ray lacks, one sentence each (empty when all is there)."""
    import importlib

    missing = []
    for module_name, attr, why in REQUIRED_ATTRIBUTES:
        try:
            module: Any = importlib.import_module(module_name)
        except ImportError:
            missing.append(f"module {module_name} ({why})")
            continue
        if not hasattr(module, attr):
            missing.append(f"{module_name}.{attr} ({why})")
    try:
        from ray._private.accelerators.accelerator import AcceleratorManager
    except ImportError:
        return missing
    missing += [f"AcceleratorManager.{m}" for m in MANAGER_METHODS if not hasattr(AcceleratorManager, m)]
    import ray._private.worker

    missing += [f"ray._private.worker.Worker.{attr} ({why})" for attr, why in WORKER_ATTRIBUTES
                if not hasattr(ray._private.worker.Worker, attr)]
    if not isinstance(getattr(ray._private.worker.global_worker, "original_visible_accelerator_ids", None), dict):
        missing.append("ray._private.worker.global_worker.original_visible_accelerator_ids (maps Ray's "
                       "instance ids to the ids the node was started with)")
    return missing


def check_ray() -> None:
    """Fail loudly, before anything is patched, when the installed Ray is not what the bridge expects."""
    check_ray_version()
    missing = missing_internals()
    if missing:
        raise UnsupportedRayError(
            f"Ray {ray_version()} lacks internals the rayaccel bridge relies on: {'; '.join(missing)}. "
            f"Install a tested Ray ({', '.join(TESTED_RAY_VERSIONS)})")
