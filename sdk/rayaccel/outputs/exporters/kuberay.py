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
  (``nvidia.com/gpu: 8``) for every schedulable whole device, and each partition profile's resource for its
  partitions (:func:`partition_resource`: ``nvidia.com/mig-1g.10gb: 2``, as NVIDIA's device plugin names MIG
  devices under its mixed strategy), never a limit of 0; its command runs the generated ``ray start``
  arguments through ``rayaccel start`` (so the node gets the inventory's resources, labels, env and health
  monitor), then keeps the container alive while Ray runs.

``--kuberay-start activation`` (:data:`KUBERAY_STARTS`) leaves the annotation and the command out: KubeRay's
generated ``ray start`` runs unchanged in an image where ``rayaccel enable`` was run (no health monitor). The
header says what each way loses.

The pod template is a valid Kubernetes ``PodTemplateSpec`` (tests validate it with ``kubernetes-validate``).
"""

from __future__ import annotations

import json
import re
import shlex
from typing import Any

import yaml
from pydantic import TypeAdapter, ValidationError

from rayaccel.labels import node_own_label
from rayaccel.outputs.exporters import (
    Exported,
    ExportError,
    ExportOptions,
    check_labels,
    families_with_devices,
    ray_labels,
    resource_quantity,
    scheduler_name,
)
from rayaccel.records import (
    PARTITION_PLACEHOLDER_RE,
    Device,
    ExtendedResourceName,
    FamilyInventory,
    NodeInventory,
    Partition,
)
from rayaccel.support.safe_text import excerpt

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


#: A container image reference (distribution/reference's grammar: ``[registry[:port]/]path[:tag][@digest]``).
_PATH_COMPONENT = r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
_REGISTRY = r"(?:[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)*(?::[0-9]+)?/)?"
IMAGE_RE = re.compile(rf"^{_REGISTRY}{_PATH_COMPONENT}(?:/{_PATH_COMPONENT})*"
                      r"(?::[A-Za-z0-9_][A-Za-z0-9_.-]{0,127})?(?:@[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,})?$")


def image_problem(image: str) -> str | None:
    """Why ``image`` is not a container image reference Kubernetes can pull (None when it is)."""
    if not image:
        return "is empty"
    if len(image) > 512 or not IMAGE_RE.fullmatch(image):
        return "is not an image reference like rayproject/ray:2.60.0 or registry.example.com:5000/team/ray@sha256:..."
    return None


_EXTENDED_RESOURCE: TypeAdapter[str] = TypeAdapter(ExtendedResourceName)


def partition_resource(family: FamilyInventory, device: Device, partition: Partition) -> str:
    """The Kubernetes extended resource a pod asks for to get ``partition``: the family's
    ``schedulers.kubernetes_partition_resource`` with ``{profile}`` the partition's profile and ``{<name>}`` the
    partition's (else its device's) attribute of that name, lower-cased; a family that declares none gets
    ``<kubernetes_resource>-<profile>``. An ExportError says what is missing or why the name is not one."""
    names = family.family.schedulers
    pattern = (names.kubernetes_partition_resource
               or scheduler_name(family, "kubernetes_resource", "kuberay") + "-{profile}")

    def value(match: re.Match[str]) -> str:
        key = match.group(1)
        found = partition.profile if key == "profile" else partition.attributes.get(key, device.attributes.get(key))
        if found is None:
            raise ExportError(f"family {family.family.name!r}: partition {partition.id} ({partition.profile}) has no "
                              f"attribute {key!r}, which its schedulers.kubernetes_partition_resource {pattern!r} "
                              "names; the plugin should report it, or the pattern should not use it")
        return str(found).lower()

    name = PARTITION_PLACEHOLDER_RE.sub(value, pattern)
    try:
        return _EXTENDED_RESOURCE.validate_python(name)
    except ValidationError as e:
        raise ExportError(f"family {family.family.name!r}: partition profile {partition.profile!r} gives "
                          f"{name!r}, which is not a Kubernetes extended resource name ({e.errors()[0]['msg']}); "
                          "set schedulers.kubernetes_partition_resource to the family's device plugin naming") from None


def container_limits(family: FamilyInventory) -> dict[str, int]:
    """What a pod of this family asks for: its extended resource per schedulable whole device, and each
    partition resource per partition that takes work (a partitioned device is never asked for whole)."""
    limits: dict[str, int] = {}
    if family.schedulable_units:
        limits[scheduler_name(family, "kubernetes_resource", "kuberay")] = len(family.schedulable_units)
    owners = {p.id: (d, p) for d in family.devices for p in d.partitions}
    for ids in family.partition_units.values():
        for unit in ids:
            device, partition = owners[unit]
            name = partition_resource(family, device, partition)
            limits[name] = limits.get(name, 0) + 1
    return limits


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


#: How a pod starts its node (``--kuberay-start``), and what the fragment's header says of each.
KUBERAY_STARTS = {
    "rayaccel": ("the container's command is replaced (annotation ray.io/overwrite-container-cmd) by `rayaccel "
                 "start` with KubeRay's generated arguments: the node gets the inventory's resources, labels and "
                 "env, its health monitor (a failed device leaves scheduling), the Grafana dashboard on the head; "
                 "it loses KubeRay's own "
                 "command (`ray start --block`: the container waits with `sleep infinity`, so a Ray that dies "
                 "leaves the pod running)"),
    "activation": ("KubeRay's generated `ray start` runs unchanged, in an image where the Ray activation is on "
                   "(Dockerfile: RUN pip install rayaccel <plugins> && rayaccel enable): the node gets the same "
                   "resources, labels, per-task device variable and claims table; it loses the health monitor (a "
                   "failed device stays schedulable until the pod restarts), the Grafana dashboard and `--plugin` "
                   "(every plugin installed in the image loads)"),
}


def export(inventory: NodeInventory, options: ExportOptions) -> Exported:
    if options.kuberay_start not in KUBERAY_STARTS:
        raise ExportError(f"--kuberay-start {excerpt(options.kuberay_start)} is not one of: "
                          f"{', '.join(KUBERAY_STARTS)}")
    if options.kuberay_start == "activation" and options.plugins:
        raise ExportError("--kuberay-start activation loads every plugin installed in the image, so --plugin cannot "
                          "choose: install only those plugins in the image, or use --kuberay-start rayaccel")
    why = image_problem(options.image)
    if why is not None:
        raise ExportError(f"--image {excerpt(options.image)} {why}: give the image the worker pods run (with "
                          "rayaccel and the plugins installed)")
    families = families_with_devices(inventory, "kuberay")
    counts: dict[str, int] = {}
    for family in families:
        for name, count in container_limits(family).items():
            counts[name] = counts.get(name, 0) + count
    if not counts:
        raise ExportError(f"host {inventory.host!r} has no device or partition that takes work (all unhealthy?), "
                          "so a worker group for nodes like it would ask Kubernetes for nothing: export from a "
                          "healthy node")
    limits = {name: str(count) for name, count in counts.items()}
    resources = {k: resource_quantity(v) for k, v in sorted(inventory.resources.items())}
    params: dict[str, str] = {}
    if "GPU" in resources:
        params["num-gpus"] = str(resources.pop("GPU"))
    elif any(f.family.resource_name == "GPU" and f.partition_units for f in families):
        params["num-gpus"] = "0"  # only partitions: Ray must not count the partitioned GPUs the pod sees as GPUs
    if resources:
        # KubeRay passes the value to `ray start --resources=` as written: a quoted JSON string.
        params["resources"] = json.dumps(json.dumps(resources, separators=(",", ":")))
    check_labels("kuberay", group_labels(inventory))
    container: dict[str, Any] = {"name": CONTAINER_NAME, "image": options.image}
    activation = options.kuberay_start == "activation"
    if not activation:
        container["command"], container["args"] = container_command(options)
    container["resources"] = {"limits": limits, "requests": dict(limits)}
    if options.simulate:
        container["env"] = [{"name": SIMULATE_ENV, "value": options.simulate}]
    group: dict[str, Any] = {
        "groupName": group_name(inventory), "replicas": 0, "minReplicas": 0, "maxReplicas": 1,
        "rayStartParams": params,
        "labels": group_labels(inventory),
        "template": {"metadata": {"labels": {"rayaccel.io/node-type": group_name(inventory)}},
                     "spec": {"containers": [container]}},
    }
    fragment: dict[str, Any] = {"apiVersion": "ray.io/v1", "kind": "RayCluster"}
    if not activation:
        fragment["metadata"] = {"annotations": {OVERWRITE_ANNOTATION: "true"}}
    fragment["spec"] = {"workerGroupSpecs": [group]}
    other = "activation" if not activation else "rayaccel"
    header = (f"# KubeRay worker group for nodes like {' '.join(inventory.host.split())} (rayaccel export "
              f"--format kuberay --kuberay-start {options.kuberay_start}):\n"
              f"# merge {'' if activation else 'the annotation and '}the workerGroupSpecs entry into your RayCluster.\n"
              + "".join(f"# {line}\n" for line in _wrapped(f"{options.kuberay_start}: "
                                                              f"{KUBERAY_STARTS[options.kuberay_start]}."))
              + "".join(f"# {line}\n" for line in _wrapped(f"The alternative, --kuberay-start {other}: "
                                                              f"{KUBERAY_STARTS[other]}.")))
    return Exported(text=header + yaml.safe_dump(fragment, sort_keys=False), data=fragment)


def _wrapped(text: str) -> list[str]:
    import textwrap

    return textwrap.wrap(text, width=110)


def pod_template(fragment: dict[str, Any]) -> dict[str, Any]:
    """The pod template of the fragment's worker group (what Kubernetes validates as a PodTemplateSpec)."""
    template: dict[str, Any] = fragment["spec"]["workerGroupSpecs"][0]["template"]
    return template
