"""Accelerator metrics Prometheus accepts: one metric per quantity in base units, the same names for every
vendor (:mod:`rayaccel.outputs.metric_series`), served by a real Ray node started with ``rayaccel start
--simulate nvidia/dgx-h100``, checked by Debian's ``promtool check metrics`` and read back, device by device,
from a real Prometheus that scrapes the node's metrics export port.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from ports import free_ports

from rayaccel.inventory.builder import collect_inventory
from rayaccel.outputs.metric_series import (
    EXPORT_PREFIX,
    STANDARD,
    all_metric_families,
    counter_increment,
    node_series,
    vendor_metric,
)
from rayaccel.plugins.manager import PluginManager
from rayaccel.records import STANDARD_METRICS, NodeInventory
from rayaccel.simulation.host_factory import make_host
from rayaccel.support.polling import wait_for

FIXTURES = ["nvidia/dgx-h100", "amd/mi300x-cpx-nps4", "tpu/v5p-16-worker0", "neuron/trn2.48xlarge",
            "gaudi/hls-gaudi3"]
UNIT_SUFFIXES = ("_bytes", "_watts", "_celsius", "_ratio", "_bytes_per_second", "_total")
#: Labels Ray's metrics agent adds to every series (camelCase, Ray's choice): set aside before promtool.
RAY_LABELS = re.compile(r'(Component|NodeAddress|SessionName|Version|WorkerId|otel_scope_\w+)="[^"]*",?')
PROMTOOL = shutil.which("promtool") or "/usr/bin/promtool"
PROMETHEUS = shutil.which("prometheus") or "/usr/bin/prometheus"
DGX_DEVICES = 8


def inventory_of(fixture: str) -> NodeInventory:
    manager = PluginManager()
    return collect_inventory(manager, make_host(fixture, [], manager=manager))


# The names, without Ray ------------------------------------------------------------------------------------


def test_every_standard_metric_has_one_prometheus_name_with_a_base_unit_suffix():
    assert set(STANDARD) == set(STANDARD_METRICS)
    names = [m.name for m in all_metric_families()]
    assert len(names) == len(set(names))
    for metric, _ in STANDARD.values():
        assert metric.name.endswith(UNIT_SUFFIXES), metric.name
        assert metric.name.endswith("_total") == (metric.kind == "counter"), metric.name


@pytest.mark.parametrize("fixture", FIXTURES)
def test_every_vendor_publishes_under_the_same_names_and_labels(fixture):
    inventory = inventory_of(fixture)
    series = node_series(inventory, "n1")
    known = {m.name for m in all_metric_families()}
    devices = {d.id for f in inventory.families for d in f.devices}
    for one in series:
        assert one.metric.name in known or one.metric.name.startswith("rayaccel_device_vendor_"), one.metric.name
        assert tuple(one.labels) == one.metric.labels
        assert "metric" not in one.labels and "unit" not in one.labels
    # Every device has its identity, its health and its power in watts.
    for name in ("rayaccel_device_info", "rayaccel_device_health"):
        assert {s.labels["device"] for s in series if s.metric.name == name} == devices, name
    utilisation = [s.value for s in series if s.metric.name == "rayaccel_device_utilization_ratio"]
    assert all(0 <= v <= 1 for v in utilisation)


def test_a_dgx_h100_publishes_its_nvlinks_and_each_gpus_memory_in_bytes():
    inventory = inventory_of("nvidia/dgx-h100")
    series = node_series(inventory, "n1")
    links = [s for s in series if s.metric.name == "rayaccel_link_bandwidth_bytes_per_second"]
    assert len(links) == len(inventory.families[0].topology.links) > 0
    assert {s.labels["kind"] for s in links} <= {"nvlink", "nvswitch"}
    capacity = [s.value for s in series if s.metric.name == "rayaccel_device_memory_capacity_bytes"]
    assert len(capacity) == DGX_DEVICES and all(v >= 80 * 10**9 for v in capacity)


def test_each_partition_profile_publishes_its_schedulable_partitions_and_a_fault_takes_one_off():
    def partitions(faults: list[str]) -> dict[str, float]:
        manager = PluginManager()
        inventory = collect_inventory(manager, make_host("nvidia/a100-80gb-mig-mixed", faults, manager=manager))
        return {s.labels["resource"]: s.value for s in node_series(inventory, "n1")
                if s.metric.name == "rayaccel_schedulable_partitions"}

    assert partitions([]) == {"GPU_MIG_3g.40gb": 1.0, "GPU_MIG_2g.20gb": 2.0}
    assert partitions(["mig-instance-xid-95"]) == {"GPU_MIG_3g.40gb": 1.0, "GPU_MIG_2g.20gb": 1.0}
    # A faulted parent offers none of its partitions (the profile is gone, or at zero).
    assert not any(partitions(["mig-parent-xid-79"]).values())


def test_vendor_metrics_get_a_snake_case_name_in_base_units():
    metric, factor = vendor_metric("vendor.duty_cycle", "percent")
    assert (metric.name, factor) == ("rayaccel_device_vendor_duty_cycle_ratio", 0.01)
    metric, factor = vendor_metric("vendor.Link-Retries", "count")
    assert (metric.name, factor) == ("rayaccel_device_vendor_link_retries", 1.0)
    metric, _ = vendor_metric("vendor.clock", "megahertz")
    assert metric.name == "rayaccel_device_vendor_clock_megahertz"


def test_a_counter_follows_the_devices_running_count_and_starts_over_when_it_resets():
    assert counter_increment(None, 5) == 5
    assert counter_increment(5, 7) == 2
    assert counter_increment(7, 7) == 0
    assert counter_increment(7, 3) == 3


# A real node, promtool and a real Prometheus ---------------------------------------------------------------


def rayaccel_cli(*args: str, timeout: float = 180) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "rayaccel", *args], capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, "RAY_AUTH_MODE": "disabled"})


@pytest.fixture(scope="module")
def dgx_node() -> Iterator[dict[str, Any]]:
    from ray.util import get_node_ip_address

    from rayaccel.ray.processes import cluster_processes

    port, client, agent, agent_grpc, metrics, runtime_env, objects, dashboard = free_ports(8)
    ip = get_node_ip_address()
    address = f"{ip}:{port}"
    started = rayaccel_cli(
        "start", "--head", "--simulate", "nvidia/dgx-h100", "--monitor-interval", "1", f"--port={port}",
        f"--ray-client-server-port={client}", f"--dashboard-agent-listen-port={agent}",
        f"--dashboard-agent-grpc-port={agent_grpc}", f"--metrics-export-port={metrics}",
        f"--runtime-env-agent-port={runtime_env}", f"--object-manager-port={objects}", "--num-cpus=1",
        f"--dashboard-port={dashboard}",  # Ray's dashboard: it sets up Grafana's dashboards folder
        "--include-log-monitor=false")  # it tails workers' logs for drivers that take their output: none here
    try:
        assert started.returncode == 0, started.stderr[-3000:]
        yield {"address": address, "metrics": f"{ip}:{metrics}", "stdout": started.stdout}
    finally:
        if cluster_processes(address):
            rayaccel_cli("stop", f"--address={address}", "--grace", "3")


def scrape(target: str) -> str:
    with urllib.request.urlopen(f"http://{target}/metrics", timeout=5) as response:
        return str(response.read().decode())


def rayaccel_exposition(text: str) -> str:
    """The node's rayaccel metric families alone (HELP, TYPE and samples), Ray's own labels set aside."""
    kept: list[str] = []
    for line in text.splitlines():
        name = line.split()[2] if line.startswith("# ") and len(line.split()) > 2 else line
        if name.startswith(EXPORT_PREFIX + "rayaccel_"):
            kept.append(RAY_LABELS.sub("", line).replace(",}", "}"))
    return "\n".join(kept) + "\n"


def device_count(text: str, metric: str) -> int:
    return len({m for m in re.findall(rf'^{metric}{{[^}}]*device="([^"]+)"', text, re.MULTILINE)})


@pytest.fixture(scope="module")
def served(dgx_node: dict[str, Any]) -> str:
    """What the node serves once every GPU's health, power, temperature, memory and NVLink rates have been exported
    (a rate needs two counter samples: a scrape after the first has none yet)."""
    wanted = [EXPORT_PREFIX + n for n in ("rayaccel_device_health", "rayaccel_device_power_watts",
                                          "rayaccel_device_temperature_celsius", "rayaccel_device_memory_used_bytes",
                                          "rayaccel_device_interconnect_transmit_bytes_per_second",
                                          "rayaccel_device_interconnect_receive_bytes_per_second")]
    return wait_for(lambda: scrape(dgx_node["metrics"]),
                    lambda text: all(device_count(text, m) == DGX_DEVICES for m in wanted),
                    timeout=90, interval=1, retry_on=(OSError,),
                    what=f"8 GPUs' {', '.join(wanted)} at {dgx_node['metrics']}/metrics")


def test_promtool_accepts_what_the_node_serves(served: str, tmp_path: Path):
    exposition = rayaccel_exposition(served)
    # Every fixed family but the ECC counters (served once they count), the partition gauge (a DGX H100
    # here has no MIG instances) and the health reasons (served while a device reports one).
    absent = {"rayaccel_device_ecc_errors_corrected_total", "rayaccel_device_ecc_errors_uncorrected_total",
              "rayaccel_schedulable_partitions", "rayaccel_device_health_reason"}
    typed = set(re.findall(r"^# TYPE (\S+) ", exposition, re.MULTILINE))
    missing = {EXPORT_PREFIX + m.name for m in all_metric_families() if m.name not in absent} - typed
    assert not missing, missing
    path = tmp_path / "rayaccel.prom"
    path.write_text(exposition, encoding="utf-8")
    with path.open("rb") as stdin:
        done = subprocess.run([PROMTOOL, "check", "metrics"], stdin=stdin, capture_output=True, text=True, timeout=30)
    assert done.returncode == 0 and not done.stdout.strip() and not done.stderr.strip(), done.stdout + done.stderr


def test_the_old_metric_label_is_gone(served: str):
    assert "rayaccel_device_metric" not in served
    assert 'metric="' not in rayaccel_exposition(served)


@pytest.fixture(scope="module")
def prometheus(dgx_node: dict[str, Any], tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A real Prometheus on 127.0.0.1 scraping the node's metrics export port every second."""
    (port,) = free_ports(1)
    home = tmp_path_factory.mktemp("prometheus")
    config = home / "prometheus.yml"
    config.write_text(json.dumps({"global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
                                  "scrape_configs": [{"job_name": "ray",
                                                      "static_configs": [{"targets": [dgx_node["metrics"]]}]}]}),
                      encoding="utf-8")
    log = (home / "prometheus.log").open("wb")
    process = subprocess.Popen([PROMETHEUS, f"--config.file={config}", f"--storage.tsdb.path={home / 'data'}",
                                f"--web.listen-address=127.0.0.1:{port}"], stdout=log, stderr=subprocess.STDOUT)
    try:
        url = f"http://127.0.0.1:{port}"
        wait_for(lambda: urllib.request.urlopen(f"{url}/-/ready", timeout=5).status, lambda s: s == 200,
                 timeout=60, interval=0.5, retry_on=(OSError,), what=f"Prometheus ready at {url}")
        yield url
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=30)
        log.close()


