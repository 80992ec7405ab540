"""The ``slurm`` format: a node's ``gres.conf`` lines and the ``Gres=`` of its ``slurm.conf`` node line.

One GRES per healthy device (one device file each), of the family's declared GRES name
(``FamilyDeclaration.schedulers.slurm_gres``) and a ``Type`` from the device's SKU. ``Cores`` are the
logical core ids of the device's CPU affinity, ``Links`` the number of scale-up links to every other
listed device, in gres.conf order (Slurm: -1 for the device itself, 0 for none). A line with ``Links``
holds one file (Slurm's rule); devices of one type with the same cores and no links share one line with a
``File`` range. An unhealthy device is left out of the lines and the count, as the inventory leaves it out
of the node's resources. Pure: built from the inventory alone.

A partitioned device (MIG, AMD compute partitions) is never a GRES itself: each healthy partition is one,
of type ``<device type>_<profile>`` (Slurm's own MIG naming, ``a100-sxm4-40gb_3g.20gb``), on a line of its
own with ``MultipleFiles=`` (Slurm 21.08+: the files one GRES needs together, for MIG the GPU's
``/dev/nvidia<N>`` and its GPU- and compute-instance access files under ``/dev/nvidia-caps``) taken from the
partition's ``DEVICE_FILE`` attribute (a comma-separated list; one file, an AMD partition's render node, is
a plain ``File=``, which slurmd demands, and such lines share a range); a partition without one is counted
(``Count=``) without files, as Slurm cannot constrain what it cannot name. A family with partitions gets no
``Links``: Slurm indexes them by device file, which partitions of one device share.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rayaccel.cpus import CpuListError, format_cpu_list, parse_cpu_list
from rayaccel.errors import RayaccelError
from rayaccel.outputs.exporters import Exported, ExportError, ExportOptions, families_with_devices, scheduler_name
from rayaccel.records import DEVICE_FILE, Device, FamilyInventory, NodeInventory, expand_device_file
from rayaccel.support.safe_text import device_path_problem, device_root_problem, excerpt

#: Link kinds that join devices directly (NVLink, xGMI, ICI, ...): what Slurm's ``Links`` counts. PCIe
#: and the scale-out networks are not device-to-device links to Slurm (its NVML autodetection gives 0).
SCALE_UP_LINK_KINDS = frozenset({"nvlink", "nvswitch", "xgmi", "ici", "neuronlink", "gaudi-roce", "other"})

#: A NodeName gres.conf and slurm.conf take as one word (Slurm's host lists split on ',', '[', '=' and spaces).
_NODE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,62}")

#: Characters Slurm reads as separators in ``Gres=`` and gres.conf (``gpu:type:count``, lists, ``=``).
_NOT_IN_TYPE = re.compile(r"[^a-z0-9_.-]+")


@dataclass(frozen=True)
class GresLine:
    """One gres.conf line: devices of one GRES name and type."""

    name: str
    type: str
    files: tuple[str, ...]
    count: int
    cores: str | None
    links: tuple[int, ...] | None
    #: The files are one GRES's (a partition's ``MultipleFiles``), not one GRES each.
    multiple_files: bool = False

    def render(self, node_name: str) -> str:
        parts = [f"NodeName={node_name}", f"Name={self.name}", f"Type={self.type}"]
        if self.files and self.multiple_files:
            parts.append(f"MultipleFiles={','.join(self.files)}")
        elif self.files:
            parts.append(f"File={file_list(self.files)}")
        else:
            parts.append(f"Count={self.count}")
        if self.cores:
            parts.append(f"Cores={self.cores}")
        if self.links is not None:
            parts.append("Links=" + ",".join(str(n) for n in self.links))
        return " ".join(parts)


@dataclass(frozen=True)
class SlurmNode:
    """What Slurm needs to know about the node's accelerators."""

    node_name: str
    lines: tuple[GresLine, ...]

    @property
    def gres(self) -> str:
        """The ``Gres=`` value of the node's slurm.conf line: ``gpu:h100-sxm5-80gb:8``, comma-joined."""
        counts: dict[tuple[str, str], int] = {}
        for line in self.lines:
            counts[(line.name, line.type)] = counts.get((line.name, line.type), 0) + line.count
        return ",".join(f"{name}:{kind}:{count}" for (name, kind), count in counts.items())

    @property
    def gres_types(self) -> list[str]:
        """The ``GresTypes=`` names slurm.conf must list."""
        return sorted({line.name for line in self.lines})

    def gres_conf(self) -> str:
        head = [f"# gres.conf for {self.node_name} (rayaccel export --format slurm)",
                f"# slurm.conf: GresTypes={','.join(self.gres_types)}",
                f"# slurm.conf: NodeName={self.node_name} Gres={self.gres}"]
        return "\n".join(head + [line.render(self.node_name) for line in self.lines]) + "\n"

    def to_json(self) -> dict[str, Any]:
        return {"node_name": self.node_name, "gres": self.gres, "gres_types": self.gres_types,
                "gres_conf": self.gres_conf(),
                "devices": [{"name": line.name, "type": line.type, "files": list(line.files), "count": line.count,
                             "cores": line.cores, "links": list(line.links) if line.links is not None else None,
                             "multiple_files": line.multiple_files}
                            for line in self.lines]}


