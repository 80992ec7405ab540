"""``rayaccel enable``: plain ``ray start`` and ``ray.init()`` (no rayaccel command, no rayaccel call) load the plugins.

Everything runs in scratch virtual environments layered over the project's (``venv --without-pip`` plus a .pth
adding the project's site-packages): ``rayaccel enable`` writes its file there, never into the shared .venv, and
the scratch directory is removed at the end whatever happens. Ray is real: a head started with Ray's own ``ray
start`` on the simulated ACME node (the test plugins load through ``RAYACCEL_PLUGINS``, as installed entry points
would), a second node joining it, a local node started by a fresh driver's ``ray.init()``; and the template's bake
installed with pip into a venv of its own, found by its entry point alone; each stopped by its address (or by
the driver that started it).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from ports import free_ports

from rayaccel.ray.activation import PTH_NAME, site_packages
from rayaccel.ray.node_start import gcs_client, ray_status
from rayaccel.support.polling import wait_for

PLUGINS = "acme=rayaccel_testplugins.acme,broken-import=rayaccel_testplugins.broken_import"
SIMULATED = {"RAYACCEL_PLUGINS": PLUGINS, "RAYACCEL_SIMULATE": "acme/acme-4"}

#: What a driver sees of the cluster: resources, each node's labels, the id each of 4 one-ACME tasks running at
#: once (then 4 actors) sees in ACME_VISIBLE_DEVICES and in get_accelerator_ids, and whether this driver refuses
#: half an ACME.
PROBE = r"""
import json, os, sys
import ray
address = sys.argv[1]
if address == "local":
    ray.init(address="local", num_cpus=1, include_dashboard=False, log_to_driver=False)
else:
    ray.init(address=address, log_to_driver=False)

@ray.remote(num_cpus=0, resources={"ACME": 1})
class Holder:
    def ids(self):
        return os.environ.get("ACME_VISIBLE_DEVICES"), ray.get_runtime_context().get_accelerator_ids().get("ACME")

node = sys.argv[2] if len(sys.argv) > 2 else None
options = {}
if node:
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy
    options["scheduling_strategy"] = NodeAffinitySchedulingStrategy(node, soft=False)
@ray.remote(num_cpus=0, resources={"ACME": 1})
def task_ids(meet, n):
    met = ray.get(meet.arrive.remote("tasks", n, 120))  # all n hold their unit at once
    return met, os.environ.get("ACME_VISIBLE_DEVICES"), ray.get_runtime_context().get_accelerator_ids().get("ACME")

count = int(sys.argv[3]) if len(sys.argv) > 3 else 4
tasks = []
if count:
    from rendezvous import rendezvous
    meet = rendezvous()
    tasks = ray.get([task_ids.options(**options).remote(meet, count) for _ in range(count)], timeout=180)
    assert all(met for met, _, _ in tasks), tasks
    tasks = [[env, ids] for _, env, ids in tasks]
holders = [Holder.options(**options).remote() for _ in range(count)]
seen = ray.get([h.ids.remote() for h in holders], timeout=120)
try:
    Holder.options(resources={"ACME": 0.5})
    refused = None
except ValueError as e:
    refused = str(e)
print(json.dumps({"resources": ray.cluster_resources(), "tasks": tasks,
                  "labels": {n["NodeID"]: n["Labels"] for n in ray.nodes() if n["Alive"]},
                  "seen": seen, "refused": refused}))
