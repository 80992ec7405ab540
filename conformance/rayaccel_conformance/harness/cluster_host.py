"""The process that holds a conformance run's Ray cluster (``python -m rayaccel_conformance.harness.cluster_host``).

The suite's own process grades hooks while they run: any thread, process or file that appears meanwhile is
blamed on the hook being watched. Starting Ray nodes there would have to wait for every check to finish (each
node costs seconds: its raylet waits for two Python agents). In this process they start while the cheaper
checks run: it starts the ``ray.cluster_utils.Cluster`` through the SDK (``rayaccel.ray.add_node``) and answers
on its stdout, one JSON line per request read from its stdin, in order:

- ``{"op": "head"}`` -> ``{"address": ...}``: the head node (no accelerators).
- ``{"op": "nodes", "plugin": NAME, "fixtures": [REF, ...]}`` -> ``{"nodes": {REF: node id}, "errors": {REF:
  why}}``: one node per fixture, started one after another and waited for together.
- ``{"op": "remove", "fixtures": [REF, ...]}`` -> ``{"removed": [...]}``.
- ``{"op": "shutdown"}`` -> ``{"shutdown": true}``, and the process ends; so it does when its stdin closes
  (the suite's process ended), so a run that dies never leaves a cluster behind, and on SIGTERM (the suite
  closing it while a request is still being answered).

A request that fails answers ``{"error": "..."}``. Everything else the process writes (Ray's logs) goes to its
stderr: the protocol has a file descriptor of its own that no child inherits.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sys
from typing import Any, TextIO


def _answer(out: TextIO, reply: dict[str, Any]) -> None:
    out.write(json.dumps(reply) + "\n")
    out.flush()


class _Host:
    def __init__(self) -> None:
        self.cluster: Any = None
        self.nodes: dict[str, Any] = {}

    def head(self) -> dict[str, Any]:
        from ray.cluster_utils import Cluster

        import rayaccel.ray

        if self.cluster is None:
            cluster: Any = Cluster(initialize_head=False)
            try:
                rayaccel.ray.add_node(cluster, head=True, plugins=[], num_cpus=1, include_dashboard=False)
            except BaseException:
                cluster.shutdown()
                raise
            self.cluster = cluster
        return {"address": self.cluster.address}

    def add_nodes(self, plugin: str, fixtures: list[str]) -> dict[str, Any]:
        import rayaccel.ray

        self.head()
        ids: dict[str, str] = {}
        errors: dict[str, str] = {}
        for ref in fixtures:
            try:
                node = rayaccel.ray.add_node(self.cluster, simulate=ref, plugins=[plugin], num_cpus=1, wait=False)
            except Exception as e:  # a node that cannot start is the finding for that fixture
                errors[ref] = f"{type(e).__name__}: {e}"
                continue
            self.nodes[ref] = node
            ids[ref] = str(node.node_id)
        if ids:
            self.cluster.wait_for_nodes()
        return {"nodes": ids, "errors": errors}

    def remove(self, fixtures: list[str]) -> dict[str, Any]:
        removed = []
        for ref in fixtures:
            node = self.nodes.pop(ref, None)
            if node is not None and self.cluster is not None:
                self.cluster.remove_node(node, allow_graceful=True)
                removed.append(ref)
        return {"removed": removed}

    def shutdown(self) -> None:
        import rayaccel.ray

        try:
            rayaccel.ray.shutdown()  # type: ignore[no-untyped-call,unused-ignore]  # the nodes' fault files
        finally:
            if self.cluster is not None:
                self.cluster.shutdown()
                self.cluster = None


def _stop(signum: int, frame: Any) -> None:
    raise SystemExit(0)  # unwinds whatever it is doing into main's clean-up


def main() -> int:
    # SIGTERM (the suite's process closing it while it starts nodes, e.g. a run interrupted) ends it as stdin's
    # end does: what it started is shut down first; a node half started dies with it (Ray's nodes fate-share).
    signal.signal(signal.SIGTERM, _stop)
    # The protocol's own descriptor, not inherited by Ray's processes; fd 1 then points at stderr, so nothing
    # printed here or by a child can corrupt an answer.
    out = os.fdopen(os.dup(sys.stdout.fileno()), "w", encoding="utf-8")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    host = _Host()
    try:
        for line in sys.stdin:
            request = json.loads(line)
            op = request.get("op")
            try:
                if op == "head":
                    _answer(out, host.head())
                elif op == "nodes":
                    _answer(out, host.add_nodes(str(request["plugin"]), list(request["fixtures"])))
                elif op == "remove":
                    _answer(out, host.remove(list(request["fixtures"])))
                elif op == "shutdown":
                    break
                else:
                    _answer(out, {"error": f"unknown request {op!r}"})
            except Exception as e:  # answered, so the suite's process can say what failed
                _answer(out, {"error": f"{type(e).__name__}: {e}"})
    finally:
        host.shutdown()
    with contextlib.suppress(OSError):  # stdin closed: nobody is reading any more
        _answer(out, {"shutdown": True})
    return 0


if __name__ == "__main__":
    sys.exit(main())
