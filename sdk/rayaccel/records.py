"""Typed records that hooks return and that the inventory is made of, and the rules they are written in.

Every hook result is validated into one of these models on return, so a malformed record is caught at
the plugin boundary with a message naming the plugin, hook and field. Models are frozen: once a record
has passed validation nothing downstream can change it behind the plugin's back.

Read top to bottom: the naming rules validators apply (resource, family and env var names, visible-devices
variables), the base record, the SKU catalog, then the records hooks return and the inventory made of them.
The vocabularies they use (link and domain kinds, health states, metric names and units) are
:mod:`rayaccel.vocabulary`'s, kept apart from pydantic so a plugin's module can use them when it is imported.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, PrivateAttr, field_validator, model_validator

from rayaccel.cpus import CpuListError, parse_cpu_list
from rayaccel.support.raycompat import RAY_BUILTIN_FAMILIES, RAY_RESOURCE_LABELS, RAY_VISIBLE_ENV_COMPANIONS
from rayaccel.support.safe_text import control_characters
from rayaccel.vocabulary import (  # named here too, beside the records that use them
    DEVICE_FILE as DEVICE_FILE,
    HEALTH_ORDER as HEALTH_ORDER,
    ID_FALLBACK as ID_FALLBACK,
    LINK_KINDS as LINK_KINDS,
    STANDARD_METRICS as STANDARD_METRICS,
    DomainKind as DomainKind,
    HealthState as HealthState,
    LinkKind as LinkKind,
    Severity as Severity,
)

RESOURCE_NAME_RE = re.compile(r"^[A-Za-z][A-Za-z0-9_]{0,62}$")
ENV_VAR_RE = re.compile(r"^[A-Z][A-Z0-9_]{0,127}$")
FAMILY_NAME_RE = re.compile(r"^[a-z][a-z0-9-]{0,31}$")
SPEC_VERSION_RE = re.compile(r"^\d+\.\d+$")
ACCELERATOR_TYPE_RE = re.compile(r"^[A-Za-z0-9]([A-Za-z0-9_.-]{0,61}[A-Za-z0-9])?$")

AttributeValue = str | int | float | bool


def _matching(regex: re.Pattern[str], why: str) -> AfterValidator:
    """A string field's check: ``regex`` must match it, else the error says ``why``."""

    def check(value: str) -> str:
        if not regex.fullmatch(value):  # `$` would take a trailing newline
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
    """Base of every record: strict about unknown fields, immutable once valid.

    Each model's validator is built at its first use (``defer_build``), not when a plugin imports
    ``rayaccel``: a plugin's import costs ~40 ms less, and the checks are the same once built
    (``tests/plugins/test_lazy_records.py`` proves every lazily built record still refuses bad input)."""

    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)


# -- SKU catalogs ---------------------------------------------------------------------------------------

#: The most memory one accelerator of a SKU may have (16 TiB): a larger number is a typo, not a product.
MAX_DEVICE_MEMORY_MIB = 16 * 1024 * 1024


#: A key of ``SkuMatch.fields``: a Device field (``memory_mib``, ``architecture``, ...) or attribute name.
SkuFieldName = Annotated[str, _matching(re.compile(r"^[a-z][a-z0-9_.]{0,62}$"),
                                        "must be a Device field or attribute name (lower-case letters, digits, "
                                        "'_', '.')")]


class SkuMatch(Record):
    pci_device_ids: list[str] = Field(default_factory=list)
    product_names: list[str] = Field(default_factory=list, description="Exact product names")
    fields: dict[SkuFieldName, str] = Field(
        default_factory=dict, description="Device fields or attributes that must all have these values, compared "
        "as text (e.g. {'model': 'X1-48G', 'memory_mib': '49152'}): for a tool that prints neither a PCI id nor "
        "a product name")
    product_patterns: list[str] = Field(default_factory=list, description="Regular expressions (search)")


class SkuRecord(Record):
    """One chip SKU, as data: what the day-zero onboarding path appends to a catalog."""

    id: str = Field(pattern=r"^[a-z0-9][a-z0-9.-]*$", description="e.g. 'h100-sxm5-80gb'")
    marketing_name: str
    accelerator_type: AcceleratorType = Field(description="Ray accelerator type for this SKU, e.g. 'H100'")
    architecture: str | None = None
    memory_mib: int | None = Field(None, ge=0, le=MAX_DEVICE_MEMORY_MIB,
                                   description="Memory of one device in MiB (2^20 bytes), e.g. 81559 for an H100 SXM5")
    interconnect: str | None = Field(None, description="The SKU's device-to-device fabric, e.g. 'nvlink4-nvswitch'; "
                                     "the node's rayaccel.io/interconnect label where its links are of kind 'other'")
    link_bandwidth_gbytes_per_s: float | None = Field(
        None, gt=0, description="The fastest device-to-device link of this SKU: unidirectional GB/s (gigabytes, not "
        "gigabits), all lanes (H100 SXM5: 450). Conformance RAC215 holds the topology's links to it")
    match: SkuMatch


