"""The rayaccel hook specification: the one extension point a vendor implements.

A plugin is a module (or object) registered under the ``rayaccel`` entry-point group. It declares one
accelerator family with :func:`rayaccel_family` and implements whichever other hooks its hardware
supports. The SDK calls each hook **once per plugin** (never as a broadcast whose results get mixed) and
validates the result into the record named in the spec, so a plugin only ever answers for its own family.

Every hook that reads the machine receives a :class:`rayaccel.hosts.seam.Host` and must read through it alone:
that is what lets the same plugin run on real hardware and on a simulated host recorded from it.

Hooks are grouped by capability, in the order the inventory calls them.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, TypeVar

import pluggy

# The records are annotations here, and the result types are written as text: a plugin's `hookimpl` imports this
# module, and the records (pydantic) load only when a hook's answer is validated (HookInfo.result, annotation_names).
if TYPE_CHECKING:
    from rayaccel.hosts.seam import Host
    from rayaccel.records import (
        CloudHint,
        CollectiveBackend,
        Device,
        FamilyDeclaration,
        FamilyInventory,
        HealthReport,
        MetricSample,
        PerformanceBaseline,
        ResourceContribution,
        SkuCatalog,
        SkuRecord,
        Topology,
        TransportSpec,
    )

PROJECT_NAME = "rayaccel"

#: Version of this spec. A plugin declares the version it was written for in its family declaration;
#: the manager refuses a plugin whose MAJOR differs, and accepts any MINOR (minor versions only add hooks).
SPEC_VERSION = "1.2"

hookspec = pluggy.HookspecMarker(PROJECT_NAME)
hookimpl = pluggy.HookimplMarker(PROJECT_NAME)


@dataclass(frozen=True)
class HookInfo:
    """What the SDK does with one hook's answer, declared beside the hook's spec (:func:`spec`): the manager
    validates every answer from this, and docs/hooks.md is generated from it."""

    name: str
    #: The type the answer is validated into (a record, a list of records, a dict, ... or None), written as an
    #: annotation of the records' names (``"list[Device]"``); :attr:`result` is that type.
    result_annotation: str
    #: The answer the SDK uses when the plugin does not implement the hook or its call failed: a function
    #: of the call's arguments and ``family`` (the plugin's declaration).
    default: Callable[..., Any]
    #: What to tell a plugin whose answer does not validate.
    fix: str
    #: Every plugin must implement it.
    required: bool = False

    @functools.cached_property
    def result(self) -> Any:
        """The type the answer is validated into (importing the records at the first call)."""
        return eval(self.result_annotation, {"Any": Any}, annotation_names())  # our own constant annotation


def annotation_names() -> dict[str, Any]:
    """The names the spec's annotations use (the records and ``Host``), for evaluating them:
    ``typing.get_type_hints(hookspec.rayaccel_discover, localns=hookspec.annotation_names())``."""
    from rayaccel import records
    from rayaccel.hosts import seam

    return {**vars(records), "Host": seam.Host}


#: Every hook's metadata, by hook name, in the order of the spec.
HOOKS: dict[str, HookInfo] = {}


def _no_answer(**_: Any) -> None:
    """`None`"""
    return None


def _empty(factory: Callable[[], Any] | str, shown: str) -> Callable[..., Any]:
    """A default answer: ``factory()``, or a new record of the class named ``factory``."""

    def default(**_: Any) -> Any:
        if isinstance(factory, str):
            from rayaccel import records

            return getattr(records, factory)()
        return factory()

    default.__doc__ = f"`{shown}`"
    return default


def _comma_split(value: str, **_: Any) -> list[str]:
    """the value split on commas"""
    return [part.strip() for part in value.split(",") if part.strip()]


def _visible_devices_env_var_only(unit_ids: Sequence[str], family: FamilyDeclaration, **_: Any) -> dict[str, str]:
    """`{<visible-devices env var>: ",".join(unit_ids)}`"""
    return {family.visible_devices_env_var: ",".join(unit_ids)}


def spec(result: str, *, fix: str, default: Callable[..., Any] = _no_answer,
         required: bool = False) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Declare a hook: its pluggy spec (one answer per call: the SDK calls each plugin on its own) and its
    :class:`HookInfo` (``result``: the answer's type as an annotation, e.g. ``"list[Device]"``)."""

    def declare(fn: Callable[..., Any]) -> Callable[..., Any]:
        name = fn.__name__
        HOOKS[name] = HookInfo(name=name, result_annotation=result, default=default, required=required,
                               fix=fix)
        return hookspec(firstresult=True)(fn)

    return declare


