"""Whose names these are: a plugin's labels under its vendor's own prefix (RAC201), its extra resources
never Ray's or another family's (RAC111, RAC209), its fabrics and product names never another vendor's (RAC213)."""

from __future__ import annotations

import re
from typing import Any

from rayaccel.labels import VOCABULARY_PREFIX
from rayaccel.records import FamilyDeclaration
from rayaccel.support.raycompat import (
    RAY_ACCELERATOR_RESOURCES,
    RAY_LABEL_PREFIX,
    RAY_RESERVED_RESOURCE_PREFIXES,
    RAY_RESERVED_RESOURCES,
)

#: Vendors' label domains whose names do not spell the vendor (domain -> vendor and family words).
KNOWN_VENDOR_DOMAINS: dict[str, tuple[str, ...]] = {
    "habana.ai": ("intel", "habana", "gaudi"), "amazon.com": ("aws", "amazon", "neuron"),
    "google.com": ("google", "tpu"), "nvidia.com": ("nvidia",), "amd.com": ("amd",), "intel.com": ("intel",),
}


#: Words of a vendor's name that say nothing about whose domain it is.
_GENERIC_WORDS = frozenset({"corp", "corporation", "inc", "ltd", "llc", "gmbh", "co", "company", "devices",
                            "technologies", "technology", "systems", "labs", "the", "and", "io", "ai", "com"})


def _words(text: str) -> set[str]:
    return {w for w in re.split(r"[^a-z0-9]+", text.lower()) if len(w) >= 2} - _GENERIC_WORDS


def label_owner_problem(key: str, family: Any) -> str | None:
    """Why the plugin may not set label ``key``, or None when it is under the vendor's own prefix."""
    if key.startswith(RAY_LABEL_PREFIX):
        if key in family.ray_labels:  # Ray's own label for the family's resource, declared (and checked then)
            return None
        return f"label {key!r} is Ray's, and not one that belongs to the {family.name} family"
    if key.startswith(VOCABULARY_PREFIX) or "/" not in key:
        return None  # the SDK's own checks (vocabulary, no prefix) report these
    domain = key.split("/", 1)[0].lower()
    own = _words(family.vendor) | {family.name, family.name.replace("-", "")}
    known = next((words for d, words in KNOWN_VENDOR_DOMAINS.items() if domain == d or domain.endswith("." + d)),
                 None)
    if own & (_words(domain) | set(domain.split(".")) | set(known or ())):
        return None
    if known is None and any(len(w) >= 3 and w in domain for w in own):  # acmecorp.com for ACME Corp
        return None
    return (f"label {key!r} is not under the vendor's own prefix: {domain} names neither {family.vendor!r} nor "
            f"{family.name!r}" + (" (it is another vendor's)" if known else ""))


#: Resource names a plugin's extra resources may never take (Ray's own, besides raycompat's tables).
RAY_OWN_RESOURCES = frozenset({"CPU", "GPU", "TPU", "memory", "object_store_memory", "bundle"})


def resource_name_problem(name: str, own: FamilyDeclaration, others: dict[str, str]) -> str | None:
    """Why an extra resource may not be called ``name``, or None."""
    if name == own.resource_name:
        return f"extra resource {name!r} is the family's own resource: it overrides the unit count discovery gives"
    if name in RAY_RESERVED_RESOURCES or name in RAY_OWN_RESOURCES or name.startswith(RAY_RESERVED_RESOURCE_PREFIXES):
        return f"extra resource {name!r} is a name Ray reserves"
    if name in RAY_ACCELERATOR_RESOURCES:
        return f"extra resource {name!r} is the resource of one of Ray's built-in accelerator families"
    if name in others:
        return f"extra resource {name!r} is the resource of family {others[name]}"
    return None


#: Vendor-specific fabrics (link and scale-up domain kinds) -> words naming the vendor that owns them.
VENDOR_FABRICS: dict[str, tuple[str, ...]] = {
    "nvlink": ("nvidia",), "nvswitch": ("nvidia",), "nvlink-clique": ("nvidia",),
    "xgmi": ("amd",), "xgmi-hive": ("amd",),
    "ici": ("google", "tpu"), "tpu-slice": ("google", "tpu"),
    "neuronlink": ("aws", "amazon", "neuron"), "ultraserver": ("aws", "amazon", "neuron"),
    "gaudi-roce": ("intel", "habana", "gaudi"), "gaudi-scaleup": ("intel", "habana", "gaudi"),
}

#: Prefix of a constant in Ray's ``ray.util.accelerators.accelerators`` -> words naming that vendor.
RAY_ACCELERATOR_VENDORS: dict[str, tuple[str, ...]] = {
    "NVIDIA_": ("nvidia",), "AMD_": ("amd",), "INTEL_": ("intel", "habana", "gaudi"),
    "AWS_": ("aws", "amazon", "neuron"), "GOOGLE_": ("google", "tpu"), "HUAWEI_": ("huawei", "ascend"),
    "METAX_": ("metax",), "FURIOSA_": ("furiosa",), "APPLE_": ("apple",), "MOBILINT_": ("mobilint",),
}


def own_words(family: Any) -> set[str]:
    """Words that name the family's vendor or the family itself."""
    return _words(family.vendor) | {family.name, family.name.replace("-", "")} | _words(family.name)


