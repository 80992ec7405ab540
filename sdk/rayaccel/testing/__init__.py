"""rayaccel.testing: the kit a plugin's tests stand on, public and versioned as ``rayaccel`` itself is.

What a vendor's suite needs to test its plugin the way the SDK runs it: load a fixture as a host, build the
plugin's inventory on it (in this process or in a worker process of its own), compare it with what the fixture
expects, switch a fault on, a plugin manager holding just the plugin under test, and the tests every plugin gets
by one line (``TestPlugin = plugin_suite(plugin)``). Installed with rayaccel, it is also a pytest plugin
(``rayaccel_kit`` and ``rayaccel_manager`` fixtures: :mod:`rayaccel.testing.pytest_plugin`).

Stability (docs/testing.md): every name below keeps its meaning and signature within a minor version of the kit
(``rayaccel.testing.__version__``); a name is removed only after a minor version in which it warns. A plugin's
tests import ``rayaccel`` and ``rayaccel.testing`` (and ``rayaccel.ray`` to start Ray), nothing else of the SDK.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rayaccel.support.lazy import lazy_exports

if TYPE_CHECKING:
    from rayaccel.catalog import (
        load_catalog as load_catalog,
        resolve_sku as resolve_sku,
        sku_disagreement as sku_disagreement,
    )
    from rayaccel.hosts.call_log import (
        CALLS_KEY as CALLS_KEY,
        RecordingLibrary as RecordingLibrary,
    )
    from rayaccel.hosts.expectations import expectation_differences as expectation_differences
    from rayaccel.hosts.fixtures import (
        Fixture as Fixture,
        load_fixture as load_fixture,
        merge_patch as merge_patch,
        parse_fixture as parse_fixture,
    )
    from rayaccel.hosts.recorded_fixture import inventory_view as inventory_view
    from rayaccel.hosts.recording import RecordingHost as RecordingHost
    from rayaccel.hosts.simulated import SimulatedHost as SimulatedHost
    from rayaccel.inventory.quantity import check_quantity as check_quantity
    from rayaccel.plugins.manager import PluginManager as PluginManager
    from rayaccel.records import (
        ACCELERATOR_TYPE_RE as ACCELERATOR_TYPE_RE,
        ID_FALLBACK as ID_FALLBACK,
        partition_resource_name as partition_resource_name,
    )
    from rayaccel.reporting import collect_problems as collect_problems
    from rayaccel.testing.kit import (
        PluginKit as PluginKit,
        build_inventory as build_inventory,
        fault_differences as fault_differences,
        fixture_differences as fixture_differences,
        fixture_host as fixture_host,
        metric_differences as metric_differences,
        plugin_kit as plugin_kit,
        plugin_manager as plugin_manager,
        without_hardware as without_hardware,
    )
    from rayaccel.testing.suite import plugin_suite as plugin_suite

#: The kit's version: a minor version adds names, only a major one changes or removes them (docs/testing.md).
__version__ = "1.1"

__getattr__, __dir__ = lazy_exports(globals())