def promql(url: str, query: str) -> list[dict[str, Any]]:
    with urllib.request.urlopen(f"{url}/api/v1/query?" + urllib.parse.urlencode({"query": query}),
                                timeout=10) as response:
        answer = json.loads(response.read())
    assert answer["status"] == "success", answer
    return list(answer["data"]["result"])


@pytest.mark.parametrize("metric", ["rayaccel_device_health", "rayaccel_device_info",
                                    "rayaccel_device_power_watts", "rayaccel_device_temperature_celsius",
                                    "rayaccel_device_memory_used_bytes", "rayaccel_device_memory_capacity_bytes",
                                    "rayaccel_device_utilization_ratio"])
def test_prometheus_reads_every_gpus_series_back_with_promql(prometheus: str, served: str, metric: str):
    query = f"{EXPORT_PREFIX}{metric}"
    results = wait_for(lambda: promql(prometheus, query),
                       lambda found: len({r["metric"].get("device") for r in found}) == DGX_DEVICES,
                       timeout=60, interval=1, retry_on=(OSError,), what=f"8 GPUs in Prometheus for {query}")
    assert all(r["metric"]["family"] == "nvidia" for r in results)
    values = [float(r["value"][1]) for r in results]
    if metric == "rayaccel_device_health":
        assert values == [0.0] * DGX_DEVICES
    if metric == "rayaccel_device_utilization_ratio":
        assert all(0 <= v <= 1 for v in values)


