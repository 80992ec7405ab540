"""The ``nfd`` format: a Node Feature Discovery local-source features file.

NFD's worker reads every file in ``/etc/kubernetes/node-feature-discovery/features.d/`` (dot files
skipped) as ``key=value`` lines, ``#`` comments, and a ``# +expiry-time=<RFC 3339>`` directive after which
the lines below it are ignored; a file over 64 KiB is ignored whole. Each line becomes a node label, so
keys carry a prefix and every key and value keeps the Kubernetes label syntax. The labels are the
inventory's node labels (the rayaccel.io/ vocabulary and the plugins' own), without Ray's ``ray.io/``
ones, which describe a Ray node, not a Kubernetes one. ``rayaccel.io/count`` counts healthy devices, so
an unhealthy device is absent from it. The file expires :data:`EXPIRY_INTERVALS` monitor intervals after
it is written: a node whose monitor stopped loses the labels instead of advertising stale devices.
``rayaccel export -o`` and the health monitor write it by rename (NFD never reads half a file).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from rayaccel.labels import label_key_error, label_value_error
from rayaccel.outputs.exporters import Exported, ExportError, ExportOptions, families_with_devices
from rayaccel.records import NodeInventory
from rayaccel.support.safe_text import terminal_text

#: The monitor intervals after which the file's labels expire.
EXPIRY_INTERVALS = 3
#: NFD ignores a features file larger than this (bytes).
MAX_FILE_BYTES = 64 * 1024
EXPIRY_DIRECTIVE = "# +expiry-time="


def labels(inventory: NodeInventory) -> dict[str, str]:
    """The node labels the file advertises."""
    return {k: v for k, v in sorted(inventory.labels.items()) if not k.startswith("ray.io/")}


def label_problem(key: str, value: str) -> str | None:
    """Why NFD would refuse ``key=value`` (None when it takes it)."""
    prefix, slash, _ = key.partition("/")
    if not slash:
        return f"label key {key!r} has no prefix; NFD needs one (vendor.com/name)"
    if (prefix == "kubernetes.io" or prefix.endswith(".kubernetes.io")) and not (
            prefix.endswith("feature.node.kubernetes.io") or prefix.endswith("profile.node.kubernetes.io")):
        return f"label key {key!r} is in the kubernetes.io namespace, which NFD refuses"
    return label_key_error(key) or label_value_error(key, value)


def export(inventory: NodeInventory, options: ExportOptions) -> Exported:
    families_with_devices(inventory, "nfd")
    now = (options.now or datetime.now(UTC)).astimezone(UTC).replace(microsecond=0)
    expiry = now + timedelta(seconds=EXPIRY_INTERVALS * options.monitor_interval)
    advertised = labels(inventory)
    for key, value in advertised.items():
        why = label_problem(key, value)
        if why:
            raise ExportError(f"--format nfd: {why}")
    stamp = expiry.strftime("%Y-%m-%dT%H:%M:%SZ")
    host = terminal_text(inventory.host)  # a comment is one line, whatever the host name holds
    lines = [f"# rayaccel accelerator labels of node {host}, written {now:%Y-%m-%dT%H:%M:%SZ}; they "
             f"expire after {EXPIRY_INTERVALS} monitor intervals of {options.monitor_interval:g}s",
             f"{EXPIRY_DIRECTIVE}{stamp}",
             *(f"{k}={v}" for k, v in advertised.items())]
    text = "\n".join(lines) + "\n"
    if len(text.encode("utf-8")) > MAX_FILE_BYTES:
        raise ExportError(f"--format nfd: the features file would be {len(text.encode('utf-8'))} bytes; NFD "
                          f"ignores files over {MAX_FILE_BYTES} (fewer labels: --plugin to export one family)")
    return Exported(text=text, data={"host": inventory.host, "expiry_time": stamp, "labels": advertised})
