"""The ``slurm`` export, read back by Debian's slurmd (``slurmd -G``): what Slurm understood must be the
inventory's healthy devices, their type, device files, cores and links."""

from __future__ import annotations

import math
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from rayaccel import parse_cpu_list
from rayaccel.errors import RayaccelError
from rayaccel.inventory.builder import collect_inventory
from rayaccel.outputs.exporters.slurm import SlurmNode, logical_cores, slurm_node
from rayaccel.plugins.manager import default_manager
from rayaccel.records import DEVICE_FILE, NodeInventory, expand_device_file
from rayaccel.simulation.host_factory import make_host

SLURMD = shutil.which("slurmd") or ("/usr/sbin/slurmd" if Path("/usr/sbin/slurmd").exists() else None)
needs_slurmd = pytest.mark.skipif(SLURMD is None, reason="Debian's slurmd is not installed (make install adds it)")

FIXTURES = ["nvidia/dgx-h100", "amd/mi300x-8", "tpu/v5p-16-worker0", "neuron/trn1.32xlarge", "gaudi/hls-gaudi3",
            "nvidia/l4-single"]
SLURMD_LINE = re.compile(r"Gres (Name=.*)")


def inventory(ref: str, *faults: str) -> NodeInventory:
    manager = default_manager()
    return collect_inventory(manager, make_host(ref, list(faults), manager=manager))


def slurmd_reads(node: SlurmNode, inventory_root: Path, gres_conf: str | None = None) -> list[dict[str, str]]:
    """Write the export (``gres_conf``, default the node's) and a minimal slurm.conf into a config dir, run
    ``slurmd -G`` on them and return the GRES it printed. Device files are symlinks to /dev/null under
    ``inventory_root``: slurmd needs a character device and follows the link, so no root-owned /dev entry
    is made."""
    conf = inventory_root / "etc"
    conf.mkdir(exist_ok=True)
    for line in node.lines:
        for file in line.files:
            Path(file).parent.mkdir(parents=True, exist_ok=True)
            if not Path(file).is_symlink():  # MIG instances of one GPU share its /dev/nvidia<N>
                Path(file).symlink_to("/dev/null")
    cores = [c for line in node.lines if line.cores for c in parse_cpu_list(line.cores)]
    per_socket = max(1, math.ceil((max(cores, default=1) + 1) / 2))
    (conf / "gres.conf").write_text(node.gres_conf() if gres_conf is None else gres_conf)
    # config_overrides: slurmd takes the node's CPU layout from slurm.conf, not from this (smaller) machine.
    (conf / "slurm.conf").write_text("\n".join([
        "ClusterName=rayaccel", "SlurmctldHost=localhost", f"GresTypes={','.join(node.gres_types)}",
        "SlurmdParameters=config_overrides", "ProctrackType=proctrack/linuxproc", "TaskPlugin=task/none",
        f"SlurmdSpoolDir={inventory_root / 'spool'}", f"StateSaveLocation={inventory_root / 'state'}",
        f"SlurmdPidFile={inventory_root / 'slurmd.pid'}",
        f"NodeName={node.node_name} Sockets=2 CoresPerSocket={per_socket} ThreadsPerCore=1 Gres={node.gres}",
        f"PartitionName=all Nodes={node.node_name} Default=YES", ""]))
    assert SLURMD is not None
    done = subprocess.run([SLURMD, "-G", "-N", node.node_name, "-f", str(conf / "slurm.conf")],
                          capture_output=True, text=True, timeout=60, env={"PATH": "/usr/sbin:/usr/bin:/bin"})
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    assert "error" not in output.lower(), output
    # e.g. "Gres Name=gpu Type=h100 Count=1 Index=0 ID=7696487 File=/x/nvidia0 Cores=0-55 CoreCnt=112 Links=-1,18"
    return [{key.lower(): value for key, _, value in (field.partition("=") for field in m.group(1).split())}
            for m in SLURMD_LINE.finditer(output)]


