"""What the run's Ray workers unpickle for RAC108 and RAC208 imports nothing of the SDK.

Ray pickles a task's function and an actor's class by reference, so each of the ~20 workers of a nvidia run that
runs the probe or the unit holder imports the module they live in; one that imported the SDK's records paid ~0.08 s
of CPU for models it never used (docs/performance.md, round 9, lane C). Unpickled in a fresh Python, as a worker
does: in this test process other tests have long since imported the SDK.
"""

from __future__ import annotations

import json
import subprocess
import sys

from ray import cloudpickle

from rayaccel_conformance.harness import ray_probe, raycluster


def test_the_cluster_sends_the_probe_and_the_holder_of_the_light_module() -> None:
    sent = vars(raycluster)  # what its ray.remote(...) calls name
    assert sent["probe"] is ray_probe.probe
    assert sent["UnitHolder"] is ray_probe.UnitHolder


def test_a_worker_unpickling_the_probe_and_the_holder_imports_nothing_of_the_sdk() -> None:
    payload = cloudpickle.dumps((ray_probe.probe, ray_probe.UnitHolder)).hex()  # type: ignore[no-untyped-call,unused-ignore]
    code = f"""
import json, sys
from ray import cloudpickle
before = set(sys.modules)
probe, holder = cloudpickle.loads(bytes.fromhex({payload!r}))
print(json.dumps([probe.__module__, holder.__module__, sorted(set(sys.modules) - before)]))
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    probe_module, holder_module, loaded = json.loads(done.stdout)
    assert probe_module == holder_module == "rayaccel_conformance.harness.ray_probe"  # by reference, as Ray sends
    assert [name for name in loaded if name == "rayaccel" or name.startswith("rayaccel.")] == []
    assert len(loaded) <= 10, loaded
