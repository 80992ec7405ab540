"""A plugin's collective backend and tensor transport on a real Ray node, with nothing but the installed plugin:
``ray.util.collective`` groups of actors use its backend (registered by the bridge in the driver and in every
worker), and its own transport's transfers, bytes and failures reach the node's Prometheus endpoint, measured by
the bridge (the plugin has no metrics code). One node for the module (``rayaccel.ray.init``)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest
import ray
from ports import free_ports

import rayaccel.ray
from rayaccel.ray.registry import uninstall
from rayaccel.support.polling import wait_for
from rayaccel_conformance.harness.exits import released

torch = pytest.importorskip("torch", reason="collectives and transports need torch: pip install 'rayaccel[rdt]'")

from rayaccel_testplugins.acme_wired import files  # noqa: E402  (imports Ray's RDT classes, which need torch)

pytestmark = pytest.mark.ray
TRANSPORT = "ACME_FILE"
EXPORTED = "ray_rayaccel_transport_"
PROMTOOL = shutil.which("promtool") or "/usr/bin/promtool"
#: Labels Ray's metrics agent adds to every series (camelCase, Ray's choice): set aside before promtool.
RAY_LABELS = re.compile(r'(Component|NodeAddress|SessionName|Version|WorkerId|otel_scope_\w+)="[^"]*",?')


@pytest.fixture(scope="module")
def metrics_port() -> Iterator[str]:
    env = pytest.MonkeyPatch()  # undone after the node stops: the module's settings leave with it
    env.setenv("RAYACCEL_PLUGINS", "acme=rayaccel_testplugins.acme_wired")
    # Each worker reports its counters to the node's agent once per Ray's metrics report interval (10 s by
    # default): every wait for a served count would wait for the next report; Ray's own setting makes it 1 s.
    env.setenv("RAY_metrics_report_interval_ms", "1000")
    (port,) = free_ports(1)
    try:
        rayaccel.ray.init(simulate="acme/acme-4", plugins=["acme"], num_cpus=4, include_dashboard=False,
                          log_to_driver=False, _metrics_export_port=port)
        yield f"{ray.util.get_node_ip_address()}:{port}"
    finally:
        rayaccel.ray.shutdown()
        uninstall()
        env.undo()


@ray.remote(resources={"ACME": 1})
class Member:
    """A group member: no registration of its own, only Ray's collective API."""

    def collective_loaded(self) -> bool:
        return "ray.util.collective" in sys.modules

    def allreduce(self, rank: int) -> list[float]:
        import ray.util.collective as col

        tensor = torch.full((4,), float(rank + 1))
        col.allreduce(tensor, group_name="acme")
        return tensor.tolist()

    def broadcast(self, rank: int) -> list[float]:
        import ray.util.collective as col

        tensor = torch.arange(5, dtype=torch.float32) * 10 if rank == 0 else torch.zeros(5)
        col.broadcast(tensor, src_rank=0, group_name="acme")
        return tensor.tolist()

    def group_class(self) -> str:
        import ray.util.collective as col

        group = col.get_group_handle("acme")
        return f"{type(group).__module__}:{type(group).__name__}"


def test_a_collective_group_over_two_actors_uses_the_backend_only_the_plugin_registered(metrics_port: str) -> None:
    from ray.util.collective.backend_registry import _global_registry
    from ray.util.collective.collective import create_collective_group

    from rayaccel_testplugins.acme_collective import AcmeGlooGroup

    assert _global_registry.get("ACME_GLOO") is AcmeGlooGroup  # the driver: rayaccel.ray.init registered it
    members = [Member.remote() for _ in range(2)]
    # The workers have not imported ray.util.collective yet (it costs a second): they register on that import.
    assert ray.get([m.collective_loaded.remote() for m in members], timeout=120) == [False, False]
    create_collective_group(members, world_size=2, ranks=[0, 1], backend="ACME_GLOO", group_name="acme")
    assert ray.get([m.allreduce.remote(rank) for rank, m in enumerate(members)], timeout=120) == [[3.0] * 4] * 2
    assert ray.get([m.broadcast.remote(rank) for rank, m in enumerate(members)], timeout=120) == \
        [[0.0, 10.0, 20.0, 30.0, 40.0]] * 2
    assert ray.get(members[1].group_class.remote(), timeout=60) == "rayaccel_testplugins.acme_collective:AcmeGlooGroup"
    for m in members:
        ray.kill(m)


@ray.remote(num_cpus=0, enable_tensor_transport=True)
class Sender:
    def make(self, seed: int) -> int:
        g = torch.Generator().manual_seed(seed)
        self.tensors = [torch.randint(0, 100, (1000,), dtype=torch.int32, generator=g),
                        torch.rand(3, 7, generator=g), torch.zeros(0), torch.ones(5, dtype=torch.int8)]
        return sum(t.numel() * t.element_size() for t in self.tensors)

    def tensors_ref(self) -> list[Any]:
        return self.tensors

    def pid(self) -> int:
        return os.getpid()


