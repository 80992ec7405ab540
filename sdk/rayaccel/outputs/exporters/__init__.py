"""The inventory in each cluster manager's vocabulary: ``rayaccel export --format FORMAT``.

Every format is a pure function of a :class:`~rayaccel.records.NodeInventory` and :class:`ExportOptions`
(module ``<format module>.export``), returning an :class:`Exported`: the text a file gets and the same
content as JSON data (``--json``). Nothing here calls a plugin: what discovery cannot know (a family's
Kubernetes resource name, DRA driver, Slurm GRES name) comes from the family's declaration
(:class:`~rayaccel.records.SchedulerNames`). A format that cannot be made from the inventory raises
:class:`ExportError` (one line, exit 2) before anything is written. docs/exporters.md explains each.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, cast

from rayaccel.errors import RayaccelError
from rayaccel.inventory.cloud import CloudCatalog
from rayaccel.labels import label_errors
from rayaccel.records import FamilyInventory, NodeInventory
from rayaccel.support.monitor_interval import DEFAULT_MONITOR_INTERVAL
from rayaccel.support.safe_text import control_characters, excerpt, terminal_text

#: The image a KubeRay worker group runs when ``--image`` is not given: Ray's, with rayaccel to be added.
DEFAULT_IMAGE = "rayproject/ray:2.60.0"
_DNS_LABEL = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
DNS_SUBDOMAIN_RE = re.compile(rf"^(?=.{{1,253}}$){_DNS_LABEL}(\.{_DNS_LABEL})*$")


class ExportError(RayaccelError):
    """The inventory cannot be written in the asked format (a family names no resource, a bad node name)."""


@dataclass(frozen=True)
class ExportOptions:
    """What a format needs besides the inventory. Every field has a default a test can override."""

    #: The env a Ray node with this inventory is started in (``rayaccel.ray.node_config``; ray-start).
    node_env: Mapping[str, str] = field(default_factory=dict)
    #: The Kubernetes node name (DRA's ``nodeName`` and pool); default: the inventory's host, lower-cased.
    node_name: str | None = None
    #: Seconds between the health monitor's polls: the NFD file expires three of them after it is written.
    monitor_interval: float = DEFAULT_MONITOR_INTERVAL
    #: The time the export is made (NFD's expiry is counted from it); default: now, UTC.
    now: datetime | None = None
    #: The container image of a KubeRay worker group (it must have rayaccel and the plugins installed).
    image: str = DEFAULT_IMAGE
    #: Plugins the node runs (``--plugin``): KubeRay's container command passes them to ``rayaccel start``.
    plugins: tuple[str, ...] = ()
    #: The fixture a simulated node runs (KubeRay: the pod simulates it too, for demos and CI).
    simulate: str | None = None
    #: How a KubeRay pod starts its node: ``rayaccel`` (the container's command becomes ``rayaccel start``) or
    #: ``activation`` (KubeRay's generated ``ray start`` unchanged, in an image where ``rayaccel enable`` was run).
    kuberay_start: str = "rayaccel"
    #: The DRA pool's generation: a writer that changes the slices raises it.
    generation: int = 1
    #: A directory standing for ``/dev`` in Slurm's ``File=`` paths (``--device-root``; default: /dev itself).
    device_root: str | None = None
    #: The cloud node types the plugins hint at (``autoscaler``; collected by rayaccel.inventory.cloud).
    cloud: CloudCatalog | None = None
    #: Workers of each autoscaler node type: at least (kept running) and at most.
    min_workers: int = 0
    max_workers: int = 2


@dataclass(frozen=True)
class Exported:
    """One export: ``text`` is what ``-o FILE`` gets, ``data`` what ``--json`` prints; ``warnings`` are
    things the format could not carry (printed on stderr, never silently lost)."""

    text: str
    data: Any
    warnings: tuple[str, ...] = ()


Exporter = Callable[[NodeInventory, ExportOptions], Exported]


@dataclass(frozen=True)
class ExportFormat:
    """A row of the format table: the name ``--format`` takes and the module whose ``export`` makes it
    (imported only when asked for)."""

    name: str
    module: str
    summary: str
    #: ``rayaccel export`` computes ``ExportOptions.node_env`` (the Ray node's env) for it.
    needs_node_env: bool = False
    #: ``rayaccel export`` collects ``ExportOptions.cloud`` (the plugins' cloud hints) for it.
    needs_cloud_catalog: bool = False

    def exporter(self) -> Exporter:
        """The format's ``export``, with the last check every format's text passes (:func:`checked_text`)."""
        module = importlib.import_module(f"{__name__}.{self.module}")
        made = cast(Exporter, module.export)

        def export_checked(inventory: NodeInventory, options: ExportOptions) -> Exported:
            exported = made(inventory, options)
            checked_text(self.name, exported.text)
            return exported

        return export_checked


def checked_text(format_name: str, text: str) -> None:
    """Refuse an export whose text holds a control character other than its line ends: every value a
    format writes is checked where it is written (naming the plugin, device and field); this catches one
    a format has not learnt to check, before a parser reads a second line or field out of it."""
    stray = control_characters(text.replace("\n", ""))
    if stray:
        line = next(line for line in text.split("\n") if control_characters(line))
        raise ExportError(f"--format {format_name}: a value from a plugin, fixture or option holds control "
                          f"characters ({', '.join(stray)}) in the line {excerpt(line)}; fix the value (rayaccel "
                          "inspect --json shows the plugin's records)")


def check_labels(format_name: str, labels: Mapping[str, str]) -> None:
    """Refuse labels a format would write that are not Ray/Kubernetes labels (``key=value`` lists split on
    ',' and '=', YAML keys name nodes)."""
    errors = label_errors(labels)
    if errors:
        raise ExportError(f"--format {format_name}: {terminal_text(errors[0])}; the plugin that sets it must give a "
                          "valid label")


#: ``--format`` name -> its row, in the order ``rayaccel export --help`` lists them.
FORMATS: dict[str, ExportFormat] = {row.name: row for row in (
    ExportFormat("ray-start", "ray_start", "the `ray start` command of this node (resources, labels, env)",
                 needs_node_env=True),
    ExportFormat("kuberay", "kuberay", "a KubeRay RayCluster worker group running this node through rayaccel"),
    ExportFormat("dra", "dra", "Kubernetes DRA resource.k8s.io/v1 ResourceSlices of the node's devices"),
    ExportFormat("nfd", "nfd", "a Node Feature Discovery local-source features file (node labels)"),
    ExportFormat("slurm", "slurm", "Slurm gres.conf lines (File, Cores, Links) and the node's slurm.conf Gres="),
    ExportFormat("autoscaler", "autoscaler", "available_node_types for the Ray autoscaler, one per cloud "
                 "instance type the plugins hint at", needs_cloud_catalog=True),
)}


def export_format(name: str) -> ExportFormat:
    """The row of ``name``, or an ExportError listing the formats there are."""
    row = FORMATS.get(name)
    if row is None:
        raise ExportError(f"unknown export format {name!r}; choose one of {', '.join(FORMATS)} "
                          "(rayaccel export --format FORMAT)")
    return row


def export(name: str, inventory: NodeInventory, options: ExportOptions | None = None) -> Exported:
    """The inventory in format ``name``."""
    return export_format(name).exporter()(inventory, options or ExportOptions())


def scheduler_name(family: FamilyInventory, which: str, format_name: str) -> str:
    """The family's declared ``schedulers.<which>``, or an ExportError naming the field and the fix."""
    value = getattr(family.family.schedulers, which)
    if not value:
        example = {"kubernetes_resource": "'vendor.com/accel'", "dra_driver": "'accel.vendor.com'",
                   "slurm_gres": "'gpu'"}.get(which, "...")
        raise ExportError(f"family {family.family.name!r} (plugin {family.plugin}) declares no "
                          f"schedulers.{which}, which --format {format_name} needs; the plugin's rayaccel_family "
                          f"should return FamilyDeclaration(..., schedulers=SchedulerNames({which}={example})), "
                          "or leave the family out with --plugin")
    return str(value)


