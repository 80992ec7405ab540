"""The label vocabulary and Ray's label syntax.

The SDK writes one vendor-neutral vocabulary under ``rayaccel.io/`` (docs/labels.md), plus the keys Ray
defines for accelerators. Every key and value is checked against Ray's (Kubernetes') label syntax before
it reaches a node, so a bad label fails at inventory time with a message, not at ``ray start``.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator, Mapping
from types import MappingProxyType

from rayaccel.support.raycompat import RAY_GPU_DOMAIN_LABEL, RAY_TPU_SLICE_LABEL, RAY_TPU_WORKER_LABEL

VOCABULARY_PREFIX = "rayaccel.io/"
#: ``rayaccel.io/partition-<kind>-<profile>``: a partition kind (lower-case words joined by '-') and a profile.
_PARTITION_PROFILE_RE = re.compile(
    rf"^{re.escape(VOCABULARY_PREFIX)}partition-[a-z][a-z0-9-]*-[A-Za-z0-9][A-Za-z0-9_.-]*$")

#: Vocabulary key -> what it holds. docs/labels.md documents each; a test keeps the two in step. Read-only:
#: validation reads it, so no plugin may widen the vocabulary (RAC112 watches it too).
class LabelVocabulary(Mapping[str, str]):
    """The vocabulary, read-only. A key with ``<n>`` stands for the keys with a whole number >= 1 there:
    ``rayaccel.io/scale-up-domain-2`` is in it through ``rayaccel.io/scale-up-domain-<n>``; a partition
    profile's count, ``rayaccel.io/partition-mig-1g.10gb``, through ``rayaccel.io/partition-<kind>-<profile>``."""

    def __init__(self, keys: Mapping[str, str]) -> None:
        self._keys = MappingProxyType(dict(keys))

    def __getitem__(self, key: str) -> str:
        if key in self._keys:
            return self._keys[key]
        if _PARTITION_PROFILE_RE.match(key):
            return self._keys[f"{VOCABULARY_PREFIX}partition-<kind>-<profile>"]
        return self._keys[re.sub(r"(?<=-)[1-9][0-9]*(?=-|$)", "<n>", key)]

    def __iter__(self) -> Iterator[str]:
        return iter(self._keys)

    def __len__(self) -> int:
        return len(self._keys)


VOCABULARY: Mapping[str, str] = LabelVocabulary({
    "rayaccel.io/family": "family name, e.g. nvidia",
    "rayaccel.io/vendor": "vendor, e.g. NVIDIA",
    "rayaccel.io/sku": "SKU id from the plugin's catalog, e.g. h100-sxm5-80gb (absent when unknown)",
    "rayaccel.io/sku-known": "true when every device resolved to a catalog SKU",
    "rayaccel.io/count": "healthy devices of the family on the node",
    "rayaccel.io/memory-mib": "memory of one device, MiB",
    "rayaccel.io/architecture": "chip architecture, e.g. hopper, cdna3, v5p",
    "rayaccel.io/interconnect": "best link kind between devices (nvlink, xgmi, ici, ..., pcie, none)",
    "rayaccel.io/scale-up-domain": "id of the scale-up domain the node belongs to (NVLink clique, TPU slice)",
    "rayaccel.io/scale-up-domain-kind": "kind of that domain, e.g. nvlink-clique, tpu-slice, ultraserver",
    "rayaccel.io/scale-up-domain-size": "devices in the whole domain",
    "rayaccel.io/scale-up-domain-count": "scale-up domains of the family on the node, when more than one",
    "rayaccel.io/scale-up-domain-<n>": "id of the node's n-th other scale-up domain (n = 1 .. count - 1)",
    "rayaccel.io/scale-up-domain-<n>-size": "devices in that whole domain",
    "rayaccel.io/driver-version": "kernel driver version",
    "rayaccel.io/runtime-version": "user-space runtime version (CUDA, ROCm, Neuron, ...)",
    "rayaccel.io/health": "healthy, degraded (some devices unhealthy) or unhealthy (none usable)",
    "rayaccel.io/partition-kind": "the partitions' kind on a node with partitioned devices (mig, ...; mixed)",
    "rayaccel.io/partition-<kind>-<profile>": "partitions of that profile that take work, e.g. "
                                              "rayaccel.io/partition-mig-2g.20gb=2",
})

