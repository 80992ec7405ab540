"""A worker Ray reuses for a task of another size keeps no visibility variable written for the earlier task alone
(issue 46, held-out round 16's p1: sub-host bounds reaching a whole host). Ray's TPU manager removes the sub-host
bounds it wrote for a 1- or 2-chip task before a larger one (``stale_subhost_bounds`` in
ray/_private/accelerators/tpu.py); the SDK's manager for a day-zero family gives the node's value back."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest

from rayaccel.plugins.manager import PluginManager
from rayaccel.ray.registry import family_specs, install, uninstall
from rayaccel_testplugins.zeta_subhost import BOUNDS, VISIBLE


@pytest.fixture
def zetasub(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    monkeypatch.setenv("RAYACCEL_PLUGINS", "zetasub=rayaccel_testplugins.zeta_subhost")
    (spec,) = [s for s in family_specs(PluginManager()) if s.resource_name == "ZETASUB"]
    monkeypatch.setenv(VISIBLE, "")  # recorded, so the test leaves the env as it was
    for name in (BOUNDS, "RAY_EXPERIMENTAL_NOSET_" + VISIBLE):
        monkeypatch.delenv(name, raising=False)
    yield install([spec])["ZETASUB"]
    uninstall()


def test_bounds_written_for_a_one_device_task_are_gone_for_a_whole_host_task(zetasub: Any) -> None:
    zetasub.set_current_process_visible_accelerator_ids(["2"])
    assert os.environ[VISIBLE] == "2" and os.environ[BOUNDS] == "1,1,1"
    zetasub.set_current_process_visible_accelerator_ids(["0", "1", "2", "3"])
    assert os.environ[VISIBLE] == "0,1,2,3" and BOUNDS not in os.environ
    zetasub.set_current_process_visible_accelerator_ids(["1"])
    assert os.environ[BOUNDS] == "1,1,1"
    zetasub.set_current_process_visible_accelerator_ids(["0", "1"])
    assert BOUNDS not in os.environ


def test_the_node_s_own_value_comes_back(zetasub: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(BOUNDS, "2,2,2")  # the node's (a multi-host slice's place)
    zetasub.set_current_process_visible_accelerator_ids(["0"])
    assert os.environ[BOUNDS] == "1,1,1"
    zetasub.set_current_process_visible_accelerator_ids(["0", "1"])
    assert os.environ[BOUNDS] == "2,2,2"
