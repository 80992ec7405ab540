"""What the hostile plugins share: ACME's probing under a family of their own, plus one misbehaviour in
discovery that in-process isolation cannot contain (tests/isolation/test_isolation.py, tests/ray/test_ray_lifecycle.py).

Each ``hostile_*.py`` module calls :func:`make` with its misbehaviour.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

from rayaccel import Device, Host, hookimpl
from rayaccel_testplugins import acme
from rayaccel_testplugins.broken_base import declare, inherit


def _exit() -> None:
    os._exit(7)


def _spawn() -> None:
    # A child it never waits for, and a thread it never joins.
    subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    threading.Thread(target=time.sleep, args=(600,), daemon=True).start()


def _hang() -> None:
    time.sleep(3600)


def _noisy() -> None:
    print("HOSTILE-STDOUT garbage that would break inspect --json")
    os.write(1, b"HOSTILE-FD1 written below sys.stdout\n")
    print("HOSTILE-STDERR", file=sys.stderr)
    os.environ["RAYACCEL_DISABLE"] = "acme"
    os.environ["HOSTILE_NOISY_WAS_HERE"] = "1"


def _hold_stdout() -> None:
    # A child in a session of its own that keeps the process's stdout open for ten minutes: whoever reads
    # that stdout to its end waits for it.
    subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"], start_new_session=True)


def _patch_sdk() -> None:
    # Every plugin's discovery, in the process this runs in, now finds nothing.
    from rayaccel.inventory.builder import InventoryBuilder

    InventoryBuilder._devices = lambda self, plugin, host, problems: []  # type: ignore[method-assign]


def _memory() -> None:
    blob = bytearray(2 * 2**30)  # runaway memory: 2 GiB, beyond the worker's limit in the tests
    blob[-1] = 1


BEHAVIOURS: dict[str, Callable[[], None]] = {
    "exit": _exit, "spawn": _spawn, "hang": _hang, "noisy": _noisy, "memory": _memory, "stdout": _hold_stdout,
    "patch": _patch_sdk, "flood": lambda: None}
#: How many devices hostile-flood reports.
FLOOD = 100_000


def make(namespace: dict[str, Any], behaviour: str) -> None:
    plugin = f"hostile-{behaviour}"
    family = declare(plugin)
    misbehave = BEHAVIOURS[behaviour]
    inherit(namespace, keep=("rayaccel_discover",))

    @hookimpl
    def rayaccel_family():  # type: ignore[no-untyped-def]
        return family

    @hookimpl
    def rayaccel_discover(host: Host) -> list[Device]:
        misbehave()
        devices = acme.rayaccel_discover(host)
        if behaviour == "flood":
            first = devices[0].model_dump()  # plain records, as a plugin parsing a vendor tool's garbage would
            return [{**first, "id": f"flood-{i}", "index": i} for i in range(FLOOD)]  # type: ignore[misc]
        return devices

    namespace["rayaccel_family"] = rayaccel_family
    namespace["rayaccel_discover"] = rayaccel_discover
