"""The plugin loaded in a fresh interpreter: what its import and its hooks do to a process nobody prepared.

In the suite's own process the plugin was imported long before any check ran, with Ray, pytest and the
SDK already loaded, so an import that takes 1.5 s, starts a non-daemon thread or installs a signal handler
goes unseen. :func:`probe` starts ``python -c PROBE`` (through the SDK's one bounded runner), which
imports the SDK and Python's usual modules first (their own effects are not the plugin's), snapshots the
process-wide state, imports the plugin (timed), snapshots again, runs every inventory hook on a simulated
host of one fixture, snapshots again, and finally lists the threads and child processes still alive: what
would keep the interpreter from exiting. The answer is one JSON line.
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass, field
from typing import Any

from rayaccel.hosts.seam import HostError, run_bounded

#: How long the fresh process may take in all (import, one inventory, snapshots).
PROBE_TIMEOUT_S = 60.0
#: Said of an import measured again with Ray loaded first (Ray's own import time and effects are not the plugin's).
RAY_SUBTRACTED_NOTE = " (measured with Ray loaded first: Ray's own import is not the plugin's)"

# Runs in the fresh interpreter. Python's and the SDK's modules are imported before the first snapshot, so
# their own side effects (logging's, Ray's RAY_CLIENT_MODE when ray is installed) are never the plugin's.
PROBE = r'''
import importlib, json, logging, os, signal, socket, sys, threading, time, warnings
from collections.abc import Mapping
import rayaccel, rayaccel.records, rayaccel.labels, rayaccel.support.raycompat
from rayaccel.inventory.builder import InventoryBuilder
from rayaccel.plugins.containment import environ_changes
from rayaccel.plugins.manager import PluginManager
from rayaccel.hosts.fixtures import load_fixture
from rayaccel.simulation.host_factory import simulated_host

module_name, attr, plugin_name, fixture_path, preload = sys.argv[1:6]
for name in filter(None, preload.split(",")):
    importlib.import_module(name)

def tables():
    from rayaccel import labels, records
    from rayaccel.support import raycompat
    found = {}
    for module in (records, labels, raycompat):
        for key, value in sorted(vars(module).items()):
            if key.isupper() and isinstance(value, (Mapping, list, set, frozenset, tuple)):
                shown = sorted(map(repr, value)) if isinstance(value, (set, frozenset)) else value
                found[f"{module.__name__}.{key}"] = repr(dict(shown) if isinstance(shown, Mapping) else shown)
    return found

def state():
    root = logging.getLogger()
    handlers = {}
    for sig in signal.valid_signals():
        try:
            handlers[signal.Signals(sig).name] = repr(signal.getsignal(sig))
        except (ValueError, OSError):
            pass
    return {"env": dict(os.environ), "socket timeout": repr(socket.getdefaulttimeout()), "signals": handlers,
            "logging": [logging.getLevelName(root.level), [type(h).__name__ for h in root.handlers],
                        logging.root.manager.disable],
            "warnings filters": len(warnings.filters), "excepthook": repr(sys.excepthook),
            "threading excepthook": repr(threading.excepthook), "recursion limit": sys.getrecursionlimit(),
            "tables": tables()}

def changes(before, after):
    found = []
    env = environ_changes(before["env"], after["env"])
    if env:
        found.append("os.environ: " + ", ".join(sorted(env)))
    for key in before:
        if key == "env":
            continue
        if key in ("signals", "tables"):
            for name in sorted(set(before[key]) | set(after[key])):
                if before[key].get(name) != after[key].get(name):
                    found.append(f"{key[:-1] if key == 'signals' else 'SDK table'} {name}: "
                                 f"{str(before[key].get(name))[:60]} -> {str(after[key].get(name))[:60]}")
        elif before[key] != after[key]:
            found.append(f"{key}: {str(before[key])[:60]} -> {str(after[key])[:60]}")
    return found

threads_before = set(threading.enumerate())
had_ray = "ray" in sys.modules
first = state()
started = time.perf_counter()
module = importlib.import_module(module_name)
import_s = time.perf_counter() - started
plugin = getattr(module, attr) if attr else module
second = state()
report = {"import_s": import_s, "import_changes": changes(first, second),
          "imported_ray": "ray" in sys.modules and not had_ray}
manager = PluginManager(autoload=False)
manager.register(plugin, plugin_name)
report["problems"] = [p.render().splitlines()[0] for p in manager.problems if p.severity == "error"]
if fixture_path:
    InventoryBuilder(manager, [plugin_name]).build(simulated_host(load_fixture(fixture_path)), with_metrics=True)
third = state()
report["hook_changes"] = changes(second, third)
time.sleep(0.2)  # threads finishing their last step are not left behind
report["threads"] = [f"{t.name} (target {getattr(getattr(t, '_target', None), '__qualname__', '?')})"
                     for t in threading.enumerate() if t not in threads_before and t.is_alive() and not t.daemon]
try:
    import psutil
    report["children"] = [" ".join(p.cmdline())[:80] for p in psutil.Process().children(recursive=True)]
except Exception:
    report["children"] = []
print("RAYACCEL-PROBE " + json.dumps(report), flush=True)
os._exit(0)  # a non-daemon thread would keep the interpreter from exiting: that is what is measured
'''


@dataclass
class ProbeResult:
    import_s: float = 0.0
    import_changes: list[str] = field(default_factory=list)
    hook_changes: list[str] = field(default_factory=list)
    threads: list[str] = field(default_factory=list)
    children: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    #: The plugin's import imported Ray: what Ray's import does (warning filters, excepthook, time) is Ray's.
    imported_ray: bool = False


class ProbeFailed(Exception):
    """The fresh process could not load the plugin or answer: the message says what it printed."""


def import_target(plugin: object) -> tuple[str, str]:
    """(module, attribute) that gives the plugin object on import; attribute "" for a module plugin."""
    if isinstance(plugin, type(sys)):
        return plugin.__name__, ""
    module = sys.modules.get(type(plugin).__module__)
    attr = next((k for k, v in vars(module).items() if v is plugin), None) if module else None
    if module is None or attr is None:
        raise ProbeFailed(f"the plugin object {plugin!r} is reachable from no module attribute, so a fresh process "
                          "cannot import it (register a module, or an object bound to a module-level name)")
    return module.__name__, attr


def run_fresh(script: str, marker: str, *args: str) -> str:
    """Run ``script`` in a fresh interpreter on the suite's own path (the same plugin), no ``RAYACCEL_*`` setting
    of this process passed on, bounded by :data:`PROBE_TIMEOUT_S`: the text after ``marker`` on the line it
    printed, or :class:`ProbeFailed` naming why there is none."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAYACCEL_")}
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    try:
        result = run_bounded([sys.executable, "-c", script, *args], env, PROBE_TIMEOUT_S)
    except HostError as e:
        raise ProbeFailed(f"the fresh process did not finish: {e}") from None
    line = next((ln for ln in result.stdout.splitlines() if ln.startswith(marker + " ")), None)
    if line is None:
        tail = (result.stderr.strip().splitlines() or ["(no output)"])[-1]
        raise ProbeFailed(f"the fresh process exited {result.returncode} without an answer: {tail[:200]}")
    return line.split(" ", 1)[1]


def probe(plugin: object, name: str, fixture_path: str | None, preload: tuple[str, ...] = ()) -> ProbeResult:
    """Load ``plugin`` in a fresh interpreter (after ``preload`` modules) and run its hooks on the fixture."""
    module, attr = import_target(plugin)
    data: dict[str, Any] = json.loads(run_fresh(PROBE, "RAYACCEL-PROBE", module, attr, name, fixture_path or "",
                                                ",".join(preload)))
    return ProbeResult(**data)
