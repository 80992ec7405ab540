"""``rayaccel cluster``: a real multi-node ``ray.cluster_utils.Cluster`` of simulated nodes, seen from what the
nodes published to Ray (no plugin call): both workers of the TPU slice ``tpu/v5p-16`` and two GB200 trays of
one NVL72 NVLink domain each show as one unit across their nodes; a DGX H100 with a fault (XID 79 on one GPU)
is degraded, and once the operator drains it with ``ray drain-node``, draining.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
import ray
from ray.cluster_utils import Cluster
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

import rayaccel.ray
from rayaccel.outputs.cluster_picture import cluster_svg
from rayaccel.ray.cluster_view import build_view
from rayaccel.ray.registry import uninstall
from rayaccel.support.polling import wait_for

pytestmark = pytest.mark.ray

TPU_SLICE = "tpu-v5p-16-slice-a"
NVL72 = "5f2c1a9e-7d3b-4e8a-9c61-0b7d2e4f8a13.32766"
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"


@pytest.fixture(scope="module")
def cluster() -> Iterator[dict[str, Any]]:
    cluster = Cluster(initialize_head=False)
    nodes = {}
    try:
        nodes["tray07"] = rayaccel.ray.add_node(cluster, head=True, simulate="nvidia/gb200-nvl72-tray", num_cpus=1,
                                                include_dashboard=False)
        for name, fixture, faults in [("tray08", "nvidia/gb200-nvl72-tray-08", []),
                                      ("tpu0", "tpu/v5p-16-worker0", []), ("tpu1", "tpu/v5p-16-worker1", []),
                                      ("dgx", "nvidia/dgx-h100", ["xid-79"])]:
            nodes[name] = rayaccel.ray.add_node(cluster, simulate=fixture, faults=faults, num_cpus=1, wait=False)
        cluster.wait_for_nodes()
        yield {"address": cluster.address, "ids": {name: node.node_id for name, node in nodes.items()}}
    finally:
        rayaccel.ray.shutdown()
        cluster.shutdown()
        uninstall()


def rayaccel_cluster(address: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "rayaccel", "cluster", "--address", address, *args],
                          capture_output=True, text=True, timeout=120, env=dict(os.environ))


def view_json(address: str) -> dict[str, Any]:
    done = rayaccel_cluster(address, "--json")
    assert done.returncode == 0, done.stderr[-3000:]
    return dict(json.loads(done.stdout))


@pytest.fixture(scope="module")
def seen(cluster: dict[str, Any]) -> dict[str, Any]:
    """The view once all five nodes are alive with their accelerators."""
    return wait_for(lambda: view_json(cluster["address"]),
                    lambda v: sum(1 for n in v["nodes"] if n["state"] == "alive" and n["resources"]) == 5,
                    timeout=120, interval=1, what="five live nodes with accelerators in `rayaccel cluster --json`")


def test_the_tpu_slice_is_one_unit_across_its_two_workers(cluster, seen):
    (tpu,) = [d for d in seen["domains"] if d["id"] == TPU_SLICE]
    ids = cluster["ids"]
    assert sorted(tpu["nodes"]) == sorted([ids["tpu0"], ids["tpu1"]])
    assert (tpu["kind"], tpu["size"], tpu["tpu_slice"], tpu["topology"]) == ("tpu-slice", 8, TPU_SLICE, "2x2x2")


def test_the_nvl72_domain_is_one_unit_across_its_trays(cluster, seen):
    (nvl,) = [d for d in seen["domains"] if d["id"] == NVL72]
    ids = cluster["ids"]
    assert sorted(nvl["nodes"]) == sorted([ids["tray07"], ids["tray08"]])
    assert nvl["kind"] == "nvlink-clique" and nvl["size"] == 8  # the two trays' 4 GPUs each, added up


def test_families_and_skus_are_grouped_and_the_faulted_dgx_is_degraded(cluster, seen):
    groups = {(g["family"], g["sku"]): g for g in seen["groups"]}
    assert groups[("nvidia", "gb200-nvl")]["nodes"] == 2 and groups[("nvidia", "gb200-nvl")]["devices"] == 8
    assert groups[("tpu", "tpu-v5p")]["nodes"] == 2
    h100 = groups[("nvidia", "h100-sxm5-80gb")]
    assert (h100["nodes"], h100["devices"], h100["healthy_nodes"]) == (1, 7, 0)
    (dgx,) = [n for n in seen["nodes"] if n["node_id"] == cluster["ids"]["dgx"]]
    assert dgx["health"] == "degraded" and dgx["resources"]["GPU"] == 7


@ray.remote(num_gpus=1, num_cpus=0)
class Holder:
    """Work running on the node: a node being drained stays up (draining) until its work is done."""

    def ready(self) -> bool:
        return True


def test_a_drained_node_shows_as_draining_in_json_and_in_the_picture(cluster, seen, tmp_path):
    dgx = cluster["ids"]["dgx"]
    rayaccel.ray.connect(cluster["address"], log_to_driver=False)
    holder = Holder.options(scheduling_strategy=NodeAffinitySchedulingStrategy(dgx, soft=False)).remote()
    assert ray.get(holder.ready.remote(), timeout=60)
    ray_cli = Path(sys.executable).parent / "ray"
    drained = subprocess.run([str(ray_cli), "drain-node", "--address", cluster["address"], "--node-id", dgx,
                              "--reason", "DRAIN_NODE_REASON_PREEMPTION", "--reason-message", "xid-79 on GPU 3",
                              "--deadline-remaining-seconds", "3600"], capture_output=True, text=True, timeout=120)
    assert drained.returncode == 0, drained.stdout[-2000:] + drained.stderr[-2000:]
    view = wait_for(lambda: view_json(cluster["address"]),
                    lambda v: any(n["node_id"] == dgx and n["state"] == "draining" for n in v["nodes"]),
                    timeout=60, interval=1, what="the DGX draining in `rayaccel cluster --json`")
    groups = {(g["family"], g["sku"]): g for g in view["groups"]}
    assert groups[("nvidia", "h100-sxm5-80gb")]["draining_nodes"] == 1
    assert all(n["state"] == "alive" for n in view["nodes"] if n["node_id"] != dgx)

    page = tmp_path / "cluster.html"
    done = rayaccel_cluster(cluster["address"], "--html", str(page))
    assert done.returncode == 0 and "wrote the picture" in done.stderr, done.stderr[-2000:]
    dumped = subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                             "--disable-component-update", "--no-first-run", f"--user-data-dir={tmp_path / 'profile'}",
                             "--dump-dom", page.as_uri()], capture_output=True, text=True, timeout=120)
    assert dumped.returncode == 0, dumped.stderr[-2000:]
    classes = Classes()
    classes.feed(dumped.stdout)
    assert classes.count("node") == 5 and classes.count("state-draining") == 1
    assert classes.count("domain") == 3  # the TPU slice, the NVL72 domain, the DGX's NVSwitch


class Classes(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.seen: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.seen.extend(c for name, value in attrs if name == "class" and value for c in value.split())

    def count(self, css_class: str) -> int:
        return self.seen.count(css_class)


def test_the_view_is_built_from_labels_alone_and_escapes_them():
    """No Ray needed: the view of ``ray.nodes()``-shaped records; a label that is markup stays text."""
    nodes = [{"NodeID": "a" * 56, "NodeManagerAddress": "10.0.0.1", "Alive": True, "Resources": {"GPU": 4.0, "CPU": 8},
              "Labels": {"rayaccel.io/family": "nvidia", "rayaccel.io/sku": "<script>alert(1)</script>",
                         "rayaccel.io/count": "4", "rayaccel.io/health": "healthy",
                         "rayaccel.io/scale-up-domain": "d1", "rayaccel.io/scale-up-domain-size": "72"}},
             {"NodeID": "b" * 56, "NodeManagerAddress": "10.0.0.2", "Alive": False, "Resources": {}, "Labels": {}}]
    view = build_view("10.0.0.1:6379", nodes, {}, ["rayaccel-cordon-" + "a" * 56 + "-nvidia-GPU-1"])
    (node, dead) = view.nodes
    assert node.cordoned and node.resources == {"GPU": 4.0} and dead.state == "dead"
    (domain,) = view.domains
    assert (domain.id, domain.size, domain.nodes) == ("d1", 72, ("a" * 56,))
    svg = cluster_svg(view)
    assert "<script" not in svg and "&lt;script&gt;" in svg
    assert view.groups()[0].healthy_nodes == 0  # cordoned: not fully healthy


def test_health_and_device_counts_are_the_monitors_live_ones_not_the_start_time_labels():
    """A node that started with 4 healthy devices and whose monitor now says 3 of 4 take work (one cordoned) is
    degraded, live; where the monitor's status is silent, the labels (marked as such) are all there is."""
    labels = {"rayaccel.io/family": "nvidia", "rayaccel.io/count": "4", "rayaccel.io/health": "healthy"}
    nodes = [{"NodeID": node, "NodeManagerAddress": "10.0.0.1", "Alive": True, "Resources": {"GPU": 4.0},
              "Labels": labels} for node in ("a" * 56, "b" * 56)]
    live = {"loop": "running", "families": {"nvidia": {"devices": 4, "healthy": 3, "health": "degraded",
                                                       "drained": False, "decisions": []}}}
    silent = {**live, "loop": "silent: no status for 400s"}
    view = build_view("10.0.0.1:6379", nodes, {}, ["rayaccel-cordon-" + "a" * 56 + "-nvidia-GPU-1"],
                      {"a" * 56: live, "b" * 56: silent})
    fresh, stale = view.nodes
    assert (fresh.health, fresh.devices, fresh.total_devices, fresh.health_source) == ("degraded", 3, 4, "monitor")
    assert (stale.health, stale.devices, stale.health_source, stale.monitor) == ("healthy", 4, "labels", silent["loop"])
    svg = cluster_svg(view)
    assert "3 of 4 devices take work" in svg and "4 healthy devices" not in svg
    assert view.to_json()["nodes"][0]["health_source"] == "monitor"
    drained = {"loop": "running", "families": {"nvidia": {"devices": 4, "healthy": 0, "health": "unhealthy",
                                                          "drained": True, "decisions": []}}}
    (gone, _) = build_view("10.0.0.1:6379", nodes, {}, [], {"a" * 56: drained}).nodes
    assert gone.drained and gone.devices == 0 and "badge-drained" in cluster_svg(
        build_view("x", nodes[:1], {}, [], {"a" * 56: drained}))


def test_the_command_and_its_options_are_documented():
    text = (Path(__file__).resolve().parents[2] / "docs" / "observability.md").read_text(encoding="utf-8")
    assert "rayaccel cluster --address" in text and "--json" in text and "--html cluster.html" in text


@pytest.mark.parametrize(("address", "expected"), [("foo", "is not HOST:PORT"), ("10.0.0.1:99999", "is not HOST:PORT"),
                                                   ("127.0.0.1:1", "no Ray cluster answers there")])
def test_a_bad_or_silent_address_is_one_line_and_exit_2(address, expected):
    done = rayaccel_cluster(address, "--json")
    assert done.returncode == 2 and expected in done.stderr and not done.stdout
    assert len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr
