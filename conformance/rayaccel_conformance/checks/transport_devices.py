"""RAC305's ``invariant devices-as-ray-matches-them``: a transport is declared for the torch device type the family's
tensors have.

Ray picks a tensor's transport by ``tensor.device.type in devices`` (``ray.experimental.rdt.util.
device_match_transport``, where the devices are those the transport was registered with), so a transport declared
only for a device type the family's tensors never have matches none of them: every transfer of the family's tensors
over it is refused, and path selection offers a transport that never moves them. Which type the family's tensors
have is Ray's answer for the family's resource: Ray's AI libraries give a worker of that resource its torch device
(``ray.air._internal.device_manager``'s ``SUPPORTED_ACCELERATOR_TORCH_DEVICE_MANAGER``: GPU -> ``cuda``, HPU ->
``hpu``, NPU -> ``npu``), and for ROCm that is torch's own answer too (PyTorch's "HIP (ROCm) semantics": "'rocm' or
'hip' are not valid, use 'cuda'").
"""

from __future__ import annotations

from typing import Any

from rayaccel.inventory.transport_paths import class_device_types
from rayaccel.support.raycompat import torch_device_type
from rayaccel_conformance.checks.ownership import RAY_TRANSPORT_CLASSES

#: Host memory: a device type every family's tensors may have, and a transport may move beside its own.
HOST = "cpu"


def family_device_type(family: Any) -> tuple[str, str] | None:
    """(Ray's manager of ``family``, the torch device type of its tensors), or None where Ray gives no one answer
    (``rayaccel.support.raycompat.RAY_TORCH_DEVICE_TYPES``)."""
    return torch_device_type(family.resource_name, family.visible_devices_env_var)


def device_type_problems(spec: Any, family: Any) -> list[str]:
    """Why ``spec`` is declared for device types other than the family's tensors' own (host memory aside): Ray
    never matches a tensor of the family to what it names."""
    known = family_device_type(family)
    if known is None:
        return []
    manager, own = known
    foreign = [device for device in spec.devices if device not in (own, HOST)]
    if not foreign:
        return []
    missing = own not in spec.devices
    return [f"invariant devices-as-ray-matches-them: transport {spec.name} is declared for device types "
            f"{spec.devices}, but the family's tensors are torch device type {own!r} (resource "
            f"{family.resource_name}: Ray's {manager}, whose workers Ray's torch device manager gives "
            f"torch.device({own!r})); Ray matches a tensor to a transport by tensor.device.type in the devices it is "
            f"registered with (ray.experimental.rdt.util.device_match_transport), so no tensor of the family is ever "
            f"a {', '.join(repr(d) for d in foreign)} tensor"
            + (f" and {spec.name} moves none of the family's device tensors" if missing else "")
            + f": {_fix(spec, own)}"]


def _fix(spec: Any, own: str) -> str:
    """What to declare instead: the family's type, or, on a transport of Ray's that Ray never registers for it, the
    host memory alone (a builtin_in_ray declaration names only device types Ray moves with it)."""
    rays = RAY_TRANSPORT_CLASSES.get(spec.name)
    if spec.builtin_in_ray and rays is not None and own not in rays[1]:
        return (f"Ray registers {spec.name} for {', '.join(rays[1])} only, so declare it for {HOST!r} alone (the "
                f"family's host tensors) and move {own!r} tensors with a transport of the family's own")
    return f"declare {own!r} (beside {HOST!r} where it moves host tensors too)"


def class_device_problems(spec: Any) -> list[str]:
    """Why ``spec`` is declared for device types its manager class says it never moves (its ``moved_device_types()``:
    the SDK's shared-memory class answers ``('cpu',)`` while its own steps move the memory). Ray registers the
    transport for the declared devices and matches a tensor by ``tensor.device.type`` in them, so it hands the class
    the family's device tensors, which it refuses; the class's answer, not the family, is the oracle here."""
    moved = class_device_types(spec)
    if moved is None:
        return []
    claimed = [device for device in spec.devices if device not in moved]
    if not claimed:
        return []
    return [f"invariant host-memory-declares-no-device: transport {spec.name} is declared for device types "
            f"{spec.devices}, but its class {spec.manager_class} moves {', '.join(repr(d) for d in moved)} tensors "
            f"only (moved_device_types() {moved!r}: its steps copy host memory and refuse any other tensor); Ray "
            f"registers it for the declared devices and matches a tensor by tensor.device.type in them "
            f"(ray.experimental.rdt.util.device_match_transport), so it would be offered for "
            f"{', '.join(repr(d) for d in claimed)} tensors it cannot read: declare {list(moved)!r} alone, or "
            f"override the class's memory steps to move the device's memory and declare what they move"]