# --------------------------------------------------------------------------------------------------
# Family declaration


@spec("FamilyDeclaration", fix="return rayaccel.FamilyDeclaration(...)", required=True)
def rayaccel_family() -> FamilyDeclaration | dict[str, Any]:
    """Declare the accelerator family this plugin supports. **Required.**

    Called once when the plugin is loaded; the result is validated into
    :class:`~rayaccel.records.FamilyDeclaration`. A plugin written for another major spec version, or
    whose resource name or env var collides with another plugin's, is refused with a problem record.

    :returns: the family name, vendor, Ray resource name, visible-devices env var, request-quantity rule,
        the spec version the plugin was written for, support information, and the names Kubernetes, DRA
        and Slurm give its devices (`schedulers`, read by `rayaccel export`).

    Example::

        @hookimpl
        def rayaccel_family():
            return FamilyDeclaration(name="acme", vendor="ACME", resource_name="ACME",
                                     visible_devices_env_var="ACME_VISIBLE_DEVICES",
                                     quantity_rule=QuantityRule(kind="whole"), spec_version="1.0")

    .. versionadded:: 1.0
    """
    raise NotImplementedError  # pragma: no cover


@spec("list[str]", default=_empty(list, "[]"), fix="return a list of directory paths (str)")
def rayaccel_fixture_dirs() -> Sequence[str]:
    """Directories holding the plugin's simulated-host fixtures (``*.yaml`` / ``*.json``).

    Each fixture in them is addressed as ``<plugin>/<file stem>`` (``nvidia/dgx-h100``). Fixtures are
    what the conformance suite and ``rayaccel inspect --simulate`` run the plugin against.

    A plugin with a ``fixtures/`` directory beside its module need not implement this hook: the SDK answers
    it with that directory (:mod:`rayaccel.plugins.conventions`).

    :returns: absolute paths.

    .. versionadded:: 1.0
    """
    raise NotImplementedError  # pragma: no cover


# --------------------------------------------------------------------------------------------------
# Discovery and topology


@spec("list[Device]", fix="return a list of rayaccel.Device records", required=True)
def rayaccel_discover(host: Host) -> Sequence[Device | dict[str, Any]]:
    """List the family's devices on this host. **Required.**

    Must return an empty list, not raise, when the vendor driver or library is absent: a plugin is
    installed on machines without its hardware. Read the machine only through ``host``; bound every
    command with a timeout. Leave ``sku`` unset unless the plugin knows better than its catalog: the SDK
    resolves it from :func:`rayaccel_sku_catalog`.

    A device the vendor interface gives no stable id for (no UUID, only a PCI id) is still reported, as
    Ray counts it, under a fallback id (e.g. its PCI bus id), with the attribute ``id_fallback``
    (``rayaccel.records.ID_FALLBACK``) saying why; the SDK reports each as a ``fallback-device-id``
    warning.

    **Partitions** (MIG instances, AMD compute partitions, Neuron logical cores): a device split into
    isolated slices lists them in ``partitions``, one :class:`~rayaccel.records.Partition` each, with ``id``
    the id the vendor runtime accepts in the family's visible-devices variable (``MIG-<uuid>``), ``kind``
    (``mig``), ``profile`` (``1g.10gb``), its ``compute_slices``/``memory_slices`` and, on the device,
    ``partition_capacity`` (an A100's 7 and 8), so sizes can be checked against the device. A device with
    partitions is offered to Ray only as them, each profile its own resource
    (:func:`rayaccel.records.partition_resource_name`: ``<resource>_<KIND>_<profile>``, ``GPU_MIG_1g.10gb``);
    a task asking for one gets that partition's id in the variable. Partition ids are unique on the host.
    Reconfiguring partitions at run time is out of scope: the operator drains the node, reconfigures it
    and restarts it, and discovery then reports the new partitions.

    :param host: the machine to probe (real or simulated).
    :returns: one :class:`~rayaccel.records.Device` per device, in the vendor's index order. For
        families whose unit is smaller than a device (NeuronCores), set ``units`` to the unit ids.

    .. versionadded:: 1.0
    """
    raise NotImplementedError  # pragma: no cover


@spec("Topology", default=_empty("Topology", "Topology()"),
      fix="return rayaccel.Topology(links=[...], affinities=[...], domains=[...])")