def test_prometheus_sums_the_nodes_memory_in_bytes(prometheus: str, served: str):
    query = f"sum({EXPORT_PREFIX}rayaccel_device_memory_capacity_bytes)"
    (total,) = wait_for(lambda: promql(prometheus, query), lambda found: len(found) == 1, timeout=60,
                        interval=1, retry_on=(OSError,), what=f"{query} in Prometheus")
    assert float(total["value"][1]) >= DGX_DEVICES * 80 * 10**9


def test_every_metric_is_in_the_observability_docs():
    text = (Path(__file__).resolve().parents[2] / "docs" / "observability.md").read_text(encoding="utf-8")
    for metric in all_metric_families():
        assert f"| `{metric.exported}` |" in text, metric.exported
    for name in ("bytes_total", "transfers_total", "failures_total", "latency_seconds"):
        assert f"`ray_rayaccel_transport_{name}`" in text


# The Grafana dashboard --------------------------------------------------------------------------------------


def test_rayaccel_start_writes_the_dashboard_beside_rays_own(dgx_node: dict[str, Any]):
    from rayaccel.outputs.grafana_dashboard import FILE_NAME, UID

    (line,) = [ln for ln in dgx_node["stdout"].splitlines() if "Grafana dashboard" in ln]
    path = Path(line.rsplit(": ", 1)[1])
    assert path.name == FILE_NAME and (path.parent / "default_grafana_dashboard.json").is_file()  # Ray's own
    provisioning = path.parent.parent / "provisioning" / "dashboards" / "default.yml"
    assert str(path.parent) in provisioning.read_text(encoding="utf-8")  # the folder Ray's Grafana loads
    board = json.loads(path.read_text(encoding="utf-8"))
    assert board["uid"] == UID and len(board["panels"]) > 10


