"""Shared set-up for the AMD plugin's tests: the testing kit's plugin manager holding just this plugin, and its
fixtures (rayaccel.testing: the plugin under test is the one this project's pyproject.toml installs)."""

from __future__ import annotations

import pytest

from rayaccel.testing import Fixture, PluginKit, PluginManager


@pytest.fixture(scope="module")
def manager(rayaccel_manager: PluginManager) -> PluginManager:
    return rayaccel_manager


@pytest.fixture(scope="module")
def fixtures(rayaccel_kit: PluginKit) -> dict[str, Fixture]:
    return rayaccel_kit.fixtures