def rayaccel_topology(host: Host, devices: Sequence[Device]) -> Topology | dict[str, Any]:
    """Describe how the discovered devices connect.

    :param host: the machine.
    :param devices: what :func:`rayaccel_discover` returned (validated).
    :returns: a :class:`~rayaccel.records.Topology`: undirected links between device ids (kinds from
        :data:`rayaccel.records.LINK_KINDS`), CPU/NUMA/NIC affinity, and scale-up domains (NVLink clique,
        TPU slice, UltraServer) with id and size. Omit the hook and the node has no links.

    .. versionadded:: 1.0
    """
    raise NotImplementedError  # pragma: no cover


# --------------------------------------------------------------------------------------------------
# Labeling and resource accounting


@spec("dict[str, str]", default=_empty(dict, "{}"), fix="return a dict of label key -> value, both str")
def rayaccel_labels(host: Host, inventory: FamilyInventory) -> dict[str, str]:
    """Extra node labels for this family, beyond the vocabulary the SDK writes itself.

    Keys must use the vendor's own prefix (``nvidia.com/gpu.clique``) or be one of the keys Ray itself sets
    for the family's resource, declared in ``FamilyDeclaration.ray_labels`` (a TPU family: the four
    ``ray.io/tpu-*`` keys). ``rayaccel.io/`` keys belong to the SDK.

    A Ray node's labels are set once, when it starts: label what the node is (a model, a clique, a port
    count), never a reading that moves while it runs (utilization, memory in use, temperature, power): a
    ``busy`` label is right at start and wrong a minute later. Publish those with ``rayaccel_metrics``
    (RAC201 moves them at the host seam and holds the labels still).

    :param inventory: this family's inventory so far (devices, topology, health, resources).
    :returns: label key -> value; each is checked against Ray's label syntax.

    .. versionadded:: 1.0
    """
    raise NotImplementedError  # pragma: no cover


@spec("ResourceContribution", default=_empty("ResourceContribution", "ResourceContribution()"),
      fix="return rayaccel.ResourceContribution(accelerator_type=..., extra={...})")
def rayaccel_resources(host: Host, devices: Sequence[Device],
                       topology: Topology) -> ResourceContribution | dict[str, Any]:
    """The Ray accelerator type and extra resources of this node.

    The SDK counts the family's resource itself (the units of healthy devices) and takes the accelerator
    type from the SKU catalog when the SKU is known. This hook supplies what only the plugin can: the type
    for an unknown SKU (derived from the product name, as Ray does) and extra resources such as TPU's
    ``{"<slice name>": 1, "TPU-v5p-16-head": 1}``.

    Where Ray reports no accelerator type (a TPU whose pod type is unknown and whose chips give no PCI
    id), return ``ResourceContribution(no_accelerator_type=True)``: unless the SKU catalog knows the
    device, the node then gets no ``accelerator_type:*`` resource and no ``ray.io/accelerator-type``
    label, rather than one derived from the product name.

    :param devices: the healthy devices.
    :returns: a :class:`~rayaccel.records.ResourceContribution`.

    .. versionadded:: 1.0
    """
    raise NotImplementedError  # pragma: no cover


# --------------------------------------------------------------------------------------------------
# Visibility


@spec("list[str] | None", default=_comma_split, fix="return a list of unit ids (str), in order")
def rayaccel_parse_visible(value: str) -> Sequence[str] | None:
    """Parse the value of the family's visible-devices env var into unit ids.

    The SDK's default splits on commas. Override for syntax such as Neuron's ranges (``0-3``) or
    NVIDIA's ``NoDevFiles``.

    Keep every entry or refuse it: an entry written in a form the runtime takes (a device's own id, its UUID,
    beside an index) is kept as written (the SDK places a device's own id at that device's units), and one you
    cannot read is said with ``report_problem`` (or the hook raises), never dropped while the rest is kept (RAC114:
    the node would offer fewer devices without a word). Never read a unit out of an id's digits: a UUID is the
    device's, not its place (RAC114's ``an-id-names-its-device``).

    :param value: the env var's value (the SDK handles "unset" itself).
    :returns: the unit ids, in order; an empty list means "no devices".

    .. versionadded:: 1.0
    """
    raise NotImplementedError  # pragma: no cover


@spec("dict[str, str]", default=_visible_devices_env_var_only,
      fix="return a dict of env var -> value (str) that includes the visible-devices env var")
