"""The ``autoscaler`` format: ``available_node_types`` entries for the Ray cluster launcher, one per cloud
instance type the installed plugins hint at (rayaccel.inventory.cloud). KubeRay's autoscaler reads node
types from a RayCluster's worker groups instead: each entry's resources and labels are what such a group's
``rayStartParams`` carry (docs/exporters.md).

Each entry promises the accelerator resources and labels a node of that type will publish once it runs
``rayaccel start``, so the autoscaler can scale the type up from zero for a task that asks for the
resource or selects the labels. CPU, memory and ``node_config`` (the provider's launch settings) are the
operator's to add: the plugins do not know them. Pure: renders the catalog.
"""

from __future__ import annotations

import re
from typing import Any

import yaml

from rayaccel.inventory.cloud import CloudCatalog, CloudNodeType
from rayaccel.outputs.exporters import Exported, ExportError, ExportOptions, check_labels
from rayaccel.records import NodeInventory
from rayaccel.support.safe_text import excerpt, terminal_text

#: A Ray resource name as the autoscaler's YAML names it: Ray's own (``GPU``, ``neuron_cores``) and the
#: ``accelerator_type:<type>`` ones; never a separator a node's ``--resources`` JSON or a CLI would split.
_RESOURCE_NAME_RE = re.compile(r"^[A-Za-z][A-Za-z0-9_.:-]{0,127}$")


def export(inventory: NodeInventory, options: ExportOptions) -> Exported:
    """``rayaccel export --format autoscaler``: the node types of ``options.cloud`` (the node's own
    inventory plays no part: the types are for nodes that do not exist yet). Problems are warnings."""
    if options.cloud is None:
        raise ExportError("--format autoscaler needs the plugins' cloud hints: collect them with "
                          "rayaccel.inventory.cloud.collect_cloud_catalog (rayaccel export does)")
    if not options.cloud.node_types:
        raise ExportError("no installed plugin hints at any instance type asked about: name some with "
                          "--instance-type PROVIDER:TYPE (e.g. aws:p5.48xlarge)")
    return Exported(text=autoscaler_yaml(options.cloud, options.min_workers, options.max_workers),
                    data=autoscaler_document(options.cloud, options.min_workers, options.max_workers),
                    warnings=tuple(terminal_text(problem.render()) for problem in options.cloud.problems))


def node_type_name(node_type: CloudNodeType) -> str:
    """``aws-p5.48xlarge-nvidia``: provider, instance type and family, lower case, in letters, digits, ``-``
    and ``.`` (also fit for a Kubernetes object name, should a worker group be named after it)."""
    text = f"{node_type.provider}-{node_type.instance_type}-{node_type.family}".lower()
    return re.sub(r"[^a-z0-9.-]+", "-", text).strip("-.")


def available_node_types(catalog: CloudCatalog, min_workers: int = 0, max_workers: int = 2) -> dict[str, Any]:
    """The ``available_node_types`` mapping: name -> resources, labels, min/max workers and an empty
    ``node_config`` for the operator's provider settings."""
    if min_workers < 0 or max_workers < min_workers:
        raise ExportError(f"--min-workers {min_workers} and --max-workers {max_workers}: need "
                            "0 <= min-workers <= max-workers")
    types: dict[str, Any] = {}
    for node_type in catalog.node_types:
        for resource in node_type.resources:
            if not _RESOURCE_NAME_RE.fullmatch(resource):
                raise ExportError(f"--format autoscaler: plugin {node_type.plugin}, instance type "
                                  f"{excerpt(node_type.instance_type)}: resource name {excerpt(resource)} is not a "
                                  "Ray resource name (a letter, then letters, digits, '_', '.', ':', '-'; <= 128); "
                                  "the plugin's rayaccel_cloud_hints must name it so")
        check_labels("autoscaler", node_type.labels)
        types[node_type_name(node_type)] = {
            "resources": dict(node_type.resources),
            "labels": dict(node_type.labels),
            "min_workers": min_workers,
            "max_workers": max_workers,
            "node_config": {},
        }
    return types


def autoscaler_document(catalog: CloudCatalog, min_workers: int = 0, max_workers: int = 2) -> dict[str, Any]:
    """The export as data: the node types, and the problems the catalog found (a hint that disagrees with a
    fixture of its instance type)."""
    return {"available_node_types": available_node_types(catalog, min_workers, max_workers),
            "problems": [problem.model_dump(mode="json", exclude_none=True) for problem in catalog.problems]}


def autoscaler_yaml(catalog: CloudCatalog, min_workers: int = 0, max_workers: int = 2) -> str:
    """The cluster-config fragment: ``available_node_types:`` to merge into a cluster YAML, each problem as
    a comment above it (YAML has no other place for them)."""
    head = ["# available_node_types for the Ray cluster launcher / KubeRay autoscaler (rayaccel export "
            "--format autoscaler)", "# add CPU, memory and node_config for your provider to each type"]
    head += [f"# problem: {terminal_text(problem.render())}" for problem in catalog.problems]
    body = yaml.safe_dump({"available_node_types": available_node_types(catalog, min_workers, max_workers)},
                          sort_keys=False, default_flow_style=False)
    return "\n".join(head) + "\n" + body
