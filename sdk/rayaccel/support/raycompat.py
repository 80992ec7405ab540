"""What the Ray version we build against reserves, as data (so `import rayaccel` needs no `import ray`).

``tests/support/test_raycompat.py`` checks these tables against the installed Ray's own registry, so a Ray upgrade
that adds a family or changes an env var fails the suite instead of silently drifting.
"""

from __future__ import annotations

from typing import Any

#: The Ray version the bridge is written and tested against.
TESTED_RAY_VERSIONS = ("2.60.0",)

#: Ray's in-tree accelerator managers: (resource name, visible-devices env var).
RAY_BUILTIN_FAMILIES: dict[str, tuple[str, str | None]] = {
    "NvidiaGPUAcceleratorManager": ("GPU", "CUDA_VISIBLE_DEVICES"),
    "AMDGPUAcceleratorManager": ("GPU", "HIP_VISIBLE_DEVICES"),
    "IntelGPUAcceleratorManager": ("GPU", "ZE_AFFINITY_MASK"),
    "AppleGPUAcceleratorManager": ("GPU", None),
    "MetaxGPUAcceleratorManager": ("GPU", "CUDA_VISIBLE_DEVICES"),
    "TPUAcceleratorManager": ("TPU", "TPU_VISIBLE_CHIPS"),
    "NeuronAcceleratorManager": ("neuron_cores", "NEURON_RT_VISIBLE_CORES"),
    "HPUAcceleratorManager": ("HPU", "HABANA_VISIBLE_MODULES"),
    "NPUAcceleratorManager": ("NPU", "ASCEND_RT_VISIBLE_DEVICES"),
    "RBLNAcceleratorManager": ("RBLN", "RBLN_DEVICES"),
    "FuriosaAcceleratorManager": ("FURIOSA", "FURIOSA_DEVICES"),
    "MBLTAcceleratorManager": ("MBLT", "QBRUNTIME_VISIBLE_DEVICES"),
    "TTNPUAcceleratorManager": ("TTNPU", "TT_VISIBLE_DEVICES"),
}

RAY_ACCELERATOR_RESOURCES = frozenset(res for res, _ in RAY_BUILTIN_FAMILIES.values())

#: Ray's accelerator managers -> the torch device type of their workers' tensors, where Ray's torch device manager
#: for the resource (``ray.air._internal.device_manager``: GPU -> ``cuda``, HPU -> ``hpu``, NPU -> ``npu``) and the
#: vendor's torch build agree on one (ROCm's torch calls AMD GPUs ``cuda`` too). Left out: Intel's and Apple's GPU
#: managers (their torch builds say xpu and mps), MetaX's, TPU's (torch_tpu ``tpu`` beside torch_xla ``xla``) and
#: those Ray has no torch device manager for. Ray matches a tensor to a transport by this type
#: (``device_match_transport``). tests/conformance/test_conformance_heldout13_transport_devices.py holds it to Ray.
RAY_TORCH_DEVICE_TYPES: dict[str, str] = {
    "NvidiaGPUAcceleratorManager": "cuda",
    "AMDGPUAcceleratorManager": "cuda",
    "HPUAcceleratorManager": "hpu",
    "NPUAcceleratorManager": "npu",
}

#: Resource names Ray itself owns: no plugin may claim them.
RAY_RESERVED_RESOURCES = frozenset({"CPU", "memory", "object_store_memory", "bundle"})
RAY_RESERVED_RESOURCE_PREFIXES = ("node:", "accelerator_type:")

#: Ray's default ``custom_unit_instance_resources``: resources that get per-unit instance ids.
RAY_DEFAULT_UNIT_INSTANCE_RESOURCES = ("neuron_cores", "TPU", "NPU", "HPU", "RBLN", "FURIOSA", "TTNPU", "MBLT")