def rayaccel_visible_env(unit_ids: Sequence[str]) -> dict[str, str]:
    """The environment to set so a process sees exactly ``unit_ids``.

    The SDK's default is ``{<visible env var>: ",".join(unit_ids)}``. Override when the runtime needs
    more (TPU's ``TPU_CHIPS_PER_HOST_BOUNDS`` for 1 or 2 chips), and declare each such variable in
    ``FamilyDeclaration.visible_env_companions``: the SDK sets only the family's variable and those, as Ray's
    managers write only theirs, and drops any other key with a warning (a library path or thread count set
    here would replace the node's in every task's process).

    :param unit_ids: the ids assigned to the task or actor, in order.
    :returns: env var -> value; it must include the visible-devices env var, and hold no other key than the
        declared companions.

    .. versionadded:: 1.0
    """
    raise NotImplementedError  # pragma: no cover


# --------------------------------------------------------------------------------------------------
# Transports


@spec("list[TransportSpec]", default=_empty(list, "[]"), fix="return a list of rayaccel.TransportSpec records")
def rayaccel_transports() -> Sequence[TransportSpec | dict[str, Any]]:
    """Tensor transports the family offers to Ray Direct Transport.

    ``rayaccel.ray.init``/``connect`` (or ``rayaccel.ray.register_transports()`` for a Ray started
    otherwise) register each one on the driver before any actor exists; a name taken by Ray's own
    transports or another plugin, or a manager class that does not import or subclass, stops there with
    an error naming the plugin. Declare Ray's own transports (NCCL, GLOO, CUDA_IPC, NIXL) that serve your
    hardware with ``builtin_in_ray=True``: they are not registered again, but ``link_kinds`` tells path
    selection (``rayaccel transports``) which links they carry. A transport that moves tensors only between
    processes of one node (shared memory, CUDA IPC) says ``reach="node"`` (the default is ``"cluster"``): it is
    never offered between two nodes, and RAC311 (two nodes) skips it. One whose ``devices`` are ``cpu`` alone moves
    copies staged through host memory: declare it for the links host memory crosses (pcie, ethernet, roce,
    infiniband, efa), never a scale-up link, for which path selection never chooses it (RAC305 fails such a
    declaration). What the class moves is its own answer (``moved_device_types()``), asked by the SDK where the
    plugin runs and carried in ``TransportSpec.moved_device_types``: leave that field out (a plugin's value is
    dropped with a ``sdk-filled-field`` warning). ``rayaccel.transports.shared_memory`` is a
    complete example; RAC301 sends tensors through each declared transport that can run on the grading machine.

    :returns: :class:`~rayaccel.records.TransportSpec` records; ``manager_class`` names a subclass of
        ``ray.experimental.TensorTransportManager`` as ``module:Class`` (imported only when registered).

    .. versionadded:: 1.0
    """
    raise NotImplementedError  # pragma: no cover


@spec("list[CollectiveBackend]", default=_empty(list, "[]"),
      fix="return a list of rayaccel.CollectiveBackend records")
def rayaccel_collective_backends() -> Sequence[CollectiveBackend | dict[str, Any]]:
    """Collective backends the family offers to ``ray.util.collective`` (its collective library: HCCL, RCCL, ...).

    The bridge registers each one with Ray's ``register_collective_backend`` in every driver the SDK connects
    (``rayaccel.ray.init``/``connect``/``install_driver``) and in every worker of a rayaccel node, before its
    first task (the worker reads the declarations from the node's env: no discovery, and the class is imported
    only when the worker imports ``ray.util.collective``). Users then call
    ``ray.util.collective.create_collective_group(actors, world_size, ranks, backend="ACME_CCL")`` with no
    registration of their own. A name Ray registers itself (``NCCL``, ``GLOO``) or another plugin's, or a
    class that does not import, is no ``BaseGroup`` subclass or leaves its abstract methods unimplemented,
    stops the driver with an error naming the plugin; RAC306 checks the same, and that the class is the
    plugin's own.

    :returns: :class:`~rayaccel.records.CollectiveBackend` records; ``group_class`` names a subclass of
        ``ray.util.collective.collective_group.base_collective_group.BaseGroup`` as ``module:Class``. Ray
        constructs it as ``group_class(world_size, rank, group_name)`` in each actor of the group and calls its
        ``allreduce(tensors, AllReduceOptions)``, ``broadcast(tensors, BroadcastOptions)``, ... with a list of
        tensors (one per device of the process).

    Example::

        @hookimpl
        def rayaccel_collective_backends():
            return [CollectiveBackend(name="ACME_CCL", group_class="rayaccel_acme.collective:AcmeCclGroup",
                                      devices=["acme"])]

    .. versionadded:: 1.1
    """
    raise NotImplementedError  # pragma: no cover


