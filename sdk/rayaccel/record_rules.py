"""The base of every record, the vocabularies records are written in (link and domain kinds, health states,
metric names and units) and the naming rules their validators apply (resource, family and env var names,
visible-devices variables). :mod:`rayaccel.records` re-exports all of it."""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict

from rayaccel.raycompat import RAY_BUILTIN_FAMILIES

#: Link kinds a topology may use. ``other`` exists so a new interconnect can be reported before the
#: vocabulary grows, rather than mislabelled as one of the others.
LinkKind = Literal[
    "nvlink", "nvswitch", "xgmi", "ici", "neuronlink", "pcie", "roce", "infiniband", "efa",
    "ethernet", "gaudi-roce", "other",
]
LINK_KINDS: tuple[str, ...] = LinkKind.__args__  # type: ignore[attr-defined]

#: Scale-up domain kinds: a set of devices, possibly across hosts, joined by the fast fabric.
DomainKind = Literal["nvlink-clique", "nvswitch", "xgmi-hive", "tpu-slice", "ultraserver", "neuronlink",
                     "gaudi-scaleup", "other"]

HealthState = Literal["healthy", "degraded", "unhealthy", "unknown"]
HEALTH_ORDER: dict[str, int] = {"healthy": 0, "unknown": 1, "degraded": 2, "unhealthy": 3}

#: Device attribute a plugin sets when the vendor interface gave no stable id (no UUID, only a PCI id) and
#: the device is offered under a fallback id; its value says why. The SDK reports it as a warning problem.
ID_FALLBACK = "id_fallback"

Severity = Literal["error", "warning", "info"]

#: Standard metric names and the one unit each must be reported in.
STANDARD_METRICS: dict[str, str] = {
    "utilization": "percent",
    "memory_used": "bytes",
    "memory_total": "bytes",
    "power": "watts",
    "temperature": "celsius",
    "interconnect_tx": "bytes_per_second",
    "interconnect_rx": "bytes_per_second",
    "ecc_errors_corrected": "count",
    "ecc_errors_uncorrected": "count",
}

RESOURCE_NAME_RE = re.compile(r"^[A-Za-z][A-Za-z0-9_]{0,62}$")
ENV_VAR_RE = re.compile(r"^[A-Z][A-Z0-9_]{0,127}$")
FAMILY_NAME_RE = re.compile(r"^[a-z][a-z0-9-]{0,31}$")
SPEC_VERSION_RE = re.compile(r"^\d+\.\d+$")
ACCELERATOR_TYPE_RE = re.compile(r"^[A-Za-z0-9]([A-Za-z0-9_.-]{0,61}[A-Za-z0-9])?$")

AttributeValue = str | int | float | bool


def _matching(regex: re.Pattern[str], why: str) -> AfterValidator:
    """A string field's check: ``regex`` must match it, else the error says ``why``."""

    def check(value: str) -> str:
        if not regex.match(value):
            raise ValueError(why)
        return value

    return AfterValidator(check)


FamilyName = Annotated[str, _matching(FAMILY_NAME_RE, "must be lower-case letters, digits and '-', starting with a "
                                                      "letter (<= 32)")]
ResourceName = Annotated[str, _matching(RESOURCE_NAME_RE, "must start with a letter and hold only letters, digits "
                                                          "and '_' (<= 63)")]
EnvVarName = Annotated[str, _matching(ENV_VAR_RE, "must be upper-case letters, digits and '_', starting with a letter")]
SpecVersion = Annotated[str, _matching(SPEC_VERSION_RE, "must be MAJOR.MINOR, e.g. '1.0'")]
AcceleratorType = Annotated[str, _matching(ACCELERATOR_TYPE_RE, "must be a valid Ray label value (letters, digits, "
                                                                "'-', '_', '.'; <= 63)")]

#: Variables a family's visible-devices variable must never be: rayaccel sets it per task, so one of
#: these would break the worker (PATH, LD_PRELOAD, PYTHONPATH, RAY_ADDRESS, OMP_NUM_THREADS, ...) or hide
#: another vendor's devices (ROCR_VISIBLE_DEVICES, ...). A variable of Ray's own table is allowed only
#: with its resource (the plugin takes that Ray family over: GPU with CUDA_VISIBLE_DEVICES). The vendor
#: template (templates/vendor-plugin/rayaccel_vendor_template.py) refuses the same list.
DENIED_ENV_VARS = frozenset({
    "PATH", "HOME", "USER", "SHELL", "PWD", "TMPDIR", "LANG", "TERM", "HOSTNAME", "IFS", "PS1", "TZ", "DISPLAY",
    "CUDA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES", "GPU_DEVICE_ORDINAL",
    "ZE_AFFINITY_MASK", "ONEAPI_DEVICE_SELECTOR", "NEURON_RT_VISIBLE_CORES", "HABANA_VISIBLE_MODULES",
    "HABANA_VISIBLE_DEVICES", "TPU_VISIBLE_CHIPS", "ASCEND_RT_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES",
})
DENIED_ENV_PREFIXES = ("LD_", "DYLD_", "PYTHON", "RAY_", "OMP_", "MKL_", "OPENBLAS_", "CUDA_", "NCCL_", "ROCM_",
                       "HSA_", "XLA_", "TPU_", "NEURON_", "HABANA_", "LC_", "XDG_", "SSH_", "GRPC_", "MALLOC_")


def visible_env_problem(env_var: str, resource_name: str) -> str | None:
    """Why ``env_var`` cannot select a family's devices (None when it can)."""
    if (resource_name, env_var) in RAY_BUILTIN_FAMILIES.values() and not env_var.startswith("RAY_"):
        return None  # Ray's own pair, taken over as a whole
    if env_var in DENIED_ENV_VARS or env_var.startswith(DENIED_ENV_PREFIXES):
        return (f"{env_var} is a well-known process, runtime or other vendor's variable (PATH, LD_*, PYTHON*, "
                "RAY_*, OMP_*, CUDA_VISIBLE_DEVICES, ROCR_VISIBLE_DEVICES, ...): rayaccel sets this variable for "
                "every task, so it must be the family's own, e.g. ACME_VISIBLE_DEVICES")
    return None


class Record(BaseModel):
    """Base of every record: strict about unknown fields, immutable once valid."""

    model_config = ConfigDict(extra="forbid", frozen=True)