"""


@dataclass(frozen=True)
class Scratch:
    """A virtual environment over the project's: its own site-packages, the project's packages importable."""

    root: Path
    python: str
    site: Path

    def run(self, *argv: str, env: dict[str, str] | None = None, timeout: float = 240,
            python: str | None = None) -> subprocess.CompletedProcess[str]:
        return subprocess.run([python or self.python, *argv], capture_output=True, text=True, timeout=timeout,
                              env={**os.environ, **(env or {})})

    def rayaccel(self, *args: str) -> subprocess.CompletedProcess[str]:
        return self.run("-m", "rayaccel", *args)

    def files(self) -> dict[str, bytes]:
        return {str(p.relative_to(self.root)): p.read_bytes() for p in sorted(self.root.rglob("*")) if p.is_file()}


def make_scratch(root: Path) -> Scratch:
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root / "venv")], check=True, timeout=120)
    python = str(root / "venv" / "bin" / "python")
    site = Path(subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                               capture_output=True, text=True, check=True, timeout=60).stdout.strip())
    shared = sysconfig.get_path("purelib")  # the project's .venv: its .pth files (editable installs) processed too
    (site / "_project_venv.pth").write_text(f"import site; site.addsitedir({shared!r})\n")
    return Scratch(root, python, site)


@pytest.fixture(scope="module")
def scratch_root() -> Iterator[Path]:
    root = Path(tempfile.mkdtemp(prefix="rayaccel-activation-"))
    os.chmod(root, 0o755)  # another user must reach the scratch venv (the not-writable test)
    try:
        yield root
    finally:
        shutil.rmtree(root, ignore_errors=True)
    assert not (site_packages() / PTH_NAME).exists(), "the shared .venv must never hold the activation file"


@pytest.fixture(scope="module")
def enabled(scratch_root: Path) -> Scratch:
    scratch = make_scratch(scratch_root / "on")
    done = scratch.rayaccel("enable")
    assert done.returncode == 0, done.stderr
    return scratch


def ray_start(python: str, *args: str, env: dict[str, str] | None = None) -> tuple[subprocess.CompletedProcess[str],
                                                                                   list[int]]:
    """Ray's own `ray start` (``python -m ray.scripts.scripts``: the scratch venv has no `ray` script) on free ports,
    without the log monitor, which tails every worker's log for drivers that take their output (no driver here does:
    ``log_to_driver=False``)."""
    ports = free_ports(6)
    argv = ["-m", "ray.scripts.scripts", "start", *args, f"--dashboard-agent-listen-port={ports[0]}",
            f"--dashboard-agent-grpc-port={ports[1]}", f"--metrics-export-port={ports[2]}",
            f"--runtime-env-agent-port={ports[3]}", f"--object-manager-port={ports[4]}", "--num-cpus=1",
            "--include-log-monitor=false"]
    done = subprocess.run([python, *argv], capture_output=True, text=True, timeout=300,
                          env={**os.environ, **(env or {})})
    return done, ports


def warnings(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("rayaccel: WARNING")]


@dataclass
class Cluster:
    address: str
    head: subprocess.CompletedProcess[str]


@pytest.fixture(scope="module")
def cluster(enabled: Scratch) -> Iterator[Cluster]:
    """A head started by plain `ray start` with the activation on (a broken plugin configured beside ACME)."""
    from ray.util import get_node_ip_address

    port, dashboard = free_ports(2)
    address = f"{get_node_ip_address()}:{port}"
    try:
        head, _ = ray_start(enabled.python, "--head", f"--port={port}", f"--dashboard-port={dashboard}",
                            "--include-dashboard=true", env=SIMULATED)
        assert head.returncode == 0, head.stderr[-3000:]
        yield Cluster(address, head)
    finally:
        subprocess.run([sys.executable, "-m", "rayaccel", "stop", f"--address={address}", "--grace", "3"],
                       capture_output=True, text=True, timeout=120)


def ray_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([os.path.join(os.path.dirname(sys.executable), "ray"), *args], capture_output=True,
                          text=True, timeout=120)


# Each `ray status` or probe process costs a Python and Ray start (~1-2 CPU s, more under load): polled every half
# second while a node comes up, they were most of this file's CPU. The waits below look first through Ray's own
# code in this process (the GCS's node table; `ray status`'s own command), then run the real command or probe,
# whose answer the test asserts, once the cluster already shows what it waits for.


def alive_nodes(address: str) -> dict[str, dict[str, float]]:
    """Each alive node's id -> its total resources, from the cluster's GCS (Ray's client: no driver, no worker)."""
    return {node_id.hex(): dict(info.resources_total)
            for node_id, info in gcs_client(address).get_all_node_info(timeout=10).items()
            if info.state == 0}  # GcsNodeInfo.ALIVE


def status_shows(address: str, text: str, timeout: float) -> None:
    """Wait until Ray's status command, run in this process, shows ``text`` (any error is a "not yet", as a failing
    `ray status` process was); the real `ray status` is then run by the test."""
    from ray.experimental import internal_kv

    try:
        wait_for(lambda: ray_status(address), lambda shown: text in shown, timeout=timeout, interval=0.5,
                 retry_on=(Exception,), what=f"Ray's status command in this process to show {text}")
    finally:  # the command sets Ray's process-wide KV client to this cluster's GCS: not left to later tests
        internal_kv._internal_kv_reset()


def probe(scratch: Scratch, address: str, *args: str, python: str | None = None,
          env: dict[str, str] | None = None) -> dict:
    done = scratch.run("-c", PROBE, address, *args, env=env, python=python)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_enable_disable_is_one_file_and_plugins_reports_it(scratch_root: Path):
    scratch = make_scratch(scratch_root / "toggle")
    before = scratch.files()
    off = scratch.rayaccel("plugins", "--json")
    assert off.returncode == 0, off.stderr
    assert json.loads(off.stdout)["ray_activation"]["on"] is False
    assert scratch.rayaccel("enable").returncode == 0
    added = set(scratch.files()) - set(before)
    assert added == {str((scratch.site / PTH_NAME).relative_to(scratch.root))}
    on = json.loads(scratch.rayaccel("plugins", "--json").stdout)["ray_activation"]
    assert on == {"on": True, "path": str(scratch.site / PTH_NAME)}
    shown = scratch.rayaccel("plugins")
    assert "Ray activation: on" in shown.stdout
    disabled = scratch.rayaccel("disable")
    assert disabled.returncode == 0 and "Ray activation off" in disabled.stdout
    assert scratch.files() == before  # the environment as it was, byte for byte
    again = scratch.rayaccel("disable")
    assert again.returncode == 0 and "already off" in again.stdout


def test_a_process_that_never_imports_ray_imports_nothing_of_rayaccel(enabled: Scratch):
    """The hook is on this interpreter's meta path, and that is all: no rayaccel module, no plugin."""
    done = enabled.run("-c", "import sys, json; print(json.dumps([sorted(m for m in sys.modules if m.split('.')[0] "
                             "in ('rayaccel', 'ray') or m.startswith('rayaccel_')), "
                             "[type(f).__name__ for f in sys.meta_path]]))",
                       env=SIMULATED)
    modules, finders = json.loads(done.stdout)
    assert modules == []
    assert finders.count("RayaccelRayActivation") == 1
    # Importing Ray's node module calls the activation, which takes itself off the meta path; no plugin loads.
    done = enabled.run("-c", "import sys, json, ray; print(json.dumps([sorted(m for m in sys.modules if "
                             "m.startswith('rayaccel_testplugins')), [type(f).__name__ for f in sys.meta_path], "
                             "getattr(ray._private.node.Node.__init__, 'rayaccel_activation', False)]))",
                       env=SIMULATED)
    assert done.returncode == 0, done.stderr
    plugins, finders, hooked = json.loads(done.stdout)
    assert plugins == [] and "RayaccelRayActivation" not in finders and hooked is True


def test_enable_where_it_cannot_write_is_one_line_and_changes_nothing(scratch_root: Path):
    scratch = make_scratch(scratch_root / "readonly")
    for path in (scratch.root, *scratch.root.rglob("*")):  # readable by the other user, writable by the owner only
        os.chmod(path, 0o755 if path.is_dir() or os.access(path, os.X_OK) else 0o644)
    before = scratch.files()
    done = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", scratch.python, "-m",
                           "rayaccel", "enable"], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "HOME": str(scratch.root)})
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr
    assert f"{scratch.site} is not writable here" in done.stderr
    assert scratch.files() == before


