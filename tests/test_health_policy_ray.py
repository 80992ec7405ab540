"""A real Ray node started with an operator's health policy: its monitor applies the policy, and everywhere the
device is scheduled agrees after each step: Ray's resources (the cordon's placement group holds the drained GPU),
the NFD features file, the DRA ResourceSlices file (valid for Kubernetes at every step) and ``rayaccel cluster
--json`` (the monitor's live status, not the start-time labels).

Policy: XID 94 (contained ECC, which NVIDIA classifies non-fatal) drains; uncorrectable ECC (NVIDIA: unhealthy)
only degrades. Steps on a simulated DGX H100: healthy; XID 94 on GPU 4 (drained); plus ECC on GPU 2 (degraded,
still scheduled, DRA taint effect None); both cleared (all 8 back).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

pytestmark = pytest.mark.ray
kubernetes_validate = pytest.importorskip("kubernetes_validate", reason="pip install kubernetes-validate (dev extra)")

GPU4 = "GPU-a62c2f11-60a6-56b5-96cc-2b7ce4439f2e"
GPU2 = "GPU-341cc678-989e-512b-ae44-6b71cf828905"
POLICY = """schema: rayaccel-health-policy/1
families:
  nvidia:
    reasons:
      xid-94: {action: drain}
      ecc-uncorrectable: {action: degrade}
"""
#: DRA's taint effect None is Kubernetes 1.35's; the newest version kubernetes-validate ships too.
K8S_VERSIONS = ("1.35.0", "1.37.0")


@pytest.fixture(scope="module")
def node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    import ray

    import rayaccel.ray
    from rayaccel.ray.registry import uninstall

    tmp = tmp_path_factory.mktemp("policy-node")
    files = {"policy": tmp / "policy.yaml", "faults": tmp / "faults", "nfd": tmp / "nfd",
             "dra": tmp / "slices.yaml"}
    files["policy"].write_text(POLICY)
    files["faults"].write_text("")
    with pytest.MonkeyPatch.context() as env:  # the node's env: its raylet, the monitor and its workers inherit it
        env.setenv("RAYACCEL_HEALTH_POLICY", str(files["policy"]))
        env.setenv("RAYACCEL_NFD_FILE", str(files["nfd"]))
        env.setenv("RAYACCEL_DRA_FILE", str(files["dra"]))
        env.setenv("RAY_AUTH_MODE", "disabled")
        rayaccel.ray.init(simulate="nvidia/dgx-h100", fault_file=str(files["faults"]), monitor=True,
                          monitor_interval=1.0, num_cpus=1, include_dashboard=False, log_to_driver=False)
        try:
            yield {**files, "node_id": ray.get_runtime_context().get_node_id(),
                   "address": ray.get_runtime_context().gcs_address}
        finally:
            rayaccel.ray.shutdown()
            uninstall()


def nfd_count(path: Path) -> int | None:
    if not path.exists():
        return None
    labels = dict(ln.split("=", 1) for ln in path.read_text().splitlines() if ln[:1] != "#")
    return int(labels["rayaccel.io/count"])


def dra_devices(path: Path) -> dict[str, dict[str, Any]]:
    """Device uuid -> its DRA device, each slice validated for Kubernetes first."""
    slices = list(yaml.safe_load_all(path.read_text()))
    for item in slices:
        for version in K8S_VERSIONS:
            kubernetes_validate.validate(item, version, strict=True)
    return {d["attributes"]["uuid"]["string"]: d for s in slices for d in s["spec"].get("devices", [])}


def scheduled(node: dict[str, Any]) -> tuple[int | None, int | None, float]:
    """(NFD's count, DRA devices without a NoSchedule taint, GPUs Ray offers): what each says takes work."""
    import ray

    dra = None
    if node["dra"].exists():
        devices = dra_devices(node["dra"])
        dra = sum(1 for d in devices.values() if all(t["effect"] != "NoSchedule" for t in d.get("taints", [])))
    return nfd_count(node["nfd"]), dra, float(ray.available_resources().get("GPU", 0))


def cluster_node(node: dict[str, Any]) -> dict[str, Any]:
    done = subprocess.run([sys.executable, "-m", "rayaccel", "cluster", "--address", node["address"], "--json"],
                          capture_output=True, text=True, timeout=120, env=dict(os.environ, RAY_AUTH_MODE="disabled"))
    assert done.returncode == 0, done.stderr[-3000:]
    (found,) = [n for n in json.loads(done.stdout)["nodes"] if n["node_id"] == node["node_id"]]
    return dict(found)


def step(node: dict[str, Any], faults: str, takes_work: int, health: str) -> dict[str, dict[str, Any]]:
    """Switch the faults on, wait (bounded) until NFD, DRA and Ray all say ``takes_work`` GPUs take work, then
    check the cluster view says so too, live; the DRA devices of that step."""
    from rayaccel.polling import wait_for

    node["faults"].write_text(faults)
    expected = (takes_work, takes_work, float(takes_work))
    wait_for(lambda: scheduled(node), lambda seen: seen == expected, timeout=90, interval=0.5,
             what=f"NFD, DRA and Ray to agree on {takes_work} GPUs taking work with faults {faults.split()}")
    seen = wait_for(lambda: cluster_node(node), lambda n: (n["devices"], n["health"]) == (takes_work, health),
                    timeout=60, interval=1, what=f"rayaccel cluster --json to show {takes_work} GPUs, {health}")
    assert seen["health_source"] == "monitor" and seen["total_devices"] == 8 and not seen["drained"]
    return dra_devices(node["dra"])


@pytest.mark.timeout(420)
def test_the_monitor_applies_the_operators_policy_everywhere_the_gpu_is_scheduled(node: dict[str, Any]) -> None:
    from rayaccel.outputs.exporters.dra import TAINT_KEY
    from rayaccel.ray.monitor import monitor_status

    devices = step(node, "", 8, "healthy")
    assert not any("taints" in d for d in devices.values())
    assert monitor_status(node["node_id"])["policy"] == str(node["policy"])  # type: ignore[index]

    devices = step(node, "xid-94\n", 7, "degraded")  # NVIDIA: keep scheduling; this operator: drain
    assert devices[GPU4]["taints"] == [{"key": TAINT_KEY, "value": "xid-94", "effect": "NoSchedule"}]
    status = monitor_status(node["node_id"])
    assert status is not None and GPU4 in status["cordoned"]["nvidia"]["devices"]
    assert [(d["device"], d["code"], d["rule"], d["action"]) for d in status["families"]["nvidia"]["decisions"]] == [
        (GPU4, "xid-94", "drain", "drain")]

    devices = step(node, "xid-94\necc-uncorrectable\n", 7, "degraded")  # NVIDIA: unhealthy; this operator: degrade
    assert devices[GPU2]["taints"] == [{"key": TAINT_KEY, "value": "ecc-uncorrectable", "effect": "None"}]
    assert devices[GPU4]["taints"][0]["effect"] == "NoSchedule"

    devices = step(node, "", 8, "healthy")
    assert not any("taints" in d for d in devices.values())
    status = monitor_status(node["node_id"])
    assert status is not None and not status["cordoned"] and status["recovered"][-1]["device"] == GPU4