def export(inventory: NodeInventory, options: ExportOptions) -> Exported:
    """``rayaccel export --format slurm``: the gres.conf text (its head comments name the slurm.conf
    settings), and as data the same with ``gres`` and each line's fields."""
    node = slurm_node(inventory, options.device_root, options.node_name)
    return Exported(text=node.gres_conf(), data=node.to_json())


def slurm_node(inventory: NodeInventory, device_root: str | None = None, node_name: str | None = None) -> SlurmNode:
    """The node's GRES. ``device_root`` replaces the leading ``/dev`` of every device file (a test, or a
    node whose device files a container shows elsewhere); ``node_name`` is Slurm's name of the node (default
    the short host name); a family without a Slurm GRES name is refused."""
    node_name = node_name if node_name is not None else slurm_node_name(inventory.host)
    if not _NODE_NAME.fullmatch(node_name):
        raise ExportError(f"node name {node_name!r} is not a Slurm node name (letters, digits, '-' and '_'): give "
                          "the node's name as slurm.conf has it with --node-name")
    if device_root is not None and (why := device_root_problem(device_root)):
        raise ExportError(f"--device-root {excerpt(device_root)} {why}: give the directory standing for /dev as a "
                          "plain absolute path, e.g. /host/dev")
    lines: list[GresLine] = []
    for family in families_with_devices(inventory, "slurm"):
        lines.extend(_family_lines(family, scheduler_name(family, "slurm_gres", "slurm"), device_root))
    return SlurmNode(node_name=node_name, lines=tuple(lines))


def _family_lines(family: FamilyInventory, gres_name: str, device_root: str | None) -> list[GresLine]:
    states = {report.device: report.state for report in family.health}
    patterns = family.family.schedulers.device_files
    devices = [d for d in family.devices if states.get(d.id, "unknown") != "unhealthy"]
    # slurmd numbers a node's GRES (its Index) in the order of their device files, and Links are positional over
    # that numbering (`slurmd -G` reads it so in tests/outputs/test_export_slurm.py): list the devices in it, not
    # in discovery's (a driver may number its files otherwise: habanalabs probes modules asynchronously).
    devices.sort(key=lambda d: _file_order(_device_file(family, patterns[0] if patterns else None, d, None)))
    listed = [d.id for d in devices]
    cpus = {a.device: a.cpus for a in family.topology.affinities if a.cpus}
    partitioned = any(d.partitions for d in family.devices)
    links = None if partitioned else _link_counts(family, listed)
    single: list[GresLine] = []
    for device in devices:
        cores = logical_cores(cpus[device.id]) if device.id in cpus else None
        if device.partitions:
            single.extend(_partition_lines(family, gres_name, device, states, cores, device_root))
            continue
        # Slurm 22.05 counts one GRES per File: the first pattern is the device's own file (the others, such
        # as a driver's control device, are shared or secondary).
        file = _device_file(family, patterns[0] if patterns else None, device, device_root)
        files = (file,) if file is not None else ()
        row = links[device.id] if links is not None else None
        single.append(GresLine(name=gres_name, type=gres_type(family, device), files=files, count=1,
                               cores=cores, links=row))
    return _merge_unlinked(single)


def _partition_lines(family: FamilyInventory, gres_name: str, device: Device, states: Mapping[str, str],
                     cores: str | None, device_root: str | None) -> list[GresLine]:
    """One GRES per healthy partition of ``device``: its own files together (``MultipleFiles``), or counted."""
    lines = []
    for partition in device.partitions:
        if states.get(partition.id, "unknown") == "unhealthy":
            continue
        listed = partition.attributes.get(DEVICE_FILE)
        files = tuple(_rooted(_checked_file(family, partition.id, f.strip()), device_root)
                      for f in str(listed).split(",")) if listed is not None else ()
        kind = _NOT_IN_TYPE.sub("-", f"{gres_type(family, device)}_{partition.profile.lower()}").strip("-.")
        lines.append(GresLine(name=gres_name, type=kind, files=files, count=1, cores=cores, links=None,
                              multiple_files=len(files) > 1))  # slurmd refuses MultipleFiles of one file
    return lines


def _checked_file(family: FamilyInventory, unit: str, path: str) -> str:
    """``path`` when it is a plain device file under /dev; else the export is refused naming who said it:
    a newline, space or '..' in a file would write another gres.conf line, field or file for slurmd."""
    why = device_path_problem(path)
    if why is not None:
        raise ExportError(f"--format slurm: plugin {family.plugin}, device {excerpt(unit)}: attributes.{DEVICE_FILE} "
                          f"{excerpt(path)} {why}; the plugin must report the device's file under /dev, like "
                          "/dev/nvidia0")
    return path


def _rooted(path: str, device_root: str | None) -> str:
    return path if device_root is None else device_root.rstrip("/") + path.removeprefix("/dev")