@pytest.mark.ray
def test_plain_ray_start_offers_the_family_and_a_broken_plugin_costs_one_warning(cluster: Cluster, enabled: Scratch):
    # The plugin that raises at import: one warning, naming it; the node is up with the other family.
    assert len(warnings(cluster.head.stderr)) == 1, warnings(cluster.head.stderr)
    (warning,) = warnings(cluster.head.stderr)
    assert "plugin broken-import" in warning
    assert "No module named 'acme_vendor_bindings'" in warning
    status_shows(cluster.address, "0.0/4.0 ACME", timeout=60)
    wait_for(lambda: ray_cli("status", f"--address={cluster.address}"), lambda done: "0.0/4.0 ACME" in done.stdout,
             timeout=60, interval=0.5, what="`ray status` to show 0.0/4.0 ACME")
    nodes = wait_for(lambda: ray_cli("list", "nodes", "--detail", f"--address={cluster.address}", "--format=json"),
                     lambda done: done.returncode == 0 and "rayaccel.io/family" in done.stdout, timeout=60,
                     interval=0.5, what="`ray list nodes --detail` to show the ACME labels")
    labels = json.loads(nodes.stdout)[0]["labels"]
    assert labels["rayaccel.io/family"] == "acme" and labels["ray.io/accelerator-type"] == "R1"
    assert labels["rayaccel.io/count"] == "4"
    # Each task (here: actor) asking for one ACME sees its own unit in the family's variable; a plain driver
    # connecting to the cluster is not changed (quantity rules hold in the node's workers and in drivers that
    # start a node; docs/ray-bridge.md).
    found = probe(enabled, cluster.address)
    for seen in (found["tasks"], found["seen"]):
        assert sorted(env for env, _ in seen) == ["0", "1", "2", "3"]
        assert all([env] == ids for env, ids in seen)