@spec("list[PerformanceBaseline]", default=_empty(list, "[]"),
      fix="return a list of rayaccel.PerformanceBaseline records, at most one per hardware ('simulated', 'real')")
def rayaccel_performance_baseline() -> Sequence[PerformanceBaseline | dict[str, Any]]:
    """The plugin's own reference performance figures, which a conformance run is held to.

    RAC310 measures figures on every run (the inventory build, a monitor poll, a node start, the latency and
    bandwidth of each transport that can run on the grading machine; the report's ``figures`` name them) and,
    when no previous report is given with ``--conformance-baseline``, holds them to the baseline declared here
    for the run's hardware (``simulated``: the plugin's first fixture; ``real``: ``--conformance-hardware
    real``): a figure worse than its declared value by more than ``tolerance_percent`` (a time also by more
    than 2 ms) fails RAC310, naming the figure. Figures the baseline does not name are recorded only. Declare
    values measured on the machines that grade the plugin, with room for their noise: ``rayaccel certify
    summary`` of a passing report prints the figures to start from.

    :returns: :class:`~rayaccel.records.PerformanceBaseline` records, at most one per hardware.

    Example::

        @hookimpl
        def rayaccel_performance_baseline():
            return [PerformanceBaseline(hardware="real", tolerance_percent=25,
                                        figures={"transport ACME_SHM bandwidth": 9000.0, "node start": 4000.0})]

    .. versionadded:: 1.2
    """
    raise NotImplementedError  # pragma: no cover


# --------------------------------------------------------------------------------------------------
# Health and metrics


@spec("list[HealthReport]", fix="return a list of rayaccel.HealthReport records")
def rayaccel_health(host: Host, devices: Sequence[Device]) -> Sequence[HealthReport | dict[str, Any]]:
    """Check the health of each device from the vendor's own signals (XID, ECC, RAS, error counters).

    Called at inventory time and then periodically by the health monitor; keep it cheap. Unhealthy
    devices are left out of the resource count; a reason with ``fatal=True`` on an unhealthy device makes
    the monitor cordon that device on the node (no new work on it; the family's other devices keep working)
    until no fatal reason remains. A fatal reason drains the device, so report a device with one unhealthy:
    on a degraded or unknown device it drains nothing (RAC264's a-fatal-reason-is-unhealthy).

    A partition may have its own report (``device`` = the partition's id): an unhealthy partition leaves
    its profile's resource count and a fatal reason cordons that partition alone; an unhealthy device takes
    all its partitions with it.

    :returns: one :class:`~rayaccel.records.HealthReport` per device (and per partition with a fault of
        its own); a device without a report is ``unknown`` (still scheduled).

    .. versionadded:: 1.0
    """
    raise NotImplementedError  # pragma: no cover


@spec("list[MetricSample]", default=_empty(list, "[]"),
      fix="return a list of rayaccel.MetricSample records with standard names and units")
def rayaccel_metrics(host: Host, devices: Sequence[Device]) -> Sequence[MetricSample | dict[str, Any]]:
    """Sample per-device metrics with standard names and units.

    :returns: :class:`~rayaccel.records.MetricSample` records; names from
        :data:`rayaccel.records.STANDARD_METRICS` (``utilization`` in percent, ``memory_used`` in bytes,
        ``power`` in watts, ...), vendor-specific ones prefixed ``vendor.``.

    .. versionadded:: 1.0
    """
    raise NotImplementedError  # pragma: no cover


# --------------------------------------------------------------------------------------------------
# Catalog and cloud


@spec("SkuCatalog", fix="return rayaccel.catalog.load_catalog(<path of your catalog file>)")
def rayaccel_sku_catalog() -> SkuCatalog | dict[str, Any]:
    """The SKUs the plugin knows, as data (usually loaded with :func:`rayaccel.catalog.load_catalog`).

    A plugin with a ``skus.yaml`` beside its module need not implement this hook: the SDK loads that file
    (:mod:`rayaccel.plugins.conventions`).

    The SDK matches each discovered device against it (PCI device id, then product name) to fill the
    device's SKU and the node's accelerator type. A device that matches nothing is still scheduled,
    labelled ``rayaccel.io/sku-known=false``, with a warning naming the ``rayaccel sku add`` command.

    .. versionadded:: 1.0
    """
    raise NotImplementedError  # pragma: no cover


