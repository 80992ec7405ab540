"""What every test of the repository shares (tests/ and each reference plugin's tests): a test may not leave a
visible-devices variable changed in the test process.

``CUDA_VISIBLE_DEVICES=0 rayaccel start`` offers only device 0, by design, and so does a Ray node a test starts in
a process where an earlier test left such a variable set: a parity test that let Ray's Neuron manager write
``NEURON_RT_VISIBLE_CORES=0`` made the trn1 node of a later cluster test, in the same pytest-xdist worker, offer
1 NeuronCore instead of 32. Which tests share a worker changes from run to run, so the leak showed as a flake;
here it fails the test that leaks, every run.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from rayaccel.support.raycompat import RAY_BUILTIN_FAMILIES

#: A parallel run ends, naming the worker and its test, when a worker dies unseen by pytest-xdist (tests/).
pytest_plugins = ["suite_watchdog"]

#: Ray's families' variables, and every variable named like one (the test plugins' ACME_VISIBLE_DEVICES, ...).
_RAYS_VARIABLES = frozenset(var for _, var in RAY_BUILTIN_FAMILIES.values() if var)
_VISIBLE_SUFFIXES = ("_VISIBLE_DEVICES", "_VISIBLE_CORES", "_VISIBLE_CHIPS", "_VISIBLE_MODULES")


def visible_devices_variables() -> dict[str, str]:
    """The visible-devices variables set in this process, with their values."""
    return {k: v for k, v in os.environ.items() if k in _RAYS_VARIABLES or k.endswith(_VISIBLE_SUFFIXES)}


@pytest.fixture(autouse=True)
def _no_visible_devices_variable_leaks() -> Iterator[None]:
    before = visible_devices_variables()
    yield
    after = visible_devices_variables()
    if after == before:
        return
    changed = sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k))
    for key in changed:  # put back, so the tests after this one run in the environment they expect
        if key in before:
            os.environ[key] = before[key]
        else:
            os.environ.pop(key, None)
    shown = ", ".join(f"{k}={after.get(k, '<unset>')!r} (was {before.get(k, '<unset>')!r})" for k in changed)
    pytest.fail(f"the test left {shown} in the test process: a Ray node a later test starts here would offer only "
                "those devices. Set it with monkeypatch.setenv (set it before calling code that writes it, so the "
                "undo removes it)", pytrace=False)