@ray.remote(num_cpus=0, enable_tensor_transport=True)
class Receiver:
    def total(self, tensors: list[Any]) -> int:
        return sum(t.numel() * t.element_size() for t in tensors)


def scrape(target: str) -> str:
    with urllib.request.urlopen(f"http://{target}/metrics", timeout=5) as response:
        return str(response.read().decode())


def served(target: str, metric: str, **labels: str) -> float:
    """The sum over the node's workers of one exported series."""
    text = scrape(target)
    total = 0.0
    for line in text.splitlines():
        m = re.match(rf"^{EXPORTED}{metric}{{(.*)}} (\S+)$", line)
        if m and all(f'{k}="{v}"' in m.group(1) for k, v in labels.items()):
            total += float(m.group(2))
    return total


def wait_served(target: str, metric: str, want: float, **labels: str) -> None:
    wait_for(lambda: served(target, metric, **labels), lambda got: got == want, timeout=90, interval=1,
             retry_on=(OSError,), what=f"{EXPORTED}{metric}{labels} == {want} at {target}")


def test_the_plugins_own_transport_reports_exact_counts_and_bytes_and_a_killed_peer_on_the_nodes_endpoint(
        metrics_port: str) -> None:
    sender, receiver = Sender.remote(), Receiver.remote()
    nbytes = ray.get(sender.make.remote(1), timeout=120)
    assert nbytes == 4000 + 84 + 0 + 5
    for _ in range(3):
        ref = sender.tensors_ref.options(tensor_transport=TRANSPORT).remote()
        assert ray.get(receiver.total.remote(ref), timeout=120) == nbytes
        del ref
    for direction in ("send", "recv"):  # one-sided: the sender's part is extract
        wait_served(metrics_port, "transfers_total", 3, transport=TRANSPORT, direction=direction)
        wait_served(metrics_port, "bytes_total", 3 * nbytes, transport=TRANSPORT, direction=direction)
    wait_served(metrics_port, "latency_seconds_count", 3, transport=TRANSPORT, direction="recv")
    assert served(metrics_port, "failures_total", transport=TRANSPORT) == 0
    families = "\n".join(RAY_LABELS.sub("", line).replace(",}", "}") for line in scrape(metrics_port).splitlines()
                         if EXPORTED in line.split("{")[0]) + "\n"
    assert f'transport="{TRANSPORT}"' in families and f"# TYPE {EXPORTED}latency_seconds histogram" in families
    checked = subprocess.run([PROMTOOL, "check", "metrics"], input=families, capture_output=True, text=True,
                             timeout=30)
    assert checked.returncode == 0 and not (checked.stdout + checked.stderr).strip(), checked.stdout + checked.stderr

    # The peer dies mid-transfer: the sender wrote its tensors and is killed before the receiver reads them.
    pid = ray.get(sender.pid.remote(), timeout=60)
    ref = sender.tensors_ref.options(tensor_transport=TRANSPORT).remote()
    wait_for(files, lambda found: any(f"-{pid}-" in f for f in found), timeout=60, what="the sender's file")
    ray.kill(sender)
    wait_for(lambda: released(pid),
             timeout=60, what="the killed sender gone")
    with pytest.raises(ray.exceptions.RayError, match=rf"{TRANSPORT} transfer failed at step 'recv' \(receiver actor "
                       rf"[0-9a-f]+\): RuntimeError: the sender \(pid {pid}\) died"):
        ray.get(receiver.total.remote(ref), timeout=120)
    del ref
    assert not [f for f in files() if f"-{pid}-" in f], "the receiver freed what the dead sender left"
    wait_served(metrics_port, "failures_total", 1, transport=TRANSPORT, direction="recv", step="recv")

    # The next transfer, to the same receiver, works and is counted.
    other = Sender.remote()
    assert ray.get(other.make.remote(2), timeout=120) == nbytes
    ref = other.tensors_ref.options(tensor_transport=TRANSPORT).remote()
    assert ray.get(receiver.total.remote(ref), timeout=120) == nbytes
    del ref
    wait_served(metrics_port, "transfers_total", 4, transport=TRANSPORT, direction="recv")
    wait_served(metrics_port, "bytes_total", 4 * nbytes, transport=TRANSPORT, direction="recv")
    other_pid = ray.get(other.pid.remote(), timeout=60)
    # This test's senders only: other tests' runs on the machine write the same transport's files meanwhile.
    wait_for(lambda: [f for f in files() if f"-{pid}-" in f or f"-{other_pid}-" in f], lambda left: not left,
             timeout=60, what="none of this test's acme-file-* left once the refs are freed")
    for a in (other, receiver):
        ray.kill(a)
