"""A real Ray node started with an operator's health policy (``rayaccel start --health-policy``): its monitor
applies the policy, and everywhere the device is scheduled agrees after each step: Ray's resources (the
cordon's placement group holds the drained GPU), the NFD features file, the DRA ResourceSlices file (valid for
Kubernetes at every step), ``rayaccel cluster --json`` (the monitor's live status, not the start-time labels)
and the node's metrics port (the reason and the action taken).

Policy, each rule the opposite of NVIDIA's classification: XID 94 (contained ECC, which NVIDIA's device plugin
drains) only degrades; uncorrectable ECC (NVIDIA: unhealthy, not fatal, so never cordoned live) drains. Steps on
a simulated DGX H100: healthy; XID 94 on GPU 4 (degraded, still scheduled, DRA taint effect None); plus ECC on
GPU 2 (drained: cordoned, NoSchedule); both cleared (all 8 back, GPU 2's cordon removed).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from ports import free_ports

pytestmark = pytest.mark.ray
kubernetes_validate = pytest.importorskip("kubernetes_validate", reason="pip install kubernetes-validate (dev extra)")

GPU4 = "GPU-a62c2f11-60a6-56b5-96cc-2b7ce4439f2e"
GPU2 = "GPU-341cc678-989e-512b-ae44-6b71cf828905"
POLICY = """schema: rayaccel-health-policy/1
families:
  nvidia:
    reasons:
      xid-94: {action: degrade}
      ecc-uncorrectable: {action: drain}
"""
#: DRA's taint effect None is Kubernetes 1.35's; the newest version kubernetes-validate ships too.
K8S_VERSIONS = ("1.35.0", "1.37.0")


@pytest.fixture(scope="module")
def node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """``rayaccel start --head --health-policy ...`` on a simulated DGX H100 (the export files named in its env),
    and this process's driver connected to it."""
    import ray
    from ray.util import get_node_ip_address

    import rayaccel.ray
    from rayaccel.ray.processes import cluster_processes
    from rayaccel.ray.registry import uninstall

    tmp = tmp_path_factory.mktemp("policy-node")
    files = {"policy": tmp / "policy.yaml", "faults": tmp / "faults", "nfd": tmp / "nfd",
             "dra": tmp / "slices.yaml"}
    files["policy"].write_text(POLICY)
    files["faults"].write_text("")
    port, client, agent, agent_grpc, metrics, runtime_env, objects = free_ports(7)
    address = f"{get_node_ip_address()}:{port}"
    # Ray's own metrics_report_interval_ms (10 s by default) at 1 s: each wait for a reason's series on the metrics
    # port waits for a 1 s report.
    env = {**os.environ, "RAY_AUTH_MODE": "disabled", "RAYACCEL_NFD_FILE": str(files["nfd"]),
           "RAYACCEL_DRA_FILE": str(files["dra"]), "RAYACCEL_HEALTH_POLICY": "",
           "RAY_metrics_report_interval_ms": "1000"}
    started = subprocess.run(
        [sys.executable, "-m", "rayaccel", "start", "--head", "--simulate", "nvidia/dgx-h100",
         "--fault-file", str(files["faults"]), "--health-policy", str(files["policy"]), "--monitor-interval", "1",
         f"--port={port}", f"--ray-client-server-port={client}", f"--dashboard-agent-listen-port={agent}",
         f"--dashboard-agent-grpc-port={agent_grpc}", f"--metrics-export-port={metrics}",
         f"--runtime-env-agent-port={runtime_env}", f"--object-manager-port={objects}", "--num-cpus=1",
         "--include-dashboard=false"], capture_output=True, text=True, timeout=180, env=env)
    try:
        assert started.returncode == 0, started.stderr[-3000:]
        rayaccel.ray.connect(address, log_to_driver=False)
        (node_id,) = [n["NodeID"] for n in ray.nodes() if n["Alive"]]
        yield {**files, "node_id": node_id, "address": address, "metrics": f"{get_node_ip_address()}:{metrics}"}
    finally:
        rayaccel.ray.shutdown()
        uninstall()
        if cluster_processes(address):
            subprocess.run([sys.executable, "-m", "rayaccel", "stop", f"--address={address}", "--grace", "3"],
                           capture_output=True, timeout=180, env=env)


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


def scrape(target: str) -> str:
    with urllib.request.urlopen(f"http://{target}/metrics", timeout=5) as response:
        return str(response.read().decode())


def step(node: dict[str, Any], faults: str, takes_work: int, health: str) -> dict[str, dict[str, Any]]:
    """Switch the faults on, wait (bounded) until NFD, DRA and Ray all say ``takes_work`` GPUs take work, then
    check the cluster view says so too, live; the DRA devices of that step."""
    from rayaccel.support.polling import wait_for

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
    from rayaccel.support.polling import wait_for

    devices = step(node, "", 8, "healthy")
    assert not any("taints" in d for d in devices.values())
    assert monitor_status(node["node_id"])["policy"] == str(node["policy"])  # type: ignore[index]

    devices = step(node, "xid-94\n", 8, "degraded")  # NVIDIA: drain; this operator: keep scheduling
    assert devices[GPU4]["taints"] == [{"key": TAINT_KEY, "value": "xid-94", "effect": "None"}]
    status = monitor_status(node["node_id"])
    assert status is not None and not status["cordoned"]
    assert [(d["device"], d["code"], d["rule"], d["action"]) for d in status["families"]["nvidia"]["decisions"]] == [
        (GPU4, "xid-94", "degrade", "degrade")]
    served = wait_for(lambda: scrape(node["metrics"]), lambda text: 'reason="xid-94"' in text, timeout=60,
                      interval=1, retry_on=(OSError,), what="the reason's series on the node's metrics port")
    (line,) = [ln for ln in served.splitlines() if ln.startswith("ray_rayaccel_device_health_reason{")]
    assert f'device="{GPU4}"' in line and 'rule="degrade"' in line and 'action="degrade"' in line

    devices = step(node, "xid-94\necc-uncorrectable\n", 7, "degraded")  # NVIDIA: not fatal; this operator: drain
    assert devices[GPU2]["taints"] == [{"key": TAINT_KEY, "value": "ecc-uncorrectable", "effect": "NoSchedule"}]
    assert devices[GPU4]["taints"][0]["effect"] == "None"
    status = monitor_status(node["node_id"])
    assert status is not None and list(status["cordoned"]["nvidia"]["devices"]) == [GPU2]
    served = wait_for(lambda: scrape(node["metrics"]), lambda text: 'reason="ecc-uncorrectable"' in text,
                      timeout=60, interval=1, retry_on=(OSError,), what="the ECC reason's series on the metrics port")
    (line,) = [ln for ln in served.splitlines()
               if ln.startswith("ray_rayaccel_device_health_reason{") and 'reason="ecc-uncorrectable"' in ln]
    assert f'device="{GPU2}"' in line and 'rule="drain"' in line and 'action="drain"' in line

    devices = step(node, "", 8, "healthy")
    assert not any("taints" in d for d in devices.values())
    status = monitor_status(node["node_id"])
    assert status is not None and not status["cordoned"] and status["recovered"][-1]["device"] == GPU2