#: Ray's node labels: every ``ray.io/`` key the SDK writes or selects on is named here, and only here.
RAY_LABEL_PREFIX = "ray.io/"
RAY_ACCELERATOR_TYPE_LABEL = "ray.io/accelerator-type"
RAY_NODE_ID_LABEL = "ray.io/node-id"
RAY_TPU_SLICE_LABEL = "ray.io/tpu-slice-name"
RAY_TPU_WORKER_LABEL = "ray.io/tpu-worker-id"
RAY_TPU_LABELS = (RAY_TPU_SLICE_LABEL, RAY_TPU_WORKER_LABEL, "ray.io/tpu-topology", "ray.io/tpu-pod-type")
#: The GPU scale-up domain (NVLink clique, ...) ``placement_group(topology_strategy={...: "STRICT_PACK"})``
#: packs a group into (ray-project/ray#61442). Ray never sets it; its docs ask the operator to.
RAY_GPU_DOMAIN_LABEL = "ray.io/gpu-domain"
#: ``topology_strategy``'s node-level key: the value is what ``strategy=`` would be.
RAY_TOPOLOGY_NODE_KEY = RAY_NODE_ID_LABEL
#: What ``import ray`` writes into ``os.environ`` (``ray/_private/client_mode_hook.py``): a plugin that imports
#: Ray (a transport subclassing Ray's ``TensorTransportManager``) is not blamed for it, and it is not undone.
RAY_IMPORT_ENVIRON: dict[str, str] = {"RAY_CLIENT_MODE": "0"}

#: The ``ray.io/`` labels Ray's own manager sets for a resource. A family with that resource may declare them
#: (``FamilyDeclaration.ray_labels``) and set them as Ray would; no other ``ray.io/`` label is a plugin's.
RAY_RESOURCE_LABELS: dict[str, tuple[str, ...]] = {"TPU": RAY_TPU_LABELS}

#: The variables Ray's manager writes beside its visible-devices variable for a task
#: (``set_current_process_visible_accelerator_ids``): TPU's sub-host bounds for one or two chips; every other manager
#: writes its own variable alone. A family with that (resource, variable) pair may declare them
#: (``FamilyDeclaration.visible_env_companions``) and set them as Ray does; no other companion is Ray's.
RAY_VISIBLE_ENV_COMPANIONS: dict[str, tuple[str, ...]] = {
    "TPUAcceleratorManager": ("TPU_CHIPS_PER_HOST_BOUNDS", "TPU_HOST_BOUNDS")}


def unit_request(resource: str, k: float) -> dict[str, Any]:
    """Task or actor options asking for k units of ``resource``: ``num_gpus`` for GPU (Ray refuses
    ``resources={"GPU": k}``: its own accelerator resource has a keyword of its own), else ``resources``."""
    return {"num_gpus": k} if resource == "GPU" else {"resources": {resource: k}}


def ray_family_for(resource_name: str, env_var: str) -> str | None:
    """The Ray manager that owns exactly this (resource, env var) pair, if any."""
    for manager, pair in RAY_BUILTIN_FAMILIES.items():
        if pair == (resource_name, env_var):
            return manager
    return None


def torch_device_type(resource_name: str, env_var: str) -> tuple[str, str] | None:
    """(Ray's manager of the family, the torch device type of its tensors), or None where Ray gives no one answer."""
    manager = ray_family_for(resource_name, env_var)
    if manager is None or manager not in RAY_TORCH_DEVICE_TYPES:
        return None
    return manager, RAY_TORCH_DEVICE_TYPES[manager]


def reserved_resource_problem(resource_name: str, env_var: str) -> str | None:
    """Why a family may not claim this resource name, or None when it may."""
    if resource_name in RAY_RESERVED_RESOURCES or resource_name.startswith(RAY_RESERVED_RESOURCE_PREFIXES):
        return f"resource name {resource_name!r} is reserved by Ray"
    if resource_name in RAY_ACCELERATOR_RESOURCES and ray_family_for(resource_name, env_var) is None:
        owners = sorted(m for m, (res, _) in RAY_BUILTIN_FAMILIES.items() if res == resource_name)
        envs = sorted({str(RAY_BUILTIN_FAMILIES[m][1]) for m in owners})
        return (f"resource name {resource_name!r} belongs to Ray's built-in {', '.join(owners)}, which use "
                f"env var {' or '.join(envs)}, not {env_var}")
    return None