def fabric_owner_problem(kind: str, family: Any, what: str) -> str | None:
    """Why the family may not report a link or domain of ``kind`` (another vendor's fabric), or None."""
    owners = VENDOR_FABRICS.get(kind)
    if owners is None or own_words(family) & set(owners):
        return None
    return (f"{what} kind {kind!r} is {owners[0].upper()}'s fabric, not {family.vendor}'s: report the family's own "
            "fabric as 'other' (or a generic kind: pcie, roce, infiniband, ethernet, efa)")


def well_known_accelerator_types() -> dict[str, str]:
    """Ray's well-known accelerator type names (``ray.util.accelerators``) -> the vendor's name prefix."""
    from ray.util.accelerators import accelerators

    found = {}
    for constant, value in vars(accelerators).items():
        prefix = next((p for p in RAY_ACCELERATOR_VENDORS if constant.startswith(p)), None)
        if prefix and isinstance(value, str):
            found[value.lower()] = prefix
    return found


def accelerator_type_owner_problem(accelerator_type: str, family: Any, known: dict[str, str]) -> str | None:
    """Why the family may not give this accelerator type (another vendor's well-known product), or None."""
    prefix = known.get(accelerator_type.lower())
    if prefix is None or own_words(family) & set(RAY_ACCELERATOR_VENDORS[prefix]):
        return None
    return (f"accelerator type {accelerator_type!r} is {prefix.rstrip('_')}'s product name in Ray "
            f"(ray.util.accelerators), not one of {family.vendor}'s: name the family's own product")


#: Ray's own tensor transports (``ray.experimental.rdt.util``): name -> (its manager class, the torch device
#: types Ray registers it for). A plugin declares them with ``builtin_in_ray`` for path selection only.
#: tests/conformance/test_conformance_transports.py holds this table to what Ray 2.60 registers.
RAY_TRANSPORT_CLASSES: dict[str, tuple[str, tuple[str, ...]]] = {
    "NIXL": ("ray.experimental.rdt.nixl_tensor_transport:NixlTensorTransport", ("cuda", "cpu")),
    "GLOO": ("ray.experimental.rdt.collective_tensor_transport:GLOOTensorTransport", ("cpu",)),
    "NCCL": ("ray.experimental.rdt.collective_tensor_transport:NCCLTensorTransport", ("cuda",)),
    "CUDA_IPC": ("ray.experimental.rdt.cuda_ipc_transport:CudaIpcTransport", ("cuda",)),
}

#: Vendors' collective libraries, as transport names -> words naming the vendors that ship them.
VENDOR_TRANSPORTS: dict[str, tuple[str, ...]] = {
    "RCCL": ("amd",), "HCCL": ("intel", "habana", "gaudi", "huawei", "ascend"), "NVSHMEM": ("nvidia",),
    "NCCOM": ("aws", "amazon", "neuron"), "ONECCL": ("intel",),
}


def transport_owner_problems(spec: Any, family: Any, own_package: str, others: dict[str, str]) -> list[str]:
    """Why the family may not declare transport ``spec`` (Ray's taken over, another vendor's or family's);
    ``own_package`` is the top-level package of the plugin's hooks, ``others`` another plugin's transport
    names -> that plugin."""
    name, cls = spec.name, spec.manager_class
    package = cls.split(":", 1)[0].split(".", 1)[0]
    ray_own = RAY_TRANSPORT_CLASSES.get(name)
    if ray_own is not None:
        wrong = []
        if not spec.builtin_in_ray:
            wrong.append(f"transport {name} is Ray's own transport: declared with class {cls}, it takes Ray's name "
                         "over; declare it with builtin_in_ray=True (for path selection) or give yours another name")
        elif cls != ray_own[0]:
            wrong.append(f"transport {name} is Ray's own, whose class is {ray_own[0]}, not {cls}: a builtin_in_ray "
                         "declaration names Ray's class")
        beyond = sorted(set(spec.devices) - set(ray_own[1]))
        if beyond:
            wrong.append(f"transport {name} is Ray's, which moves {', '.join(ray_own[1])} tensors only, not "
                         f"{', '.join(beyond)}: declare your devices on a transport of your own")
        return wrong
    if spec.builtin_in_ray:
        return [f"transport {name} says builtin_in_ray, but Ray's own transports are "
                f"{', '.join(RAY_TRANSPORT_CLASSES)}"]
    wrong = []
    words = {w for w in re.split(r"[^a-z0-9]+", name.lower()) if w}
    vendors = VENDOR_TRANSPORTS.get(name) or next(
        (owners for fabric, owners in VENDOR_FABRICS.items() if fabric in words), None)
    if vendors is not None and not own_words(family) & set(vendors):
        wrong.append(f"transport {name} is {vendors[0].upper()}'s, not {family.vendor}'s: name the family's own "
                     "transport after the family")
    if name in others:
        wrong.append(f"transport {name} is declared by plugin {others[name]} too: another family's transport")
    if package != own_package:
        wrong.append(f"transport {name}'s class {cls} lives in {package}, not in the plugin's own package "
                     f"{own_package}: a transport copied from another plugin moves that plugin's devices")
    return wrong
