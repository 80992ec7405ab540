"""Ray's ``ray.io/gpu-domain`` in the export formats (issue 38): the node's own label reaches Ray with the node's
env; a node type (KubeRay group) never promises one domain's id; NFD keeps rayaccel's key only."""

from __future__ import annotations

import json
import subprocess
import sys

import yaml

from rayaccel.labels import node_own_label

FIXTURE = "nvidia/dgx-h100"


def export(fmt: str, *extra: str) -> str:
    done = subprocess.run([sys.executable, "-m", "rayaccel", "export", "--format", fmt, "--simulate", FIXTURE, *extra],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_ray_start_gives_ray_the_gpu_domain_through_its_override_env_not_the_labels_flag():
    line = json.loads(export("ray-start", "--json"))
    assert json.loads(line["env"]["RAY_OVERRIDE_LABELS"])["ray.io/gpu-domain"] == "dgx-h100-01-nvswitch"
    assert not any("ray.io/" in arg for arg in line["argv"] if arg.startswith("--labels"))


def test_a_kuberay_group_and_nfd_leave_the_gpu_domain_to_each_node():
    text = export("kuberay")
    group = next(doc for doc in yaml.safe_load_all(text) if doc)
    assert "ray.io/gpu-domain" not in text and "rayaccel.io/scale-up-domain-kind" in text, group
    nfd = export("nfd")
    assert "ray.io/gpu-domain" not in nfd and "rayaccel.io/scale-up-domain=dgx-h100-01-nvswitch" in nfd


def test_node_types_leave_out_the_gpu_domain_as_one_nodes_state():
    # Autoscaler node types and KubeRay groups drop what names one node: a type promising one domain's id
    # would send Ray's topology placement to a node that is in another.
    assert node_own_label("ray.io/gpu-domain") and node_own_label("rayaccel.io/scale-up-domain")
    assert not node_own_label("ray.io/accelerator-type") and not node_own_label("rayaccel.io/scale-up-domain-kind")