def expected_rows(inv: NodeInventory, root: Path) -> list[dict[str, object]]:
    """What slurmd must print, from the inventory alone: each healthy device, its file, cores and links."""
    rows: list[dict[str, object]] = []
    for family in inv.families:
        states = {h.device: h.state for h in family.health}
        healthy = [d for d in family.devices if states.get(d.id) != "unhealthy"]
        cpus = {a.device: a.cpus for a in family.topology.affinities if a.cpus}
        for device in healthy:
            # The device file discovery saw (a TPU chip's VFIO group) beats the family's pattern.
            found = device.attributes.get(DEVICE_FILE)
            pattern = family.family.schedulers.device_files[0]
            own = found if isinstance(found, str) else expand_device_file(pattern, device.index)
            file = str(root) + own.removeprefix("/dev")
            rows.append({"name": family.family.schedulers.slurm_gres, "type": device.sku, "file": file,
                         "cores": logical_cores(cpus[device.id]) if device.id in cpus else None,
                         "links": [sum(link.lanes for link in family.topology.links
                                       if {link.a, link.b} == {device.id, other.id}
                                       and link.kind not in ("pcie", "ethernet", "roce", "infiniband", "efa"))
                                   if other.id != device.id else -1 for other in healthy]})
    return rows


@needs_slurmd
@pytest.mark.parametrize("ref", FIXTURES)
def test_slurmd_understands_the_export_as_the_inventory(ref: str, tmp_path: Path) -> None:
    inv = inventory(ref)
    root = tmp_path / "dev"
    node = slurm_node(inv, device_root=str(root))
    understood = slurmd_reads(node, tmp_path)
    expected = expected_rows(inv, root)

    assert len(understood) == len(expected) == sum(len(f.schedulable_units) and len(f.devices) for f in inv.families)
    by_file = {row["file"]: row for row in understood}
    for want in expected:
        got = by_file[str(want["file"])]
        assert (got["name"], got["type"], got["count"]) == (want["name"], want["type"], "1")
        assert got.get("cores") == want["cores"]
        links = want["links"]
        assert isinstance(links, list)
        if any(n > 0 for n in links):
            # Slurm's Links are positional over its own device order (Index): map them back to files.
            order = [row["file"] for row in sorted(understood, key=lambda r: int(r["index"]))]
            position = {row["file"]: i for i, row in enumerate(expected)}
            got_links = [int(n) for n in got["links"].split(",")]
            assert [got_links[order.index(str(row["file"]))] for row in expected] == links
            assert [row["file"] for row in expected].index(str(want["file"])) == position[str(want["file"])]
    assert node.gres == ",".join(f"{f.family.schedulers.slurm_gres}:{f.devices[0].sku}:{len(f.devices)}"
                                 for f in inv.families)


@needs_slurmd
def test_an_unhealthy_gpu_is_absent_from_slurms_count_and_links(tmp_path: Path) -> None:
    inv = inventory("nvidia/dgx-h100", "xid-79")
    node = slurm_node(inv, device_root=str(tmp_path / "dev"))
    understood = slurmd_reads(node, tmp_path)

    assert node.gres == "gpu:h100-sxm5-80gb:7"
    files = sorted(row["file"] for row in understood)
    assert len(files) == 7 and not any(f.endswith("/nvidia3") for f in files)
    assert all(len(row["links"].split(",")) == 7 for row in understood)


def test_cores_are_the_first_threads_of_the_cores_a_device_is_near() -> None:
    assert logical_cores("0-55,112-167") == "0-55"  # SMT siblings numbered after every core's first thread
    assert logical_cores("56-111,168-223") == "56-111"
    assert logical_cores("0-3") == "0-3"
    assert logical_cores("0,2,4,6") == "0,2,4,6"  # not two shifted halves: kept as it is
    with pytest.raises(RayaccelError, match="not a Linux CPU list"):
        logical_cores("zero-3")


def test_devices_without_links_share_one_line_with_a_file_range() -> None:
    inv = inventory("nvidia/dgx-h100")
    family = inv.families[0]
    unlinked = inv.model_copy(update={"families": [family.model_copy(
        update={"topology": family.topology.model_copy(update={"links": []})})]})
    lines = slurm_node(unlinked).gres_conf().splitlines()

    assert lines[-2:] == [
        "NodeName=dgx-h100-01 Name=gpu Type=h100-sxm5-80gb File=/dev/nvidia[0-3] Cores=0-55",
        "NodeName=dgx-h100-01 Name=gpu Type=h100-sxm5-80gb File=/dev/nvidia[4-7] Cores=56-111"]


def test_a_family_without_a_gres_name_is_refused_in_one_line() -> None:
    inv = inventory("nvidia/l4-single")
    family = inv.families[0]
    nameless = family.family.model_copy(update={"schedulers": family.family.schedulers.model_copy(
        update={"slurm_gres": None})})
    with pytest.raises(RayaccelError, match=r"declares no schedulers.slurm_gres, which --format slurm") as refused:
        slurm_node(inv.model_copy(update={"families": [family.model_copy(update={"family": nameless})]}))
    assert "\n" not in str(refused.value)


@needs_slurmd
def test_slurmd_reads_a_file_range_as_that_many_devices(tmp_path: Path) -> None:
    inv = inventory("nvidia/dgx-h100")
    family = inv.families[0]
    unlinked = inv.model_copy(update={"families": [family.model_copy(
        update={"topology": family.topology.model_copy(update={"links": []})})]})
    understood = slurmd_reads(slurm_node(unlinked, device_root=str(tmp_path / "dev")), tmp_path)

    assert [(row["file"].rsplit("/", 1)[1], row["count"], row["cores"]) for row in understood] == [
        ("nvidia[0-3]", "4", "0-55"), ("nvidia[4-7]", "4", "56-111")]


@needs_slurmd
def test_rayaccel_export_writes_the_gres_conf_slurmd_reads(tmp_path: Path) -> None:
    root = tmp_path / "dev"
    (tmp_path / "etc").mkdir()
    target = tmp_path / "etc" / "gres.conf"
    written = subprocess.run([sys.executable, "-m", "rayaccel", "export", "--format", "slurm", "--simulate",
                              "gaudi/hls-gaudi3", "--device-root", str(root), "-o", str(target)],
                             capture_output=True, text=True, timeout=120)
    assert written.returncode == 0, written.stderr
    gres_conf = target.read_text()
    node = slurm_node(inventory("gaudi/hls-gaudi3"), device_root=str(root))
    assert gres_conf == node.gres_conf()

    understood = slurmd_reads(node, tmp_path, gres_conf)
    assert sorted(row["file"] for row in understood) == [f"{root}/accel/accel{i}" for i in range(8)]
    assert {(row["name"], row["type"]) for row in understood} == {("gpu", "gaudi3-hl-325l")}


def test_a_family_without_a_gres_name_through_the_cli_is_one_line_exit_2_and_nothing_written(
        tmp_path: Path) -> None:
    target = tmp_path / "gres.conf"
    # qts, a test plugin whose family declares no scheduler names
    env = {**os.environ, "RAYACCEL_PLUGINS": "qts=rayaccel_testplugins.qts", "RAYACCEL_NO_AUTOLOAD": "1"}
    done = subprocess.run([sys.executable, "-m", "rayaccel", "export", "--format", "slurm", "--simulate", "qts/qts-6",
                           "-o", str(target)], capture_output=True, text=True, timeout=120, env=env)

    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.count("\n") == 1 and "declares no schedulers.slurm_gres" in done.stderr, done.stderr
    assert list(tmp_path.iterdir()) == []


def test_a_host_name_slurm_cannot_take_is_refused_and_node_name_overrides_it() -> None:
    inv = inventory("nvidia/l4-single")
    with pytest.raises(RayaccelError, match=r"node name 'gpu box' is not a Slurm node name") as refused:
        slurm_node(inv.model_copy(update={"host": "gpu box"}))
    assert "--node-name" in str(refused.value)
    assert slurm_node(inv, node_name="gpu-07").gres_conf().splitlines()[-1].startswith("NodeName=gpu-07 Name=gpu")