class SkuCatalog(Record):
    schema_: Literal["rayaccel-sku-catalog/1"] = Field("rayaccel-sku-catalog/1", alias="schema")
    family: str
    skus: list[SkuRecord]

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    #: The file it was loaded from (set by rayaccel.catalog.load_catalog); `rayaccel sku add` appends there.
    _source_path: str | None = PrivateAttr(default=None)

    @property
    def source_path(self) -> str | None:
        return self._source_path


# -- The records hooks return ------------------------------------------------------------------------------

class QuantityRule(Record):
    """How many units of the family's resource a task or actor may ask for.

    ``fractional``: any fraction up to 1, whole numbers above (Ray's GPU rule).
    ``whole``: whole numbers only (neuron_cores, HPU).
    ``choices``: only the listed whole numbers (TPU: 1, 2, 4, 8).
    """

    kind: Literal["fractional", "whole", "choices"] = "fractional"
    choices: list[int] = Field(default_factory=list, description="Allowed quantities for kind=choices")

    @model_validator(mode="after")
    def _choices_match_kind(self) -> QuantityRule:
        if self.kind == "choices" and not self.choices:
            raise ValueError("kind 'choices' needs a non-empty 'choices' list, e.g. [1, 2, 4, 8]")
        if self.kind != "choices" and self.choices:
            raise ValueError(f"'choices' is only used with kind 'choices', not {self.kind!r}")
        return self


class SupportInfo(Record):
    """Who stands behind a plugin: what the certified tier asks a plugin to publish."""

    maintainers: list[str] = Field(default_factory=list)
    contact: str | None = Field(None, description="Where users report problems: URL or e-mail")
    license: str | None = Field(None, description="SPDX license expression")
    tested_ray_versions: list[str] = Field(default_factory=list)