def _device_file(family: FamilyInventory, pattern: str | None, device: Device, device_root: str | None) -> str | None:
    found = device.attributes.get(DEVICE_FILE)  # the file discovery saw beats the pattern's guess from the index
    if found is not None:
        path = _checked_file(family, device.id, str(found))
    elif pattern is not None:
        path = expand_device_file(pattern, device.index)
    else:
        return None
    return _rooted(path, device_root)


def _file_order(path: str | None) -> tuple[Any, ...]:
    """A device file's place in slurmd's numbering: by name, its numbers compared as numbers (accel2 < accel10);
    a device without a file keeps its place after those with one (the sort is stable)."""
    if path is None:
        return (1,)
    return (0, *((0, int(part)) if part.isdigit() else (1, part) for part in re.split(r"(\d+)", path)))


def _link_counts(family: FamilyInventory, listed: Sequence[str]) -> dict[str, tuple[int, ...]] | None:
    """Each listed device's row of Slurm ``Links``; None when the family reports no scale-up link at all."""
    between: dict[frozenset[str], int] = {}
    for link in family.topology.links:
        if link.kind in SCALE_UP_LINK_KINDS and link.a != link.b:
            pair = frozenset((link.a, link.b))
            between[pair] = between.get(pair, 0) + link.lanes
    if not between:
        return None
    return {a: tuple(-1 if a == b else between.get(frozenset((a, b)), 0) for b in listed) for a in listed}


def _merge_unlinked(lines: list[GresLine]) -> list[GresLine]:
    """Consecutive one-device lines of one type and cores and without links become one line (a File range)."""
    merged: list[GresLine] = []
    for line in lines:
        last = merged[-1] if merged else None
        if (last is not None and line.links is None and last.links is None and last.type == line.type
                and last.cores == line.cores and bool(last.files) == bool(line.files)
                and not last.multiple_files and not line.multiple_files):
            merged[-1] = GresLine(name=last.name, type=last.type, files=last.files + line.files,
                                  count=last.count + 1, cores=last.cores, links=None)
        else:
            merged.append(line)
    return merged


def gres_type(family: FamilyInventory, device: Device) -> str:
    """A Slurm GRES type for the device: its SKU id, else the family's accelerator type, else its product,
    in lower case with Slurm's separators replaced (``TPU-V5P`` -> ``tpu-v5p``)."""
    text = device.sku or family.accelerator_type or device.product_name or ""
    return _NOT_IN_TYPE.sub("-", text.lower()).strip("-.") or "unknown"


def slurm_node_name(host: str) -> str:
    """Slurm's NodeName is the short host name (``hostname -s``)."""
    return host.split(".", 1)[0]


def logical_cores(cpus: str) -> str:
    """Slurm's ``Cores`` for a device's CPU list: the first thread of each core.

    Linux numbers every core's first thread before any second thread, so a NUMA node's list with SMT is a
    range ``A`` plus ``A`` shifted by the machine's core count (``0-55,112-167``); the shifted half names the
    same cores and is dropped. Any other list is taken as it is. Slurm's logical core ids then equal those
    first-thread CPU ids."""
    try:
        ids = sorted(parse_cpu_list(cpus))
    except CpuListError as e:  # a record built without validation: Affinity refuses such text
        raise RayaccelError(f"CPU list {excerpt(cpus)} is not a Linux CPU list like 0-3,8 ({e}): fix the plugin's "
                            "affinity cpus") from None
    half = len(ids) // 2
    if len(ids) % 2 == 0 and half:
        offset = ids[half] - ids[0]
        contiguous = ids[half - 1] - ids[0] == half - 1
        if contiguous and ids[half] > ids[half - 1] + 1 and all(ids[half + i] == ids[i] + offset for i in range(half)):
            ids = ids[:half]
    return format_cpu_list(ids)


def compress_ids(ids: Sequence[int]) -> str:
    """``[0, 1, 2, 5]`` -> ``0-2,5``."""
    runs: list[str] = []
    start = prev = None
    for i in ids:
        if start is None:
            start = prev = i
        elif prev is not None and i == prev + 1:
            prev = i
        else:
            runs.append(f"{start}-{prev}" if start != prev else str(start))
            start = prev = i
    if start is not None:
        runs.append(f"{start}-{prev}" if start != prev else str(start))
    return ",".join(runs)


def file_list(files: Sequence[str]) -> str:
    """Device files for ``File=``: ``/dev/nvidia[0-3]`` where they differ only in a trailing number (Slurm's
    host-list range syntax), else comma-joined."""
    if len(files) == 1:
        return files[0]
    split = [re.fullmatch(r"(.*?)(\d+)", f) for f in files]
    if all(split) and len({m.group(1) for m in split if m}) == 1:
        numbers = [m.group(2) for m in split if m]
        if all(n == str(int(n)) for n in numbers):
            prefix = split[0].group(1) if split[0] else ""
            return f"{prefix}[{compress_ids(sorted(int(n) for n in numbers))}]"
    return ",".join(files)
