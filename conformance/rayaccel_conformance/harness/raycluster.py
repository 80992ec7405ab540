"""One Ray cluster per conformance run, shared by every Ray check of every plugin.

A ``ray.cluster_utils.Cluster`` with a head node that has no accelerator, and one node per fixture, started
through the SDK (``rayaccel.ray.add_node``) the first time a check needs it. All fixtures of a plugin start
together (their start-up overlaps) and are removed after the plugin's last Ray check, so a run over many
plugins never holds more than one plugin's nodes.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from rayaccel.polling import WaitTimeout, wait_for
from rayaccel.raycompat import RAY_ACCELERATOR_TYPE_LABEL, RAY_NODE_ID_LABEL
from rayaccel.records import NodeInventory
from rayaccel_conformance.registry import CheckFailed

if TYPE_CHECKING:
    from rayaccel_conformance.harness.subject import Subject

TASK_TIMEOUT_S = 60.0
#: Seconds a check waits for its fixture's node to be alive (it registered already: this is slack for load).
NODE_ALIVE_TIMEOUT_S = 30.0
#: Tasks sent one after another by label selector in RAC208.
SELECTOR_TASKS = 3


def _probe(env_var: str, resource: str) -> tuple[str, str | None, list[str]]:
    """Runs in a Ray worker: where it ran, what the env var says, what Ray assigned."""
    import ray

    context = ray.get_runtime_context()
    return context.get_node_id(), os.environ.get(env_var), list(context.get_accelerator_ids().get(resource, []))


class _UnitHolder:
    """A Ray actor that holds one unit, so that the next task gets another one (RAC108)."""

    def probe(self, env_var: str, resource: str) -> tuple[str, str | None, list[str]]:
        return _probe(env_var, resource)


def _ray_nodes() -> list[dict[str, Any]]:
    import ray

    return list(ray.nodes())  # type: ignore[no-untyped-call,unused-ignore]


class SharedCluster:
    def __init__(self) -> None:
        self.cluster: Any = None
        self.nodes: dict[str, Any] = {}  # fixture ref -> ray._private.node.Node
        self.node_ids: dict[str, str] = {}
        self.installed: set[str] = set()
        self.cpu_selected: set[str] = set()
        self.ray_version: str | None = None
        self._auth_mode_before: str | None = None

    # Life cycle ------------------------------------------------------------------------------

    def start(self) -> None:
        if self.cluster is not None:
            return
        import ray
        from ray.cluster_utils import Cluster

        import rayaccel.ray
        from rayaccel.ray.auth import AUTH_MODE_ENV, set_auth_mode

        self.ray_version = ray.__version__
        # The suite's cluster is private to this process, on localhost: token authentication protects nothing
        # there, and Ray 2.60's cluster_utils nodes under RAY_AUTH_MODE=token never run an actor (plain Ray
        # reproduces it). A ~/.ray/auth_token left by any earlier ray.init() would otherwise fail every Ray check.
        self._auth_mode_before = os.environ.get(AUTH_MODE_ENV)
        set_auth_mode("disabled")
        cluster: Any = Cluster(initialize_head=False)
        try:
            rayaccel.ray.add_node(cluster, head=True, plugins=[], num_cpus=1, include_dashboard=False)
            rayaccel.ray.connect(cluster.address, plugins=[], log_to_driver=False)
        except BaseException:
            cluster.shutdown()
            self._restore_auth_mode()
            raise
        self.cluster = cluster

    def _restore_auth_mode(self) -> None:
        from rayaccel.ray.auth import set_auth_mode

        set_auth_mode(self._auth_mode_before)

    def shutdown(self) -> None:
        if self.cluster is None:
            return
        import rayaccel.ray
        from rayaccel.ray.registry import uninstall

        try:
            rayaccel.ray.shutdown()  # type: ignore[no-untyped-call,unused-ignore]
        finally:
            self.cluster.shutdown()
            uninstall()
            self.cluster = None
            self.nodes.clear()
            self.node_ids.clear()
            self.installed.clear()
            self._restore_auth_mode()

    def nodes_for(self, subject: Subject) -> None:
        """Start a node for every fixture of the plugin that has none yet, all at once."""
        import rayaccel.ray

        self.start()
        if subject.name not in self.installed:
            rayaccel.ray.install_driver([subject.name], subject.manager)
            self.installed.add(subject.name)
        started = []
        for ref in subject.fixture_paths():
            if ref not in self.nodes:
                try:
                    node = rayaccel.ray.add_node(self.cluster, simulate=ref, plugins=[subject.name], num_cpus=1,
                                                 wait=False)
                except Exception as e:  # a node that cannot start is the finding for that fixture
                    self.nodes[ref] = e
                    continue
                self.nodes[ref] = node
                self.node_ids[ref] = str(node.node_id)
                started.append(ref)
        if started:
            self.cluster.wait_for_nodes()

    def node_id(self, subject: Subject, fixture: str) -> str:
        self.nodes_for(subject)
        node = self.nodes[fixture]
        if isinstance(node, Exception):
            raise CheckFailed(f"{fixture}: the SDK could not start a Ray node: {type(node).__name__}: {node}")
        return self.node_ids[fixture]

    def release(self, subject: Subject) -> None:
        """Remove the plugin's nodes: its Ray checks are done."""
        for ref in list(subject.fixture_paths()):
            node = self.nodes.pop(ref, None)
            self.node_ids.pop(ref, None)
            if node is not None and not isinstance(node, Exception) and self.cluster is not None:
                self.cluster.remove_node(node, allow_graceful=True)

    # Checks ----------------------------------------------------------------------------------

    def _node(self, node_id: str) -> dict[str, Any]:
        try:
            found: dict[str, Any] = wait_for(
                lambda: next((n for n in _ray_nodes() if n["NodeID"] == node_id), {}), lambda n: bool(n.get("Alive")),
                timeout=NODE_ALIVE_TIMEOUT_S, interval=0.2, what=f"node {node_id} to be alive in the cluster")
        except WaitTimeout as e:
            raise CheckFailed(str(e)) from None
        return found

    @staticmethod
    def _unit_options(resource: str) -> dict[str, Any]:
        # Ray refuses resources={"GPU": 1}: its own accelerator resource has a field of its own.
        if resource == "GPU":
            return {"num_cpus": 0.1, "num_gpus": 1}
        return {"num_cpus": 0.1, "resources": {resource: 1}}

    def single_node_check(self, subject: Subject, fixture: str, inventory: NodeInventory) -> list[str]:
        family = subject.family()
        fam = inventory.family(family.name)
        assert fam is not None
        node_id = self.node_id(subject, fixture)
        node = self._node(node_id)
        wrong = [f"node resource {name}: expected {value:g}, Ray shows {node['Resources'].get(name)}"
                 for name, value in inventory.resources.items() if node["Resources"].get(name) != value]
        if wrong:
            raise CheckFailed(wrong)
        # The whole devices' resource, then each partition profile's (MIG instances, ...): the same isolation.
        offered = [(family.resource_name, fam.schedulable_units)] if fam.schedulable_units else []
        evidence = [f"{fixture}: node shows {inventory.resources}"]
        for resource, units in [*offered, *fam.partition_units.items()]:
            evidence += self._units_check(subject, fixture, node_id, resource, units)
        return evidence

    def _units_check(self, subject: Subject, fixture: str, node_id: str, resource: str,
                     units: list[str]) -> list[str]:
        """A task asking for one unit of ``resource`` sees exactly one of ``units``; with two or more, an actor
        holding one and a task beside it see two different ones."""
        import ray

        env_var = subject.family().visible_devices_env_var
        task = ray.remote(_probe).options(**self._unit_options(resource), label_selector={RAY_NODE_ID_LABEL: node_id})
        try:
            ran_on, env, assigned = ray.get(task.remote(env_var, resource), timeout=TASK_TIMEOUT_S)
        except Exception as e:  # GetTimeoutError, a worker crash, a refused request: all are findings
            raise CheckFailed(f"a task asking for 1 {resource} on {fixture}'s node did not run: "
                              f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}") from None
        self._expect_one_unit(subject, units, "a task", ran_on, node_id, env, assigned, resource)
        evidence = [f"a task asking for 1 {resource} saw {env_var}={env} (Ray assigned {assigned})"]
        if len(units) >= 2:
            evidence.append(self._second_unit(subject, units, node_id, resource, env_var))
        return evidence

    def _expect_one_unit(self, subject: Subject, units: list[str], who: str, ran_on: str, node_id: str,
                         env: str | None, assigned: list[str], resource: str) -> list[str]:
        seen: list[str]
        env_var = subject.family().visible_devices_env_var
        if env is None:
            raise CheckFailed(f"{who}'s {env_var} is unset")
        seen = subject.manager.parse_visible(subject.name, env)
        if len(seen) != 1 or seen != assigned or seen[0] not in units or ran_on != node_id:
            raise CheckFailed(f"{who} asking for 1 {resource} saw {env_var}={env!r} (units {seen}); Ray assigned "
                              f"{assigned}; the node's units are {units}")
        return seen

    def _second_unit(self, subject: Subject, units: list[str], node_id: str, resource: str, env_var: str) -> str:
        """An actor holds one unit; a task then gets another: both must see exactly their own unit."""
        import ray

        options = {**self._unit_options(resource), "label_selector": {RAY_NODE_ID_LABEL: node_id}}
        holder: Any = ray.remote(_UnitHolder).options(**options).remote()
        try:
            try:
                held = ray.get(holder.probe.remote(env_var, resource), timeout=TASK_TIMEOUT_S)
                task = ray.remote(_probe).options(**options)
                other = ray.get(task.remote(env_var, resource), timeout=TASK_TIMEOUT_S)
            except Exception as e:  # GetTimeoutError, a worker crash: findings
                raise CheckFailed(f"an actor holding 1 {resource} and a task asking for another did not run: "
                                  f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}") from None
            first = self._expect_one_unit(subject, units, "an actor", held[0], node_id, held[1], held[2], resource)
            second = self._expect_one_unit(subject, units, "a task beside it", other[0], node_id, other[1],
                                           other[2], resource)
        finally:
            ray.kill(holder)
        if first == second:
            raise CheckFailed(f"an actor and a task, each holding 1 {resource}, both saw unit {first[0]} "
                              f"({env_var}={held[1]!r} and {other[1]!r}): two processes on one unit")
        return (f"with an actor holding unit {first[0]} ({env_var}={held[1]}), a task got unit {second[0]} "
                f"({env_var}={other[1]})")

    def label_selector_check(self, subject: Subject, fixture: str, inventory: NodeInventory) -> list[str]:
        import ray

        fam = inventory.family(subject.family().name)
        assert fam is not None and fam.accelerator_type
        node_id = self.node_id(subject, fixture)
        wanted = fam.accelerator_type
        self._node(node_id)
        alive = [n for n in _ray_nodes() if n["Alive"]]
        having = {n["NodeID"] for n in alive if n.get("Labels", {}).get(RAY_ACCELERATOR_TYPE_LABEL) == wanted}
        if node_id not in having:
            labels = self._node(node_id).get("Labels", {})
            raise CheckFailed(f"{fixture}'s node is not labelled {RAY_ACCELERATOR_TYPE_LABEL}={wanted}: "
                              f"{labels.get(RAY_ACCELERATOR_TYPE_LABEL)!r}")
        others = len(alive) - len(having)
        if not others:
            raise CheckFailed(f"every node of the cluster has {wanted}: the check needs one without it")
        # One unit as well, as a real task would ask: the worker RAC108 started for that shape is reused.
        family = subject.family()
        task = ray.remote(_probe).options(**self._unit_options(family.resource_name),
                                          label_selector={RAY_ACCELERATOR_TYPE_LABEL: wanted})
        try:
            placed = [ray.get(task.remote(family.visible_devices_env_var, family.resource_name),
                              timeout=TASK_TIMEOUT_S) for _ in range(SELECTOR_TASKS)]
        except Exception as e:  # a task that never runs is the finding
            raise CheckFailed(f"tasks selecting {RAY_ACCELERATOR_TYPE_LABEL}={wanted} did not run: "
                              f"{type(e).__name__}") from None
        if subject.name not in self.cpu_selected:
            # Once per plugin, the selector alone (no unit asked for): only the label can keep it off the
            # head node, which has CPUs to spare.
            self.cpu_selected.add(subject.name)
            alone = ray.remote(_probe).options(num_cpus=0.1, label_selector={RAY_ACCELERATOR_TYPE_LABEL: wanted})
            try:
                placed.append(ray.get(alone.remote(family.visible_devices_env_var, family.resource_name),
                                      timeout=TASK_TIMEOUT_S))
            except Exception as e:  # a task that never runs is the finding
                raise CheckFailed(f"a CPU task selecting {RAY_ACCELERATOR_TYPE_LABEL}={wanted} did not run: "
                                  f"{type(e).__name__}") from None
        stray = sorted({ran_on for ran_on, _, _ in placed} - having)
        if stray:
            raise CheckFailed(f"tasks selecting {wanted} ran on nodes without it: {stray}")
        return [f"{len(placed)} tasks selecting {RAY_ACCELERATOR_TYPE_LABEL}={wanted} ({SELECTOR_TASKS} also asking "
                f"for 1 {family.resource_name}) ran on the {len(having)} node(s) that have it, "
                f"none on the {others} without"]


_shared: SharedCluster | None = None


def shared_cluster() -> SharedCluster:
    global _shared
    if _shared is None:
        _shared = SharedCluster()
    return _shared


def shutdown_shared_cluster() -> None:
    global _shared
    if _shared is not None:
        _shared.shutdown()
        _shared = None