def node_name(inventory: NodeInventory, options: ExportOptions) -> str:
    """The Kubernetes node name: ``options.node_name``, else the host name lower-cased (a DNS subdomain)."""
    name = options.node_name if options.node_name is not None else inventory.host.lower()
    if not DNS_SUBDOMAIN_RE.fullmatch(name):
        raise ExportError(f"node name {name!r} is not a Kubernetes node name (lower-case DNS subdomain, <= 253); "
                          "give the node's name with --node-name")
    return name


def families_with_devices(inventory: NodeInventory, format_name: str) -> list[FamilyInventory]:
    """The families that found devices; an ExportError when there are none (nothing to describe)."""
    families = [f for f in inventory.families if f.devices]
    if not families:
        raise ExportError(f"host {inventory.host!r} has no accelerators any plugin found, so --format "
                          f"{format_name} has nothing to describe (rayaccel inspect shows what was found)")
    return families


def ray_labels(labels: Mapping[str, str]) -> dict[str, str]:
    """The labels ``ray start --labels`` accepts: Ray refuses keys under its own ``ray.io/`` prefix there
    (they reach a rayaccel node through ``RAY_OVERRIDE_LABELS``)."""
    return {k: v for k, v in labels.items() if not k.startswith("ray.io/")}


def resource_quantity(value: float) -> int | float:
    """A resource amount as Ray and Kubernetes write it: whole numbers without '.0'."""
    return int(value) if float(value).is_integer() else value
