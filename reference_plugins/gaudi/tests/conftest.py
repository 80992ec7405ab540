"""Shared set-up for the Gaudi plugin's tests: one plugin manager holding just this plugin, and its fixtures."""

from __future__ import annotations

from pathlib import Path

import pytest

from rayaccel.plugins.manager import PluginManager
from rayaccel.simulation.fixtures import Fixture, load_fixture
from rayaccel_gaudi import plugin

FIXTURES = Path(plugin.__file__).parent / "fixtures"


@pytest.fixture(scope="session")
def gaudi_manager() -> PluginManager:
    pm = PluginManager(autoload=False)
    assert pm.register(plugin, "gaudi", distribution="rayaccel-gaudi"), pm.problems
    return pm


@pytest.fixture(scope="session")
def gaudi_fixtures() -> dict[str, Fixture]:
    return {p.stem: load_fixture(p) for p in sorted(FIXTURES.glob("*.yaml"))}
