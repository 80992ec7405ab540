"""The kit as a pytest plugin (entry point ``pytest11``: loaded wherever rayaccel is installed), as pytest's own
``pytester`` is: the fixtures ``rayaccel_kit`` (the :class:`~rayaccel.testing.PluginKit` of the plugin under
test), ``rayaccel_manager`` (a plugin manager holding just that plugin) and ``rayaccel_fixtures`` (its fixtures by
name).

The plugin under test is the one the nearest ``pyproject.toml`` above the test file installs (its only
``[project.entry-points.rayaccel]`` entry); a ``conftest.py`` names another by overriding ``rayaccel_plugin``.
Loading this module imports nothing of the SDK: the kit loads when a test asks for one of them.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from rayaccel.hosts.fixtures import Fixture
    from rayaccel.plugins.manager import PluginManager
    from rayaccel.testing.kit import PluginKit


def project_plugin(test_file: Path) -> tuple[str, ModuleType]:
    """The plugin the nearest ``pyproject.toml`` above ``test_file`` registers in the ``rayaccel`` group: its name
    and module (the project need not be installed)."""
    from rayaccel.testing.kit import project_entry_points

    declared = project_entry_points(test_file)
    if declared is None:
        raise pytest.UsageError(f"no pyproject.toml above {test_file}: define a rayaccel_plugin fixture returning "
                                "the plugin module under test in conftest.py")
    pyproject, plugins, _ = declared
    if len(plugins) != 1:
        raise pytest.UsageError(
            f"{pyproject} registers {len(plugins)} rayaccel plugins ([project.entry-points.rayaccel]), so the "
            "plugin under test is not known: define a rayaccel_plugin fixture returning its module in conftest.py")
    ((name, target),) = plugins.items()
    return name, importlib.import_module(target.partition(":")[0])


@pytest.fixture(scope="module")
def rayaccel_plugin(request: pytest.FixtureRequest) -> ModuleType:
    """The plugin module under test (override in conftest.py to name another)."""
    return project_plugin(Path(request.path))[1]


@pytest.fixture(scope="module")
def rayaccel_kit(request: pytest.FixtureRequest, rayaccel_plugin: ModuleType) -> PluginKit:
    """The kit of the plugin under test: its fixtures, hosts and inventories (shared by every test)."""
    from rayaccel.testing.kit import plugin_kit

    try:
        name, declared = project_plugin(Path(request.path))
    except pytest.UsageError:
        return plugin_kit(rayaccel_plugin)  # a conftest named the plugin: its entry point names it
    return plugin_kit(rayaccel_plugin, name if declared is rayaccel_plugin else None)


@pytest.fixture(scope="module")
def rayaccel_manager(rayaccel_kit: PluginKit) -> PluginManager:
    """A plugin manager holding just the plugin under test."""
    return rayaccel_kit.manager


@pytest.fixture(scope="module")
def rayaccel_fixtures(rayaccel_kit: PluginKit) -> dict[str, Fixture]:
    """The fixtures of the plugin under test by name, each parsed once (vary one through ``model_dump``)."""
    return rayaccel_kit.fixtures
