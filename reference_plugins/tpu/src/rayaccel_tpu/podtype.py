"""TPU pod types ("accelerator types" in GCE terms): validation, normalisation and what they imply.

All pure. The rules mirror Ray 2.60 ``ray/_private/accelerators/tpu.py`` so the plugin and Ray agree on
the same machine: a pod type is ``<generation>-<TensorCores>`` (``v5p-16``, ``v5litepod-8``, ``tpu7x-8``),
and v5e / v6e chips have one TensorCore where the others have two.
"""

from __future__ import annotations

import math
import re

#: Ray's check, applied to the raw value before normalisation.
POD_TYPE_PATTERN = re.compile(r"^(v|tpu)\d+[a-zA-Z]*-\d+$")

#: Generations whose chips hold one TensorCore (Ray's SINGLE_CORE_TPU_TYPES).
SINGLE_CORE_GENERATIONS = ("v5litepod", "v6e")

#: Product names by generation, as Google writes them.
PRODUCT_NAMES = {
    "v2": "TPU v2", "v3": "TPU v3", "v4": "TPU v4", "v5litepod": "TPU v5e", "v5p": "TPU v5p",
    "v6e": "TPU v6e", "v7x": "TPU7x",
}


def normalize(pod_type: str) -> str:
    """``tpu7x-8`` -> ``v7x-8``; ``TPU-V4`` -> ``v4`` (Ray's normalize_tpu_accelerator_type)."""
    return re.sub(r"^tpu-?v?", "v", pod_type.strip().lower())


def parse_pod_type(raw: str | None) -> str | None:
    """The normalised pod type, or None when the value is absent or not a pod type."""
    if not raw or not POD_TYPE_PATTERN.match(raw):
        return None
    return normalize(raw)


def generation(pod_type: str) -> str:
    return pod_type.split("-")[0]


def accelerator_type(pod_type: str) -> str:
    """Ray's accelerator type: ``v5p-16`` -> ``TPU-V5P``."""
    return f"TPU-{generation(normalize(pod_type)).upper()}"


def head_resource(pod_type: str) -> str:
    """The resource only worker 0 of a slice carries: ``TPU-v5p-16-head``."""
    return f"TPU-{pod_type}-head"


def cores_per_chip(pod_type: str) -> int:
    return 1 if normalize(pod_type).startswith(SINGLE_CORE_GENERATIONS) else 2


def chips_in_slice(pod_type: str) -> int:
    """Chips in the whole slice: the pod type counts TensorCores. Ray's get_total_chips_from_accelerator_type, to
    the letter (0 for a pod type of fewer cores than a chip has: the slice domain takes its devices' count then)."""
    cores = int(pod_type.rsplit("-", 1)[1])
    return cores // cores_per_chip(pod_type)


def hosts_in_slice(pod_type: str, chips_on_this_host: int) -> int:
    """Hosts in the slice, counting a partly filled host as one (as Ray does)."""
    return max(1, math.ceil(chips_in_slice(pod_type) / max(1, chips_on_this_host)))


def product_name(generation_name: str) -> str:
    return PRODUCT_NAMES.get(generation_name, f"TPU {generation_name}")