@pytest.mark.ray
def test_a_second_node_started_with_plain_ray_start_offers_its_family(cluster: Cluster, enabled: Scratch):
    before = probe(enabled, cluster.address, "", "0")  # one driver's view: the nodes and ACME before the join
    known, acme_before = set(before["labels"]), before["resources"].get("ACME", 0)
    second, _ = ray_start(enabled.python, f"--address={cluster.address}",
                          env={**SIMULATED, "RAYACCEL_PLUGINS": "acme=rayaccel_testplugins.acme"})
    assert second.returncode == 0, second.stderr[-3000:]
    assert warnings(second.stderr) == []
    wait_for(lambda: alive_nodes(cluster.address), lambda alive: set(alive) - known, timeout=60, interval=0.5,
             what="the second node alive in the GCS")
    found = wait_for(lambda: probe(enabled, cluster.address, "", "0"),
                     lambda seen: set(seen["labels"]) - known, timeout=60, interval=0.5,
                     what="the second node to join")
    (second_node,) = set(found["labels"]) - known
    assert found["resources"]["ACME"] == acme_before + 4
    assert found["labels"][second_node]["rayaccel.io/family"] == "acme"
    # Its workers set each actor's variable: 4 actors pinned to the second node, one unit each.
    found = probe(enabled, cluster.address, second_node)
    for seen in (found["tasks"], found["seen"]):
        assert sorted(env for env, _ in seen) == ["0", "1", "2", "3"]


@pytest.mark.ray
def test_with_the_activation_off_a_plain_node_offers_nothing_of_the_family(cluster: Cluster, scratch_root: Path):
    scratch = make_scratch(scratch_root / "off")
    before = scratch.files()
    assert scratch.rayaccel("enable").returncode == 0
    assert scratch.rayaccel("disable").returncode == 0
    assert scratch.files() == before
    resources_before = probe(scratch, cluster.address, "", "0")["resources"]
    third, _ = ray_start(scratch.python, f"--address={cluster.address}", env=SIMULATED)
    assert third.returncode == 0, third.stderr[-3000:]
    assert warnings(third.stderr) == []
    wait_for(lambda: alive_nodes(cluster.address),
             lambda alive: sum(r.get("CPU", 0) for r in alive.values()) == resources_before["CPU"] + 1, timeout=60,
             interval=0.5, what="the third node alive in the GCS")
    seen = wait_for(lambda: probe(scratch, cluster.address, "", "0"),
                    lambda seen: seen["resources"]["CPU"] == resources_before["CPU"] + 1, timeout=60, interval=0.5,
                    what="the third node to join")
    assert seen["resources"].get("ACME") == resources_before.get("ACME")  # none from the third node
    assert sum(1 for labels in seen["labels"].values() if "rayaccel.io/family" in labels) == \
        sum(1 for labels in seen["labels"].values()) - 1


@pytest.mark.ray
def test_plain_ray_init_starting_a_local_node_offers_the_family_and_validates_quantities(enabled: Scratch):
    seen = probe(enabled, "local", env=SIMULATED)
    assert seen["resources"]["ACME"] == 4.0 and seen["resources"]["accelerator_type:R1"] == 1.0
    (labels,) = seen["labels"].values()
    assert labels["rayaccel.io/family"] == "acme" and labels["rayaccel.io/count"] == "4"
    for ran in (seen["tasks"], seen["seen"]):
        assert sorted(env for env, _ in ran) == ["0", "1", "2", "3"]
    assert seen["refused"] and "ACME" in seen["refused"]  # the plugin's whole-units rule, in this driver


