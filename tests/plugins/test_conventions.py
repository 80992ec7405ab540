"""A plugin laid out as the template lays it out (fixtures/ and skus.yaml beside its module) needs no hook
for them: the manager answers rayaccel_fixture_dirs and rayaccel_sku_catalog from those files."""

from __future__ import annotations

import importlib
import shutil
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from rayaccel import hookspec
from rayaccel.hosts.fixtures import installed_fixtures
from rayaccel.onboarding.catalog_file import check_catalogs
from rayaccel.plugins.manager import PluginManager
from rayaccel_testplugins import acme

PLUGIN = '''
from rayaccel import Device, FamilyDeclaration, hookimpl, hookspec


@hookimpl
def rayaccel_family():
    return FamilyDeclaration(name="acme", vendor="ACME", resource_name="ACME",
                             visible_devices_env_var="ACME_VISIBLE_DEVICES", spec_version="1.0")


@hookimpl
def rayaccel_discover(host):
    return []
'''


@pytest.fixture
def laid_out(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Path]:
    """A plugin package, importable, with fixtures/ and skus.yaml beside its module and no hook for them."""
    package = f"conventional_{request.node.name.replace('[', '_').replace(']', '_').replace('-', '_')}"
    home = tmp_path / package
    (home / "fixtures").mkdir(parents=True)
    (home / "__init__.py").write_text("")
    (home / "plugin.py").write_text(PLUGIN)
    shutil.copy(acme.HERE / "acme_fixtures" / "acme-4.yaml", home / "fixtures")
    shutil.copy(acme.HERE / "acme-skus.yaml", home / "skus.yaml")
    sys.path.insert(0, str(tmp_path))
    try:
        yield home
    finally:
        sys.path.remove(str(tmp_path))
        for name in [m for m in sys.modules if m == package or m.startswith(package + ".")]:
            del sys.modules[name]


def manager_for(home: Path) -> PluginManager:
    manager = PluginManager(autoload=False, timeout=5.0)
    assert manager.register(importlib.import_module(f"{home.name}.plugin"), "acme"), manager.problems
    return manager


def test_fixtures_and_catalog_beside_the_module_are_the_plugins_own(laid_out: Path) -> None:
    manager = manager_for(laid_out)
    assert manager.implements("acme", "rayaccel_fixture_dirs")
    assert manager.implements("acme", "rayaccel_sku_catalog")
    assert manager.fixture_dirs("acme") == [str((laid_out / "fixtures").resolve())]
    assert list(installed_fixtures(manager)) == ["acme/acme-4"]
    catalog = manager.answer("acme", hookspec.SKU_CATALOG)
    assert catalog is not None and catalog.source_path == str((laid_out / "skus.yaml").resolve())
    assert [sku.id for sku in catalog.skus][:1] == ["acme-r1"]
    assert [c.error for c in check_catalogs(manager, ["acme"])] == [None]
    assert manager.problems == []


def test_a_broken_catalog_beside_the_module_is_the_plugins_problem_not_a_crash(laid_out: Path) -> None:
    (laid_out / "skus.yaml").write_text("schema: rayaccel-sku-catalog/1\nfamily: acme\nskus: [{id: 1}]\n")
    manager = manager_for(laid_out)
    problems: list = []
    assert manager.answer("acme", hookspec.SKU_CATALOG, problems) is None
    assert [(p.plugin, p.hook) for p in problems] == [("acme", "rayaccel_sku_catalog")]
    assert "skus.yaml" in problems[0].message


@pytest.mark.parametrize("hook, answer", [
    ("rayaccel_fixture_dirs", "return []"),
    ("rayaccel_sku_catalog", "return None"),
])
def test_a_hook_the_plugin_implements_wins_over_its_layout(laid_out: Path, hook: str, answer: str) -> None:
    plugin = laid_out / "plugin.py"
    plugin.write_text(plugin.read_text() + textwrap.dedent(f"""

        @hookimpl
        def {hook}():
            {answer}
    """))
    manager = manager_for(laid_out)
    assert manager.fixture_dirs("acme") == ([] if hook == "rayaccel_fixture_dirs" else
                                           [str((laid_out / "fixtures").resolve())])
    assert (manager.answer("acme", hookspec.SKU_CATALOG) is None) == (hook == "rayaccel_sku_catalog")


def test_without_the_files_the_hooks_are_simply_not_answered(laid_out: Path) -> None:
    shutil.rmtree(laid_out / "fixtures")
    (laid_out / "skus.yaml").unlink()
    manager = manager_for(laid_out)
    assert not manager.implements("acme", "rayaccel_fixture_dirs")
    assert not manager.implements("acme", "rayaccel_sku_catalog")
    assert manager.fixture_dirs("acme") == [] and manager.answer("acme", hookspec.SKU_CATALOG) is None


def test_every_reference_plugin_relies_on_the_convention() -> None:
    manager = PluginManager(autoload=True, timeout=10.0)
    for name in ("nvidia", "amd", "tpu", "neuron", "gaudi"):
        module = manager.plugin(name).module
        assert not hasattr(module, "rayaccel_fixture_dirs") and not hasattr(module, "rayaccel_sku_catalog")
        assert [Path(d).name for d in manager.fixture_dirs(name)] == ["fixtures"]
        catalog = manager.answer(name, hookspec.SKU_CATALOG)
        assert catalog is not None and catalog.skus, name