@spec("dict[str, Any]", fix="return the fixture data (a dict) with its host answers rewritten")
def rayaccel_fixture_for_sku(fixture: dict[str, Any], sku: SkuRecord) -> dict[str, Any]:
    """Rewrite one of the plugin's fixtures so its devices are of a new SKU (day-zero onboarding).

    ``rayaccel sku add`` calls it to write a simulated fixture for a SKU that has no hardware in the lab
    yet. Only the plugin knows its vendor formats, so only it can change a product name, PCI device id or
    memory size inside recorded NVML answers or ``neuron-ls`` JSON consistently.

    :param fixture: a fixture of this plugin, as parsed data (``host`` holds the vendor answers).
    :param sku: the new SKU record.
    :returns: the fixture data with ``host`` rewritten; the SDK sets name, description and ``expected``.

    .. versionadded:: 1.0
    """
    raise NotImplementedError  # pragma: no cover


@spec("CloudHint | None", fix="return rayaccel.CloudHint(...), or None for an instance type without the family")
def rayaccel_cloud_hints(provider: str, instance_type: str) -> CloudHint | dict[str, Any] | None:
    """The family's accelerators on a cloud instance type, without probing (for scale-from-zero).

    :param provider: ``aws``, ``gcp``, ...
    :param instance_type: e.g. ``p5.48xlarge`` or ``ct5lp-hightpu-8t``, as an operator or an autoscaler's
        configuration writes it: answer every spelling of one type alike, without regard to case or surrounding
        whitespace (``P5.48XLARGE``, `` p5.48xlarge``), as the name of the same machine (RAC222 asks them).
    :returns: a :class:`~rayaccel.records.CloudHint`, or ``None`` when the type has none of the family.

    .. versionadded:: 1.0
    """
    raise NotImplementedError  # pragma: no cover


@spec("list[CloudHint]", default=_empty(list, "[]"),
      fix="return a list of rayaccel.CloudHint, one per instance type rayaccel_cloud_hints answers for")
def rayaccel_cloud_instance_types() -> list[CloudHint] | list[dict[str, Any]]:
    """Every cloud instance type the plugin has a hint for, as those hints (for scale-from-zero).

    :func:`rayaccel_cloud_hints` answers for an instance type someone names; this one lists them, so
    ``rayaccel export --format autoscaler`` offers a node type for each without the operator naming it.
    Each entry should be what ``rayaccel_cloud_hints`` answers for its provider and instance type.

    :returns: a list of :class:`~rayaccel.records.CloudHint` (empty when the plugin knows none).

    Example::

        @hookimpl
        def rayaccel_cloud_instance_types():
            return [CloudHint(provider="aws", instance_type="p5.48xlarge", family="acme", count=8,
                              accelerator_type="ACME-X1")]

    .. versionadded:: 1.0
    """
    raise NotImplementedError  # pragma: no cover


#: Hooks every plugin must implement.
REQUIRED_HOOKS = tuple(name for name, info in HOOKS.items() if info.required)


# --------------------------------------------------------------------------------------------------
# Typed references to the hooks whose validated answer callers use as it is

AnswerT = TypeVar("AnswerT")


@dataclass(frozen=True)
class Hook(Generic[AnswerT]):
    """A hook's name with the type of its validated answer (or its default): ``manager.answer(plugin,
    hookspec.TOPOLOGY, problems, host=host, devices=devices)`` is a :class:`Topology` to the type checker."""

    name: str


DISCOVER: Hook[list[Device] | None] = Hook("rayaccel_discover")
TOPOLOGY: Hook[Topology] = Hook("rayaccel_topology")
HEALTH: Hook[list[HealthReport] | None] = Hook("rayaccel_health")
METRICS: Hook[list[MetricSample]] = Hook("rayaccel_metrics")
RESOURCES: Hook[ResourceContribution] = Hook("rayaccel_resources")
LABELS: Hook[dict[str, str]] = Hook("rayaccel_labels")
SKU_CATALOG: Hook[SkuCatalog | None] = Hook("rayaccel_sku_catalog")
TRANSPORTS: Hook[list[TransportSpec]] = Hook("rayaccel_transports")
COLLECTIVE_BACKENDS: Hook[list[CollectiveBackend]] = Hook("rayaccel_collective_backends")
PERFORMANCE_BASELINE: Hook[list[PerformanceBaseline]] = Hook("rayaccel_performance_baseline")
CLOUD_HINTS: Hook[CloudHint | None] = Hook("rayaccel_cloud_hints")
CLOUD_INSTANCE_TYPES: Hook[list[CloudHint]] = Hook("rayaccel_cloud_instance_types")
