"""The ``ray-start`` format: the ``ray start`` command of this node, as one shell line and as JSON.

The line is the node's env (``ExportOptions.node_env``, what ``rayaccel start`` would set:
``RAY_OVERRIDE_RESOURCES``/``RAY_OVERRIDE_LABELS``, the family's visible-devices variable, the worker
preload for families Ray does not know, ...) followed by ``ray start`` with the inventory's resources
(``GPU`` as ``--num-gpus``, which Ray requires; the rest as ``--resources`` JSON) and the labels
``ray start --labels`` accepts (Ray refuses ``ray.io/`` keys there; those reach Ray through
``RAY_OVERRIDE_LABELS``). The operator appends ``--head`` or ``--address=HEAD:6379``.
"""

from __future__ import annotations

import json
import re
import shlex
from typing import Any

from rayaccel.outputs.exporters import (
    Exported,
    ExportError,
    ExportOptions,
    check_labels,
    families_with_devices,
    ray_labels,
    resource_quantity,
)
from rayaccel.records import NodeInventory
from rayaccel.support.safe_text import MAX_ARG_BYTES, excerpt

#: The node env's JSON of the node's resources and labels (rayaccel.ray.node; Ray reads them at start).
OVERRIDE_RESOURCES_ENV = "RAY_OVERRIDE_RESOURCES"
OVERRIDE_LABELS_ENV = "RAY_OVERRIDE_LABELS"
#: Resources ``ray start`` takes as their own options, not inside ``--resources`` (Ray refuses them there).
_OWN_OPTIONS = {"GPU": "--num-gpus", "CPU": "--num-cpus"}
#: A name the shell takes before a command as an assignment (``NAME=value ray start``).
_ENV_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,254}$")


def export(inventory: NodeInventory, options: ExportOptions) -> Exported:
    families_with_devices(inventory, "ray-start")
    argv = ["ray", "start"]
    # The node env's overrides are what Ray will use (the inventory's, plus what node_config adds, such as
    # scale-up domain resources): the options say the same, so the line reads true either way.
    node_resources = _json_env(options, OVERRIDE_RESOURCES_ENV) or inventory.resources
    node_labels = _json_env(options, OVERRIDE_LABELS_ENV) or inventory.labels
    resources = {k: resource_quantity(v) for k, v in sorted(node_resources.items())}
    for name, option in _OWN_OPTIONS.items():
        if name in resources:
            argv.append(f"{option}={resources.pop(name)}")
    if resources:
        argv.append("--resources=" + json.dumps(resources, separators=(",", ":")))
    labels = dict(sorted(ray_labels(node_labels).items()))
    check_labels("ray-start", labels)  # `--labels=k=v,...` splits on ',' and '='
    if labels:
        argv.append("--labels=" + ",".join(f"{k}={v}" for k, v in labels.items()))
    env = dict(sorted(options.node_env.items()))
    _check_runnable(env, argv)
    line = " ".join([*(f"{k}={shlex.quote(v)}" for k, v in env.items()), *map(shlex.quote, argv)])
    data = {"host": inventory.host, "line": line, "argv": argv, "env": env,
            "resources": {k: resource_quantity(v) for k, v in sorted(node_resources.items())},
            "labels": dict(sorted(node_labels.items()))}
    return Exported(text=line + "\n", data=data)


def _check_runnable(env: dict[str, str], argv: list[str]) -> None:
    """Refuse a line the shell or the kernel would not run as meant: an env name that is not a shell name (it
    would become a command), a NUL, or one string over :data:`MAX_ARG_BYTES` (execve fails with E2BIG)."""
    for name, value in env.items():
        if not _ENV_NAME_RE.fullmatch(name):
            raise ExportError(f"--format ray-start: the node env's variable name {excerpt(name)} is not a shell "
                              "variable name (letters, digits, '_'); the plugin that sets it must name it so")
        size = len(f"{name}={value}".encode()) + 1
        if "\0" in value or size >= MAX_ARG_BYTES:
            why = "holds a NUL" if "\0" in value else f"is {size} bytes"
            raise ExportError(f"--format ray-start: the node env's {name} {why}; the kernel runs no command with an "
                              f"env string of {MAX_ARG_BYTES} bytes or more (MAX_ARG_STRLEN) or a NUL: export fewer "
                              "families or partitions with --plugin, or start the node with rayaccel start")
    for arg in argv:
        size = len(arg.encode()) + 1
        if size >= MAX_ARG_BYTES:
            raise ExportError(f"--format ray-start: the argument {excerpt(arg, 20)} is {size} bytes; the kernel runs "
                              f"no command with an argument of {MAX_ARG_BYTES} bytes or more (MAX_ARG_STRLEN): "
                              "export fewer families or partitions with --plugin, or start the node with rayaccel "
                              "start")


def _json_env(options: ExportOptions, name: str) -> dict[str, Any]:
    value = options.node_env.get(name)
    parsed = json.loads(value) if value else {}
    return parsed if isinstance(parsed, dict) else {}