def test_every_dashboard_query_is_valid_promql_and_the_device_panels_show_every_gpu(prometheus: str, served: str):
    from rayaccel.outputs.grafana_dashboard import panels

    for row, row_panels in panels():
        for title, _, expr, _ in row_panels:
            query = expr.replace("$node", ".*").replace("$family", ".*")
            # Counters that have not counted yet, the partition gauge (this DGX H100 runs no MIG instances) and the
            # health reasons (its GPUs report none): valid, maybe empty.
            if row in ("Errors", "Tensor transports") or "rayaccel_schedulable_partitions" in expr or (
                    "rayaccel_device_health_reason" in expr):
                promql(prometheus, query)
                continue
            found = wait_for(lambda q=query: promql(prometheus, q), timeout=60, interval=1, retry_on=(OSError,),
                             what=f"data for the dashboard panel {title!r}: {query}")
            if "{{device}}" in expr or "device" in "".join(r["metric"].get("device", "") for r in found[:1]):
                assert len({r["metric"].get("device") for r in found}) == DGX_DEVICES, title


# The tensor transport's metrics --------------------------------------------------------------------------


def test_the_transports_metrics_pass_promtool_after_a_transfer(dgx_node: dict[str, Any], tmp_path: Path):
    """RAYACCEL_SHM moves a tensor between two actors on the node; its counters and latency histogram then
    appear on the node's metrics port under Prometheus' names, and promtool accepts them."""
    torch = pytest.importorskip("torch", reason="the transports need torch: pip install 'rayaccel[rdt]'")
    import ray

    import rayaccel.ray
    from rayaccel.transports.shared_memory import NAME

    @ray.remote(num_cpus=0, enable_tensor_transport=True)
    class Sender:
        def tensors(self) -> list[Any]:
            return [torch.ones(4096, dtype=torch.int8)]

    @ray.remote(num_cpus=0, enable_tensor_transport=True)
    class Receiver:
        def total(self, tensors: list[Any]) -> int:
            return int(sum(int(t.sum()) for t in tensors))

    rayaccel.ray.connect(dgx_node["address"], log_to_driver=False)
    try:
        sender, receiver = Sender.remote(), Receiver.remote()
        assert ray.get(receiver.total.remote(sender.tensors.options(tensor_transport=NAME).remote()),
                       timeout=120) == 4096
        names = [EXPORT_PREFIX + n for n in ("rayaccel_transport_bytes_total", "rayaccel_transport_transfers_total",
                                             "rayaccel_transport_latency_seconds_count")]
        text = wait_for(lambda: scrape(dgx_node["metrics"]),
                        lambda t: all(re.search(rf"^{n}{{", t, re.MULTILINE) for n in names),
                        timeout=60, interval=1, retry_on=(OSError,), what=f"{names} at {dgx_node['metrics']}")
    finally:
        rayaccel.ray.shutdown()
    transferred = [float(ln.rsplit(" ", 1)[1]) for ln in text.splitlines()
                   if ln.startswith(EXPORT_PREFIX + "rayaccel_transport_bytes_total{") and f'transport="{NAME}"' in ln]
    assert transferred and sum(transferred) >= 4096
    path = tmp_path / "transport.prom"
    path.write_text(rayaccel_exposition(text), encoding="utf-8")
    with path.open("rb") as stdin:
        done = subprocess.run([PROMTOOL, "check", "metrics"], stdin=stdin, capture_output=True, text=True, timeout=30)
    assert done.returncode == 0 and not done.stdout.strip() and not done.stderr.strip(), done.stdout + done.stderr


def test_rayaccel_start_says_where_the_accelerator_metrics_are_served(dgx_node: dict[str, Any]) -> None:
    (line,) = [ln for ln in dgx_node["stdout"].splitlines() if "accelerator metrics" in ln]
    assert f"http://{dgx_node['metrics']}/metrics" in line, line