#: A DNS subdomain (RFC 1123): lower-case labels joined by dots, at most 253 characters.
DNS_SUBDOMAIN_RE = re.compile(r"^(?=.{1,253}$)[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
#: The name part of a Kubernetes qualified name: at most 63 characters, alphanumeric at both ends.
QUALIFIED_NAME_PART_RE = re.compile(r"^(?=.{1,63}$)[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$")
#: A Slurm GRES name: letters, digits and '_' (Slurm splits gres.conf and Gres= on ':' ',' '=' and '(').
SLURM_GRES_RE = re.compile(r"^[A-Za-z][A-Za-z0-9_]{0,62}$")
#: A device-file pattern: an absolute /dev path holding one placeholder, {index} or {index+N}.
DEVICE_FILE_PLACEHOLDER_RE = re.compile(r"\{index(?:\+(\d{1,6}))?\}")
DEVICE_FILE_RE = re.compile(r"^/dev/(?!.*\.\.)[A-Za-z0-9_./-]*\{index(\+\d{1,6})?\}[A-Za-z0-9_./-]*$")


def _extended_resource_problem(name: str) -> str | None:
    """Why ``name`` is not a Kubernetes extended resource name (None when it is)."""
    domain, slash, part = name.partition("/")
    if not slash or not DNS_SUBDOMAIN_RE.fullmatch(domain) or not QUALIFIED_NAME_PART_RE.fullmatch(part):
        return (f"{name!r} is not a Kubernetes extended resource name: it needs a domain prefix and a name, "
                "like nvidia.com/gpu (lower-case DNS domain, '/', at most 63 letters, digits, '-', '_', '.')")
    if domain == "kubernetes.io" or domain.endswith(".kubernetes.io"):
        return (f"{name!r} is in the kubernetes.io domain, which Kubernetes reserves for its own resources; use "
                "the vendor's domain, like nvidia.com/gpu")
    return None


def expand_device_file(pattern: str, index: int) -> str:
    """``pattern`` for the device of ``index``: ``{index}`` becomes the index, ``{index+N}`` the index plus N
    (AMD render nodes: ``/dev/dri/renderD{index+128}`` is renderD128 for GPU 0)."""
    return DEVICE_FILE_PLACEHOLDER_RE.sub(lambda m: str(index + int(m.group(1) or 0)), pattern)


def _checked(check: Callable[[str], str | None]) -> AfterValidator:
    """A string field's check: ``check`` returns why the value is wrong, or None."""

    def run(value: str) -> str:
        why = check(value)
        if why:
            raise ValueError(why)
        return value

    return AfterValidator(run)


def _device_file_attribute(attributes: dict[str, AttributeValue]) -> dict[str, AttributeValue]:
    """A ``device_file`` attribute no device can have: control characters or a '..' segment in a path that
    gres.conf, a CDI spec or a container runtime takes with authority. Anything else an exporter checks
    against its own format's rules."""
    listed = attributes.get(DEVICE_FILE)
    if isinstance(listed, str):
        if control_characters(listed):
            raise ValueError(f"{DEVICE_FILE} holds control characters ({', '.join(control_characters(listed))}); "
                             "report the device's file as a plain path, like /dev/nvidia0")
        if any(".." in part.split("/") for part in listed.split(",")):
            raise ValueError(f"{DEVICE_FILE} {listed[:60]!r} has a '..' segment; report the device's file as a "
                             "plain path under /dev")
    return attributes


ExtendedResourceName = Annotated[str, _checked(_extended_resource_problem)]
DraDriverName = Annotated[str, _matching(
    re.compile(r"^(?=.{1,63}$)[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)+$"),
    "must be a DNS subdomain of at most 63 characters with at least one dot, ending in a domain the vendor owns, "
    "like gpu.nvidia.com")]
SlurmGresName = Annotated[str, _matching(SLURM_GRES_RE, "must be a Slurm GRES name: letters, digits and '_', "
                                                        "starting with a letter, like gpu")]
DeviceFilePattern = Annotated[str, _matching(DEVICE_FILE_RE, "must be an absolute /dev path with one {index} or "
                                                             "{index+N} placeholder, like /dev/nvidia{index}")]

#: A placeholder of a partition resource pattern: ``{profile}``, or ``{<attribute>}`` of the partition or its device.
PARTITION_PLACEHOLDER_RE = re.compile(r"\{([a-z_][a-z0-9_]*)\}")


def _partition_resource_pattern_problem(pattern: str) -> str | None:
    """Why ``pattern`` cannot name partition profiles' Kubernetes resources (None when it can)."""
    # A device plugin may name partitions by attributes instead of the profile (AMD's mixed naming is the
    # compute and memory partition modes, while the profile also carries the partition's size).
    if not PARTITION_PLACEHOLDER_RE.search(pattern):
        return (f"{pattern!r} has no placeholder: each profile needs a resource of its own, like "
                "nvidia.com/mig-{profile} or amd.com/{compute_partition}_{memory_partition}")
    filled = PARTITION_PLACEHOLDER_RE.sub("x", pattern)
    if "{" in filled or "}" in filled:
        return f"{pattern!r}: a placeholder is {{profile}} or {{<attribute name>}} (lower-case letters, digits, '_')"
    return _extended_resource_problem(filled)


KubernetesPartitionResource = Annotated[str, _checked(_partition_resource_pattern_problem)]


class SchedulerNames(Record):
    """What cluster schedulers call a family's devices, which discovery cannot find out.

    ``rayaccel export`` reads these; a field left None means the family declares no such name, and a
    format that needs it (``kuberay`` and ``dra`` need ``kubernetes_resource`` and ``dra_driver``, ``slurm``
    needs ``slurm_gres``) refuses the family with one line naming the field. ``device_files`` are the
    character devices of one discovered device: ``{index}`` is its ``Device.index`` and ``{index+N}`` that
    index plus N, e.g. ``/dev/dri/renderD{index+128}``. ``kubernetes_partition_resource`` names what a
    ``kuberay`` pod asks for to get one partition of a profile."""

    kubernetes_resource: ExtendedResourceName | None = Field(
        None, description="Kubernetes extended resource name the family's device plugin advertises, e.g. "
        "'nvidia.com/gpu'")
    dra_driver: DraDriverName | None = Field(
        None, description="Kubernetes DRA driver name (DNS subdomain, <= 63), e.g. 'gpu.nvidia.com'")
    slurm_gres: SlurmGresName | None = Field(None, description="Slurm GRES name, e.g. 'gpu'")
    device_files: list[DeviceFilePattern] = Field(
        default_factory=list, description="Device-file patterns of one device, e.g. ['/dev/nvidia{index}']")
    kubernetes_partition_resource: KubernetesPartitionResource | None = Field(
        None, description="The Kubernetes extended resource of one partition profile, as the family's device plugin "
        "names it: '{profile}' is the profile, '{<name>}' the partition's (else its device's) attribute of that "
        "name, lower-cased; e.g. 'nvidia.com/mig-{profile}' (NVIDIA's mixed MIG strategy) or "
        "'amd.com/{compute_partition}_{memory_partition}' (AMD's mixed naming, amd.com/cpx_nps4). None: "
        "'<kubernetes_resource>-{profile}'")


class ReasonCode(Record):
    """One health reason code a plugin reports, as it classifies it: what operators' health policies name
    (rayaccel.inventory.health_policy) and the plugin's docs list."""

    code: str = Field(min_length=1, max_length=63, pattern=r"^[a-z0-9][a-z0-9*-]*$",
                      description="The code, e.g. 'xid-79'; '*' stands for a number or word (xid-*: any other XID)")
    state: HealthState = Field(description="The device's health while the reason is reported")
    fatal: bool = Field(False, description="True when it drains the device (HealthReason.fatal)")
    meaning: str = Field(min_length=1, description="What it means for the device, in a sentence")

    @classmethod
    def table(cls, rows: Iterable[tuple[str, str, bool, str]]) -> list[ReasonCode]:
        """The reason codes of a table a plugin keeps beside the code that reports them, one ``(code, state,
        fatal, meaning)`` row each: what ``FamilyDeclaration.health_reasons`` takes."""
        return [cls(code=code, state=state, fatal=fatal, meaning=meaning)
                for code, state, fatal, meaning in rows]


class FamilyDeclaration(Record):
    """What a plugin is: one accelerator family and how Ray should see it."""

    name: FamilyName = Field(description="Family name, lower-case, e.g. 'nvidia'")
    vendor: str = Field(description="Vendor as people write it, e.g. 'NVIDIA'")
    resource_name: ResourceName = Field(description="Ray resource name, e.g. 'GPU' or 'neuron_cores'")
    visible_devices_env_var: EnvVarName = Field(description="Env var that selects devices, e.g. CUDA_VISIBLE_DEVICES")
    quantity_rule: QuantityRule = Field(default_factory=QuantityRule)
    spec_version: SpecVersion = Field(description="rayaccel hook-spec version the plugin was written for, e.g. '1.0'")
    unit: Literal["device", "core", "chip", "partition"] = Field(
        "device", description="What one unit of the resource is")
    support: SupportInfo = Field(default_factory=SupportInfo)
    ray_labels: list[str] = Field(
        default_factory=list, description="Ray's own node labels (ray.io/...) the family sets, as Ray's manager for "
        "its resource does (TPU: ray.io/tpu-slice-name, ...); any other ray.io/ label a plugin returns is dropped")
    schedulers: SchedulerNames = Field(
        default_factory=SchedulerNames, description="Names Kubernetes, DRA and Slurm give the family's devices "
        "(rayaccel export)")
    health_reasons: list[ReasonCode] = Field(
        default_factory=list, description="Every reason code the plugin's health hook reports and how it classifies "
        "it: the table operators write health policies from")
    visible_env_companions: list[EnvVarName] = Field(
        default_factory=list, description="Variables rayaccel_visible_env sets beside visible_devices_env_var, each "
        "the runtime's own device selection for the units given (TPU: TPU_CHIPS_PER_HOST_BOUNDS, TPU_HOST_BOUNDS, "
        "as Ray's manager writes them); the SDK sets no other key a plugin's visible env returns")

    @model_validator(mode="after")
    def _env_var_is_the_familys_own(self) -> FamilyDeclaration:
        why = visible_env_problem(self.visible_devices_env_var, self.resource_name)
        if why:
            raise ValueError(f"visible_devices_env_var {why}")
        return self

    def _rays_companions(self) -> tuple[str, ...] | None:
        """What Ray's manager writes beside the family's variable where the (resource, variable) pair is Ray's own
        (none for most managers); None for a day-zero family."""
        return next((RAY_VISIBLE_ENV_COMPANIONS.get(manager, ()) for manager, pair in RAY_BUILTIN_FAMILIES.items()
                     if pair == (self.resource_name, self.visible_devices_env_var)), None)

    @model_validator(mode="after")
    def _companions_select_devices(self) -> FamilyDeclaration:
        rays = self._rays_companions()
        for name in self.visible_env_companions:
            if name == self.visible_devices_env_var:
                raise ValueError(f"visible_env_companions: {name} is the family's visible_devices_env_var itself")
            if rays is not None and name not in rays:
                raise ValueError(f"visible_env_companions: {name} is not a variable Ray's manager for "
                                 f"{self.resource_name} with {self.visible_devices_env_var} writes beside it (it "
                                 f"writes {', '.join(rays) or 'none'})")
            why = visible_env_problem(name, self.resource_name) if rays is None else None
            if why:
                raise ValueError(f"visible_env_companions {why}")
        return self

    @property
    def visibility_variables(self) -> tuple[str, ...]:
        """Every variable the family's visibility sets for a task: its visible-devices variable and its companions.
        For a pair Ray owns, what Ray's manager writes beside the variable, declared or not: a plugin written before
        ``visible_env_companions`` existed that sets TPU's sub-host bounds as Ray does keeps them."""
        rays = self._rays_companions()
        if rays is not None:
            return (self.visible_devices_env_var, *rays)
        return (self.visible_devices_env_var, *self.visible_env_companions)

    @model_validator(mode="after")
    def _ray_labels_are_rays_for_the_resource(self) -> FamilyDeclaration:
        allowed = RAY_RESOURCE_LABELS.get(self.resource_name, ())
        foreign = [key for key in self.ray_labels if key not in allowed]
        if foreign:
            raise ValueError(f"ray_labels: {', '.join(foreign)} is not a label Ray sets for resource "
                             f"{self.resource_name!r} (Ray sets {', '.join(allowed) or 'none'})")
        return self


#: A partition kind: lower-case words joined by '-' ('mig', 'compute-partition', 'logical-core').
PARTITION_KIND_RE = re.compile(r"^[a-z][a-z0-9]*(-[a-z0-9]+)*$")


def partition_resource_name(resource_name: str, kind: str, profile: str) -> str:
    """The Ray resource of one partition profile: ``<resource>_<KIND>_<profile>``, the kind upper-cased with
    '-' as '_' (``GPU_MIG_1g.10gb``, ``GPU_COMPUTE_PARTITION_cpx.1xcd.24gb``). Ray 2.60 takes '.' and '-' in resource
    names; the profile keeps its vendor spelling so users write what ``nvidia-smi`` prints."""
    return f"{resource_name}_{kind.upper().replace('-', '_')}_{profile}"


class PartitionCapacity(Record):
    """How many slices a partitionable device has in all (A100/H100: 7 compute, 8 memory), so the sizes of
    its partitions can be checked against it."""

    compute_slices: int = Field(ge=1, description="Compute slices of the whole device, e.g. 7 on an A100")
    memory_slices: int = Field(ge=1, description="Memory slices of the whole device, e.g. 8 on an A100")


class Partition(Record):
    """An isolated slice of a device that is scheduled on its own: a MIG instance, an AMD compute partition,
    a Neuron logical core. A device with partitions is offered only as its partitions, never whole."""

    id: str = Field(min_length=1, description="The id the vendor runtime accepts in the family's visible-devices "
                    "variable, e.g. 'MIG-<uuid>' (CUDA_VISIBLE_DEVICES) or an AMD logical GPU index")
    kind: Annotated[str, _matching(PARTITION_KIND_RE, "must be lower-case words joined by '-', e.g. 'mig' or "
                                                      "'compute-partition'")] = Field(
        description="What kind of slice, e.g. 'mig', 'compute-partition', 'logical-core'")
    profile: AcceleratorType = Field(description="The vendor's profile name, e.g. '1g.10gb' or 'cpx.1xcd.24gb' (a "
                                     "valid Ray label value: it names the partition's Ray resource and label)")
    compute_slices: int | None = Field(None, ge=1, description="Compute slices it takes, e.g. 1 for '1g.10gb'")
    memory_slices: int | None = Field(None, ge=1, description="Memory slices it takes, e.g. 1 for '1g.10gb' on "
                                      "an A100 80GB")
    memory_mib: int | None = Field(None, ge=0, description="The partition's memory in MiB (2^20 bytes)")
    shared_memory: str | None = Field(
        None, min_length=1, description="Names the memory it shares with other partitions of its device, where it "
        "has none of its own (a MIG compute instance: its GPU instance's, e.g. 'gpu-instance-2'); the partitions "
        "naming one share it, so their memory is counted once")
    attributes: Annotated[dict[str, AttributeValue], AfterValidator(_device_file_attribute)] = Field(
        default_factory=dict, description="Vendor extras, e.g. MIG's gpu_instance_id")


class Device(Record):
    """One accelerator device as discovery found it."""

    index: int = Field(ge=0, description="Index in the vendor's own enumeration")
    id: str = Field(min_length=1, description="Stable id: UUID or serial, unique on the host")
    # Empty, not None, where the tool prints no name: every consumer reads a str (a plugin's mypy stays clean).
    product_name: str = Field(
        "", description="Name as the vendor interface reports it; empty where the tool prints none (its SKU is "
        "then matched by the fields it does print: SkuMatch.fields)")
    pci_device_id: str | None = Field(None, description="PCI device id as 0x-prefixed lower-case hex")
    sku: str | None = Field(None, description="SKU id from the plugin's catalog; the SDK fills it when known")
    memory_mib: int | None = Field(None, ge=0, description="Device memory in MiB (2^20 bytes); the SDK fills it "
                                   "from the catalog's SKU when discovery reports none")
    pci_bus_id: str | None = None
    numa_node: int | None = None
    architecture: str | None = None
    driver_version: str | None = None
    runtime_version: str | None = None
    units: list[str] = Field(default_factory=list,
                             description="Ids of the schedulable units this device provides; default [index]")
    partitions: list[Partition] = Field(
        default_factory=list, description="Its partitions (MIG instances, ...): a device with any is offered only "
        "as them, each profile as its own Ray resource; without any it is offered whole")
    partition_capacity: PartitionCapacity | None = Field(
        None, description="Its slices in all, when it can be partitioned: the partitions' slices add up to no more")
    attributes: Annotated[dict[str, AttributeValue], AfterValidator(_device_file_attribute)] = Field(
        default_factory=dict)

    @field_validator("pci_device_id")
    @classmethod
    def _pci_id(cls, v: str | None) -> str | None:
        if v is None:
            return v
        if not re.fullmatch(r"0x[0-9a-f]{4}", v):
            raise ValueError("must be 0x followed by 4 lower-case hex digits, e.g. '0x2330'")
        return v

    @model_validator(mode="after")
    def _partitions_fit(self) -> Device:
        ids = [p.id for p in self.partitions]
        repeated = sorted({i for i in ids if ids.count(i) > 1})
        if repeated:
            raise ValueError(f"partitions: id {', '.join(repeated)} is given to more than one partition; each "
                             "partition needs its own id (the one its runtime accepts, e.g. MIG-<uuid>)")
        if self.id in ids:  # the device's health drains every partition, a partition's only itself: one id, two things
            raise ValueError(f"partitions: id {self.id} is the device's own id; a partition needs an id of its own "
                             "(the one its runtime accepts, e.g. MIG-<uuid>) and the device one no partition has")
        capacity = self.partition_capacity
        if capacity is not None:
            for field, total in (("compute_slices", capacity.compute_slices),
                                 ("memory_slices", capacity.memory_slices)):
                used = sum(getattr(p, field) or 0 for p in self.partitions)
                if used > total:
                    raise ValueError(f"partitions: their {field} add up to {used}, more than the device's "
                                     f"{total} (partition_capacity.{field}); report the partitions the device has")
        return self

    def partition_memory_mib(self) -> list[int]:
        """The memory of its partitions, each memory once: a partition's own, and once for each memory several
        share (``Partition.shared_memory``: NVIDIA's compute instances of one GPU instance each state its memory)."""
        shared: dict[str, int] = {}
        own = []
        for p in self.partitions:
            if p.memory_mib is None:
                continue
            if p.shared_memory is None:
                own.append(p.memory_mib)
            else:
                shared[p.shared_memory] = max(shared.get(p.shared_memory, 0), p.memory_mib)
        return own + list(shared.values())

    @property
    def unit_ids(self) -> list[str]:
        return self.units or [str(self.index)]

    @property
    def partitioned(self) -> bool:
        """Offered as its partitions, not whole."""
        return bool(self.partitions)


class Link(Record):
    """A connection between two devices on this host (undirected)."""

    a: str = Field(description="Device id of one end")
    b: str = Field(description="Device id of the other end")
    kind: LinkKind
    bandwidth_gbps: float | None = Field(
        None, ge=0, description="Unidirectional bandwidth in GB/s: gigabytes (not gigabits) per second, all lanes "
        "together (H100 SXM5: 18 NVLink 4 links x 25 GB/s = 450). A tool printing Gbit/s is divided by 8; "
        "conformance RAC215 compares it with the catalog's link_bandwidth_gbytes_per_s")
    lanes: int = Field(1, ge=1, description="Number of parallel links of this kind")


def _cpu_list_problem(value: str) -> str | None:
    try:
        parse_cpu_list(value)
    except CpuListError as e:
        return f"not a Linux CPU list such as 0-47,96-143: {e}"
    return None


class Affinity(Record):
    """Where a device sits relative to CPUs and NICs."""

    device: str
    numa_node: int | None = None
    cpus: Annotated[str, _checked(_cpu_list_problem)] | None = Field(
        None, description="CPU list as the kernel writes one, e.g. '0-47,96-143' (rayaccel.format_cpu_list); "
        "text in no form the kernel's parser takes is refused (rayaccel.parse_cpu_list)")
    nics: list[str] = Field(default_factory=list)


class Domain(Record):
    """A scale-up domain: devices (maybe on several hosts) joined by the fast fabric."""

    kind: DomainKind
    id: str = Field(min_length=1)
    size: int = Field(ge=1, description="Devices (or hosts, for slices) in the whole domain")
    members: list[str] = Field(default_factory=list, description="Device ids on this host")
    host_index: int | None = Field(None, ge=0, description="This host's place in a multi-host domain")
    hosts: int | None = Field(None, ge=1, description="Hosts in the whole domain")


class Topology(Record):
    links: list[Link] = Field(default_factory=list)
    affinities: list[Affinity] = Field(default_factory=list)
    domains: list[Domain] = Field(default_factory=list)


class ResourceContribution(Record):
    """What a family adds to Ray's resources beyond its unit count."""

    accelerator_type: AcceleratorType | None = Field(None, description="Ray accelerator type, e.g. 'H100'")
    no_accelerator_type: bool = Field(
        False, description="The node has no Ray accelerator type (as Ray reports none, e.g. a TPU whose pod "
                           "type is unknown): no accelerator_type:* resource, no ray.io/accelerator-type label, "
                           "unless the SKU catalog knows the device")
    extra: dict[str, float] = Field(default_factory=dict, description="e.g. {'TPU-v5p-16-head': 1}")

    @model_validator(mode="after")
    def _one_answer(self) -> ResourceContribution:
        if self.no_accelerator_type and self.accelerator_type is not None:
            raise ValueError("set accelerator_type or no_accelerator_type, not both")
        return self


class HealthReason(Record):
    code: str = Field(min_length=1, description="Machine-readable, e.g. 'xid-79', 'ecc-uncorrectable'")
    message: str
    fatal: bool = Field(False, description="True when the node should be drained")


class HealthReport(Record):
    device: str = Field(description="Device id")
    state: HealthState
    reasons: list[HealthReason] = Field(default_factory=list)

    def drains(self, reason: HealthReason) -> bool:
        """Whether ``reason`` drains the device: a fatal reason of an unhealthy report. The SDK drains (cordons,
        leaves out of the resources, taints) only an unhealthy device, so a fatal reason on a device reported
        otherwise drains nothing, and what publishes the reason says so."""
        return reason.fatal and self.state == "unhealthy"


class MetricSample(Record):
    device: str
    name: str
    unit: str
    value: float

    @model_validator(mode="after")
    def _standard(self) -> MetricSample:
        expected = STANDARD_METRICS.get(self.name)
        if expected is None and not self.name.startswith("vendor."):
            raise ValueError(f"unknown metric {self.name!r}: use one of {sorted(STANDARD_METRICS)} "
                             "or prefix vendor-specific metrics with 'vendor.'")
        if expected is not None and self.unit != expected:
            raise ValueError(f"metric {self.name!r} must be in {expected!r}, not {self.unit!r}")
        return self


class TransportSpec(Record):
    """A tensor transport the family offers to Ray Direct Transport."""

    name: str = Field(pattern=r"^[A-Z][A-Z0-9_]*$", description="e.g. 'NCCL'")
    devices: list[str] = Field(min_length=1, description="Torch device types it moves, e.g. ['cuda']")
    link_kinds: list[LinkKind] = Field(default_factory=list)
    one_sided: bool = False
    manager_class: str = Field(pattern=r"^[\w.]+:[\w.]+$",
                               description="'module:Class' of a ray.experimental.TensorTransportManager subclass")
    builtin_in_ray: bool = Field(False, description="Ray already registers it (NCCL, NIXL, GLOO, CUDA_IPC)")
    # Ray's TensorTransportManager has no such capability (CUDA_IPC only refuses another node at receive time),
    # so the declaration says it: path selection and RAC311 need to know before a transfer fails.
    reach: Literal["cluster", "node"] = Field(
        "cluster", description="Where it moves tensors: 'cluster' (between nodes too) or 'node' (between processes "
                               "of one node only, e.g. shared memory or CUDA IPC): never offered between two nodes")
    # Filled by the SDK where the plugin's code runs (its worker), never by the plugin: path selection and the
    # outputs read it from the record instead of importing the plugin's class where they run.
    moved_device_types: list[str] | None = Field(
        None, description="What the manager class's moved_device_types() answers (the SDK's shared-memory class: "
                          "['cpu'] while its memory steps are its own), asked by the SDK where the plugin runs; None: "
                          "not asked, or no answer (the declared devices stand). A plugin's own value is dropped")


#: A performance figure's value: finite and not negative (a time in ms, a bandwidth in MB/s).
FigureValue = Annotated[float, Field(ge=0, allow_inf_nan=False)]


class PerformanceBaseline(Record):
    """The plugin's own reference performance figures (``rayaccel_performance_baseline``): the conformance suite
    holds a run's figures to them when no previous report is given (RAC310)."""

    hardware: Literal["simulated", "real"] = Field(
        description="The run these figures are for: 'simulated' (the plugin's first fixture) or 'real' "
                    "(--conformance-hardware real on the family's hardware)")
    figures: dict[str, FigureValue] = Field(
        min_length=1, description="Figure name, as the report names it ('inventory build', 'node start', "
                                  "'transport ACME_SHM latency', ...) -> its value in the figure's unit (ms, MB/s)")
    tolerance_percent: float = Field(50.0, ge=0, le=1000, allow_inf_nan=False,
                                     description="How much worse than its value a figure may be before RAC310 "
                                                 "fails (a time also by more than 2 ms)")


class CollectiveBackend(Record):
    """A collective backend the family offers to ``ray.util.collective`` (``create_collective_group(...,
    backend=name)``), registered by the bridge in every driver and worker of a rayaccel node."""

    name: str = Field(pattern=r"^[A-Z][A-Z0-9_]*$", description="The backend= name, e.g. 'ACME_CCL'")
    group_class: str = Field(pattern=r"^[\w.]+:[\w.]+$",
                             description="'module:Class' of a ray.util.collective BaseGroup subclass")
    devices: list[str] = Field(min_length=1, description="Torch device types of the tensors it reduces, e.g. ['cpu']")


class CloudHint(Record):
    """Accelerators a cloud instance type carries, for autoscalers that scale from zero."""

    provider: Literal["aws", "gcp", "azure", "oci", "other"]
    instance_type: str
    family: str
    count: float = Field(ge=0, description="Units of the family's resource")
    accelerator_type: str | None = None
    extra_resources: dict[str, float] = Field(default_factory=dict)


class Problem(Record):
    """Something that went wrong, attributed to the plugin (and hook) responsible."""

    plugin: str
    distribution: str | None = None
    hook: str | None = None
    severity: Severity = "error"
    code: str
    message: str
    fix: str | None = None

    def render(self) -> str:
        where = self.plugin + (f" ({self.distribution})" if self.distribution else "")
        hook = f" in {self.hook}" if self.hook else ""
        text = f"{self.severity}: plugin {where}{hook}: {self.message}"
        return text + (f"\n  fix: {self.fix}" if self.fix else "")


class WorkerNeeds(Record):
    """What a process of the node needs to use a family's units, computed once by the inventory builder so
    that every output (a Ray node's env, its workers' registry) reads it instead of calling the plugin."""

    #: The plugin implements rayaccel_parse_visible / rayaccel_visible_env (its own env syntax).
    custom_parse: bool = False
    custom_env: bool = False
    #: The env that makes a process see exactly the family's schedulable units (rayaccel_visible_env).
    visible_env: dict[str, str] = Field(default_factory=dict)
    #: The collective backends the plugin declares (rayaccel_collective_backends): every worker registers them.
    collective_backends: list[CollectiveBackend] = Field(default_factory=list)


#: What an operator's health policy (rayaccel.inventory.health_policy) did with one reason a device reported:
#: ``drain`` (out of scheduling), ``degrade`` (kept scheduling, labelled and counted), ``ignore``, or ``count``
#: (a ``drain-after`` rule still counting occurrences: scheduling kept meanwhile).
PolicyAction = Literal["drain", "degrade", "ignore", "count"]


class HealthDecision(Record):
    """One reason of one device, as the node's health policy acted on it (computed by the SDK, not a plugin)."""

    device: str
    code: str = Field(description="The reason's code, as the plugin reported it")
    rule: str = Field(description="The policy's rule for it ('drain', 'drain-after', 'degrade', 'ignore'), or "
                                  "'plugin': no rule, the plugin's own classification")
    action: PolicyAction
    occurrences: int = Field(1, ge=0, description="Occurrences within the rule's window (1 without a window)")
    message: str = ""


class FamilyInventory(Record):
    """One family's part of a node's inventory."""

    family: FamilyDeclaration
    plugin: str
    devices: list[Device]
    topology: Topology
    health: list[HealthReport]
    accelerator_type: str | None
    sku_known: bool
    resources: dict[str, float]
    schedulable_units: list[str] = Field(description="Unit ids of healthy devices, best-connected first")
    labels: dict[str, str]
    metrics: list[MetricSample] = Field(default_factory=list)
    worker: WorkerNeeds = Field(default_factory=WorkerNeeds)
    partition_units: dict[str, list[str]] = Field(
        default_factory=dict, description="The Ray resource of each partition profile (partition_resource_name, "
        "e.g. 'GPU_MIG_1g.10gb') -> the ids of its partitions that take work, for the family's visible-devices "
        "variable")
    decisions: list[HealthDecision] = Field(
        default_factory=list, description="What the node's health policy did with each reason its devices report "
        "(empty without a policy)")


class IdleFamily(Record):
    """An active plugin that found no devices on this node: its declaration and what workers need, so an
    output (a Ray node registering every installed family with its workers) reads it here, not from the plugin."""

    plugin: str
    family: FamilyDeclaration
    worker: WorkerNeeds = Field(default_factory=WorkerNeeds)


class NodeInventory(Record):
    """Everything the SDK learned about one node: the input to every output (Ray, exporters, reports)."""

    host: str
    simulated: bool
    families: list[FamilyInventory]
    resources: dict[str, float]
    labels: dict[str, str]
    problems: list[Problem]
    #: The active plugins without devices here (not part of what ``rayaccel inspect`` shows).
    idle: list[IdleFamily] = Field(default_factory=list)

    def family(self, name: str) -> FamilyInventory | None:
        return next((f for f in self.families if f.family.name == name), None)