#: A task per unit of the baked family, all running at once: each sees its own id in the family's variable.
BAKED_PROBE = r"""
import json, os, sys
import ray
from rendezvous import rendezvous
ray.init(address=sys.argv[1], log_to_driver=False)
@ray.remote(num_cpus=0, resources={"EXAMPLE": 1})
def seen(meet):
    met = ray.get(meet.arrive.remote("tasks", 4, 120))
    return met, os.environ.get("EXAMPLE_VISIBLE_DEVICES")
meet = rendezvous()
print(json.dumps([ray.cluster_resources().get("EXAMPLE", 0),
                  ray.get([seen.remote(meet) for _ in range(4)], timeout=180)]))
"""


@pytest.fixture(scope="module")
def baked_with_pip(scratch_root: Path) -> Scratch:
    """The template's default bake (plain `cookiecutter`), installed with pip into a scratch venv of its own: a
    day-zero family known to this environment by its entry point alone (no RAYACCEL_PLUGINS)."""
    root = scratch_root / "baked"
    repo = Path(__file__).resolve().parents[2]
    template = repo / "templates" / "vendor-plugin"
    done = subprocess.run([sys.executable, "-m", "cookiecutter", "--no-input", str(template), "-o", str(root / "bake")],
                          capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr[-3000:]
    scratch = make_scratch(root / "env")
    # Built with this environment's setuptools (the dev extra's setuptools>=77, which the bake's SPDX license needs).
    done = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation",
                           "--target", str(scratch.site), str(root / "bake" / "rayaccel-example")],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return scratch


@pytest.mark.ray
def test_a_pip_installed_template_bake_is_offered_by_plain_ray_start_only_while_the_activation_is_on(
        baked_with_pip: Scratch) -> None:
    """Issue 40's show: a template-baked family installed with pip, nothing else; `ray start` (no rayaccel) on its
    simulated node offers it with the activation on, and not with it off."""
    from ray.util import get_node_ip_address

    scratch = baked_with_pip
    plugins = scratch.rayaccel("plugins", "--json")
    assert plugins.returncode == 0 and "example" in plugins.stdout, plugins.stderr  # found by its entry point
    env = {"RAYACCEL_PLUGINS": "", "RAYACCEL_SIMULATE": "example/example-4"}
    for on in (True, False):
        assert scratch.rayaccel("enable" if on else "disable").returncode == 0
        port, dashboard = free_ports(2)
        address = f"{get_node_ip_address()}:{port}"
        try:
            head, _ = ray_start(scratch.python, "--head", f"--port={port}", f"--dashboard-port={dashboard}",
                                "--include-dashboard=false", env=env)
            assert head.returncode == 0, head.stderr[-3000:]
            if on:
                status_shows(address, "0.0/4.0 EXAMPLE", timeout=90)
                wait_for(lambda a=address: ray_cli("status", f"--address={a}"),  # type: ignore[misc]
                         lambda done: "0.0/4.0 EXAMPLE" in done.stdout, timeout=90, interval=0.5,
                         what="`ray status` to show 0.0/4.0 EXAMPLE")
                done = scratch.run("-c", BAKED_PROBE, address, env=env)
                assert done.returncode == 0, done.stderr[-3000:]
                count, seen = json.loads(done.stdout.strip().splitlines()[-1])
                assert count == 4 and all(met for met, _ in seen), seen
                assert sorted(ids for _, ids in seen) == ["0", "1", "2", "3"]  # each task its own unit
            else:
                status_shows(address, "CPU", timeout=90)
                listed = wait_for(lambda a=address: ray_cli("status", f"--address={a}"),  # type: ignore[misc]
                                  lambda done: done.returncode == 0 and "CPU" in done.stdout, timeout=90,
                                  interval=0.5, what="`ray status` to list the node")
                assert "EXAMPLE" not in listed.stdout
        finally:
            subprocess.run([sys.executable, "-m", "rayaccel", "stop", f"--address={address}", "--grace", "3"],
                           capture_output=True, text=True, timeout=120)
