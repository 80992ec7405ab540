"""Shared set-up for the AMD plugin's tests: one plugin manager holding just this plugin, and its fixtures."""

from __future__ import annotations

from pathlib import Path

import pytest

from rayaccel.plugins.manager import PluginManager
from rayaccel.simulation.fixtures import Fixture, load_fixture
from rayaccel_amd import plugin

FIXTURES = Path(plugin.__file__).parent / "fixtures"
FIXTURE_NAMES = sorted(p.stem for p in FIXTURES.glob("*.yaml"))


@pytest.fixture(scope="session")
def manager() -> PluginManager:
    pm = PluginManager(autoload=False)
    assert pm.register(plugin, "amd", distribution="rayaccel-amd"), pm.problems
    return pm


@pytest.fixture(scope="session")
def fixtures() -> dict[str, Fixture]:
    return {name: load_fixture(FIXTURES / f"{name}.yaml") for name in FIXTURE_NAMES}