# Ray 2.60 `_private/label_utils.py`: a name is <= 63 of [A-Za-z0-9_.-], alphanumeric at both ends.
_NAME = r"[A-Za-z0-9]([A-Za-z0-9_.-]{0,61}[A-Za-z0-9])?"
_NAME_RE = re.compile(_NAME)
_PREFIX_RE = re.compile(rf"^({_NAME}?(\.{_NAME}?)*)$")

#: Scale-up domain kinds that are a GPU domain in Ray's sense: a node of one publishes ``ray.io/gpu-domain``
#: (``placement_group(topology_strategy={"ray.io/gpu-domain": "STRICT_PACK"})``). TPU slices and Neuron
#: UltraServers keep ``rayaccel.io/scale-up-domain`` alone (Ray has ``ray.io/tpu-slice-name`` for slices).
GPU_DOMAIN_KINDS = frozenset({"nvlink-clique", "nvswitch", "xgmi-hive", "gaudi-scaleup"})

#: Best first: used to pick ``rayaccel.io/interconnect``.
LINK_PREFERENCE = ("nvswitch", "nvlink", "xgmi", "ici", "neuronlink", "gaudi-roce", "infiniband", "roce",
                   "efa", "ethernet", "other", "pcie")


def label_key_error(key: str) -> str | None:
    prefix, _, name = key.rpartition("/")
    if "/" in key and (len(prefix) > 253 or not _PREFIX_RE.fullmatch(prefix)):
        return f"label key {key!r}: prefix must be DNS labels separated by dots, <= 253 characters"
    if len(name) > 63 or not _NAME_RE.fullmatch(name):
        return (f"label key {key!r}: name must be <= 63 characters of letters, digits, '-', '_' and '.', "
                "beginning and ending with a letter or digit")
    return None


def label_value_error(key: str, value: str) -> str | None:
    if value == "":
        return None
    if len(value) > 63 or not _NAME_RE.fullmatch(value):
        return (f"label {key}={value!r}: value must be <= 63 characters of letters, digits, '-', '_' and '.', "
                "beginning and ending with a letter or digit")
    return None


def label_errors(labels: Mapping[str, str]) -> list[str]:
    errors = []
    for key, value in labels.items():
        error = label_key_error(key) or label_value_error(key, value)
        if error:
            errors.append(error)
    return errors


#: A node's own state among its labels: the ids of its scale-up domains (their kind and size describe the node
#: type; ``ray.io/gpu-domain`` is one of them), its health now, and Ray's TPU slice name and worker id. Every
#: other label is the same on each node of a type, so outputs for node types (KubeRay worker groups, autoscaler
#: node types) keep those and leave these out.
_NODE_OWN_RE = re.compile(rf"^{re.escape(VOCABULARY_PREFIX)}(scale-up-domain(-\d+)?|health)$")


def node_own_label(key: str) -> bool:
    """True for a label that describes one node, not the node's type (see ``_NODE_OWN_RE``)."""
    return bool(_NODE_OWN_RE.match(key)) or key in (RAY_TPU_SLICE_LABEL, RAY_TPU_WORKER_LABEL, RAY_GPU_DOMAIN_LABEL)


def domain_label_value(domain_id: str) -> str:
    """A scale-up domain's id as a label value and resource-name suffix, one to one: the id itself when it is a
    valid label value, else its valid characters (at most 50) and 12 hex digits of its SHA-256, so two ids that
    differ only past character 63 or in characters a label cannot hold never become one domain."""
    if domain_id and label_value_error("", domain_id) is None:
        return domain_id
    stem = to_label_value(domain_id)[:50].strip("-_.")
    digest = hashlib.sha256(domain_id.encode()).hexdigest()[:12]
    return f"{stem}-{digest}" if stem else digest


def to_label_value(text: str) -> str:
    """Make free text (a vendor name, a driver version) a valid label value: 'Intel Gaudi' -> 'Intel-Gaudi'."""
    value = re.sub(r"[^A-Za-z0-9_.-]+", "-", text.strip())
    value = re.sub(r"-{2,}", "-", value)[:63]
    return value.strip("-_.")
