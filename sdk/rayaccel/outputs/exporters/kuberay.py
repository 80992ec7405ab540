"""The ``kuberay`` format: a KubeRay ``RayCluster`` worker group for nodes like this one.

The output is a RayCluster fragment to merge into a cluster's manifest: the annotation
``ray.io/overwrite-container-cmd: "true"`` (KubeRay >= 1.1 then runs the container's own command and
leaves its generated ``ray start`` line in ``$KUBERAY_GEN_RAY_START_CMD``) and one ``workerGroupSpecs``
entry:

- ``rayStartParams``: the inventory's resources as KubeRay takes them (``num-gpus`` for ``GPU``, the rest
  as the ``resources`` JSON string), which the Ray autoscaler reads to scale the group from zero;
- ``labels``: the Ray node labels ``ray start --labels`` accepts (KubeRay >= 1.5's group field; KubeRay
  refuses ``labels`` inside ``rayStartParams`` when the field is set);
- the pod template: one container whose resource limits ask the family's Kubernetes extended resource
  (``nvidia.com/gpu: 8``) for every schedulable unit, and whose command runs the generated ``ray start``
  arguments through ``rayaccel start`` (so the node gets the inventory's resources, labels, env and health
  monitor), then keeps the container alive while Ray runs.

The pod template is a valid Kubernetes ``PodTemplateSpec`` (tests validate it with ``kubernetes-validate``).
"""

from __future__ import annotations

import json
import re
import shlex
from typing import Any

import yaml

from rayaccel.labels import node_own_label
from rayaccel.outputs.exporters import (
    Exported,
    ExportOptions,
    families_with_devices,
    ray_labels,
    resource_quantity,
    scheduler_name,
)
from rayaccel.records import NodeInventory

OVERWRITE_ANNOTATION = "ray.io/overwrite-container-cmd"
CONTAINER_NAME = "ray-worker"
#: The environment variable a simulated pod reads its fixture from (rayaccel.simulation.host_factory).
SIMULATE_ENV = "RAYACCEL_SIMULATE"


def group_labels(inventory: NodeInventory) -> dict[str, str]:
    """The labels every node of the group has: ``ray start --labels``' ones, less this node's own state
    (:func:`rayaccel.labels.node_own_label`), which ``rayaccel start`` sets on each pod's node itself."""
    return {k: v for k, v in sorted(ray_labels(inventory.labels).items()) if not node_own_label(k)}


def group_name(inventory: NodeInventory) -> str:
    """A DNS label naming the node type: its families and accelerator types, e.g. ``nvidia-h100``."""
    parts = [f"{f.family.name}-{f.accelerator_type or 'unknown'}" for f in inventory.families if f.devices]
    name = re.sub(r"[^a-z0-9-]+", "-", "-".join(parts).lower()).strip("-")
    return re.sub(r"-{2,}", "-", name)[:63].rstrip("-") or "accelerators"


def container_command(options: ExportOptions) -> tuple[list[str], list[str]]:
    """``command`` and ``args``: KubeRay's generated arguments through ``rayaccel start``, then wait while Ray
    runs. The generated line is parsed by the shell (``eval``: its values carry their own quotes, such as
    ``--resources='{...}'``), and ``--block`` is left out so ``rayaccel start`` returns once the node and its
    health monitor are up."""
    plugins = "".join(f" --plugin {shlex.quote(p)}" for p in options.plugins)
    script = ("ulimit -n 65536; "
              'eval "set -- ${KUBERAY_GEN_RAY_START_CMD#ray start}"; '
              'args=(); for arg in "$@"; do [ "$arg" = --block ] || args+=("$arg"); done; '
              f'rayaccel start{plugins} "${{args[@]}}" && exec sleep infinity')
    return ["/bin/bash", "-lc", "--"], [script]


def export(inventory: NodeInventory, options: ExportOptions) -> Exported:
    families = families_with_devices(inventory, "kuberay")
    limits = {scheduler_name(f, "kubernetes_resource", "kuberay"): str(len(f.schedulable_units))
              for f in families}
    resources = {k: resource_quantity(v) for k, v in sorted(inventory.resources.items())}
    params: dict[str, str] = {}
    if "GPU" in resources:
        params["num-gpus"] = str(resources.pop("GPU"))
    if resources:
        # KubeRay passes the value to `ray start --resources=` as written: a quoted JSON string.
        params["resources"] = json.dumps(json.dumps(resources, separators=(",", ":")))
    command, args = container_command(options)
    container: dict[str, Any] = {"name": CONTAINER_NAME, "image": options.image, "command": command, "args": args,
                                 "resources": {"limits": limits, "requests": dict(limits)}}
    if options.simulate:
        container["env"] = [{"name": SIMULATE_ENV, "value": options.simulate}]
    group: dict[str, Any] = {
        "groupName": group_name(inventory), "replicas": 0, "minReplicas": 0, "maxReplicas": 1,
        "rayStartParams": params,
        "labels": group_labels(inventory),
        "template": {"metadata": {"labels": {"rayaccel.io/node-type": group_name(inventory)}},
                     "spec": {"containers": [container]}},
    }
    fragment = {"apiVersion": "ray.io/v1", "kind": "RayCluster",
                "metadata": {"annotations": {OVERWRITE_ANNOTATION: "true"}},
                "spec": {"workerGroupSpecs": [group]}}
    header = (f"# KubeRay worker group for nodes like {' '.join(inventory.host.split())} (rayaccel export "
              "--format kuberay):\n# merge the annotation and the workerGroupSpecs entry into your RayCluster.\n")
    return Exported(text=header + yaml.safe_dump(fragment, sort_keys=False), data=fragment)


def pod_template(fragment: dict[str, Any]) -> dict[str, Any]:
    """The pod template of the fragment's worker group (what Kubernetes validates as a PodTemplateSpec)."""
    template: dict[str, Any] = fragment["spec"]["workerGroupSpecs"][0]["template"]
    return template
