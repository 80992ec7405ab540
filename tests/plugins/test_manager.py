"""The plugin manager refuses bad plugins and isolates failing hooks, leaving the others intact."""

from __future__ import annotations

import time
import types
from typing import Any

import pytest

from rayaccel import Device, FamilyDeclaration, RealHost, hookimpl, hookspec
from rayaccel.errors import PluginError
from rayaccel.hosts.simulated import SimulatedHost
from rayaccel.inventory.builder import collect_inventory
from rayaccel.plugins.manager import MISSING, PluginManager
from rayaccel_testplugins import acme


def make_plugin(name: str, resource: str | None = None, env_var: str | None = None, spec: str = "1.0",
                **hooks: Any) -> types.SimpleNamespace:
    """A small in-test plugin: a family declaration plus whatever hooks the test gives it."""

    def rayaccel_family() -> FamilyDeclaration:
        return FamilyDeclaration(name=name, vendor=name.title(), resource_name=resource or name.upper(),
                                 visible_devices_env_var=env_var or f"{name.upper()}_VISIBLE_DEVICES",
                                 spec_version=spec)

    def rayaccel_discover(host: Any) -> list[Device]:
        return [Device(index=i, id=f"{name}-{i}", product_name=f"{name} chip") for i in range(2)]

    namespace = {"rayaccel_family": rayaccel_family, "rayaccel_discover": rayaccel_discover, **hooks}
    return types.SimpleNamespace(**{k: hookimpl(v) for k, v in namespace.items()})


@pytest.fixture
def acme_host(manager_with_acme: PluginManager) -> SimulatedHost:
    from rayaccel.hosts.fixtures import resolve_fixture

    return SimulatedHost(resolve_fixture("acme/acme-4", manager_with_acme))


@pytest.fixture
def manager_with_acme() -> PluginManager:
    manager = PluginManager(autoload=False, timeout=1.0)
    assert manager.register(acme, "acme")
    return manager


def codes(manager: PluginManager, plugin: str) -> list[str]:
    return [p.code for p in manager.problems if p.plugin == plugin]


def test_malformed_result_is_a_problem_naming_plugin_hook_and_field(manager_with_acme, acme_host):
    bad = make_plugin("bad", rayaccel_discover=lambda host: [{"index": -1, "id": "x", "product_name": "p"}])
    assert manager_with_acme.register(bad, "bad")
    inventory = collect_inventory(manager_with_acme, acme_host)
    problem = next(p for p in inventory.problems if p.plugin == "bad")
    assert problem.code == "invalid-record"
    assert problem.hook == "rayaccel_discover"
    assert "item 0 (id 'x') at index: " in problem.message and "greater than or equal to 0 (got -1)" in problem.message
    assert problem.fix and "Device" in problem.fix
    assert inventory.resources["ACME"] == 4  # the well-behaved plugin is untouched


def test_one_malformed_device_costs_itself_not_the_family(manager_with_acme, acme_host):
    """One GPU's garbage (a negative memory size, a name that is no string) is left out with one problem each
    naming the device, the field and the value; the good devices beside it are reported."""
    good = [{"index": i, "id": f"g{i}", "product_name": "G"} for i in range(3)]
    bad_memory = {"index": 3, "id": "g3", "product_name": "G", "memory_mib": -1}
    bad_name = {"index": 4, "id": "g4", "product_name": 7}
    plugin = make_plugin("bad", rayaccel_discover=lambda host: [*good, bad_memory, bad_name])
    assert manager_with_acme.register(plugin, "bad")
    inventory = collect_inventory(manager_with_acme, acme_host)
    assert [d.id for d in inventory.family("bad").devices] == ["g0", "g1", "g2"]
    messages = [p.message for p in inventory.problems if p.plugin == "bad" and p.code == "invalid-record"]
    assert len(messages) == 2
    assert "item 3 (id 'g3') at memory_mib: " in messages[0] and "(got -1)" in messages[0]
    assert "item 4 (id 'g4') at product_name: " in messages[1] and "(got 7)" in messages[1]
    assert all("\n" not in m for m in messages)


def test_a_record_a_hook_could_not_build_is_one_line_naming_field_and_value(manager_with_acme, acme_host):
    def build_badly(host: Any) -> list[Device]:
        return [Device(index=0, id="x", product_name="p", memory_mib=-5)]

    assert manager_with_acme.register(make_plugin("bad", rayaccel_discover=build_badly), "bad")
    inventory = collect_inventory(manager_with_acme, acme_host)
    (problem,) = [p for p in inventory.problems if p.plugin == "bad" and p.code == "hook-raised"]
    assert problem.message == ("raised ValidationError building a record, at memory_mib: Input should be greater "
                               "than or equal to 0 (got -5)")


def test_plugin_that_raises_does_not_stop_the_others(manager_with_acme, acme_host):
    def explode(host: Any) -> list[Device]:
        raise RuntimeError("driver exploded")

    assert manager_with_acme.register(make_plugin("boom", rayaccel_discover=explode), "boom")
    inventory = collect_inventory(manager_with_acme, acme_host)
    problem = next(p for p in inventory.problems if p.plugin == "boom")
    assert (problem.code, problem.hook) == ("hook-raised", "rayaccel_discover")
    assert "RuntimeError: driver exploded" in problem.message
    assert inventory.resources["ACME"] == 4


def test_plugin_can_report_a_problem_in_its_own_words(manager_with_acme, acme_host):
    from rayaccel import HookError

    def tool_hangs(host: Any) -> list[Device]:
        raise HookError("acme-smi did not answer within 5s", fix="reset the card with acme-smi --reset",
                        code="tool-timeout")

    assert manager_with_acme.register(make_plugin("own", rayaccel_discover=tool_hangs), "own")
    problem = next(p for p in collect_inventory(manager_with_acme, acme_host).problems if p.plugin == "own")
    assert (problem.code, problem.message, problem.fix) == (
        "tool-timeout", "acme-smi did not answer within 5s", "reset the card with acme-smi --reset")


def test_plugin_that_hangs_is_abandoned_after_the_timeout(manager_with_acme, acme_host):
    def hang(host: Any) -> list[Device]:
        time.sleep(30)
        return []

    assert manager_with_acme.register(make_plugin("slow", rayaccel_discover=hang), "slow")
    started = time.monotonic()
    inventory = collect_inventory(manager_with_acme, acme_host)
    assert time.monotonic() - started < 5
    problem = next(p for p in inventory.problems if p.plugin == "slow")
    assert problem.code == "hook-timeout" and "within 1s" in problem.message
    assert inventory.resources["ACME"] == 4


def test_colliding_plugins_are_all_refused_and_every_party_is_named(manager_with_acme):
    assert not manager_with_acme.register(make_plugin("acme2", env_var="ACME_VISIBLE_DEVICES"), "acme2")
    assert manager_with_acme.plugin_names() == []
    for party in ("acme", "acme2"):
        problem = next(p for p in manager_with_acme.problems if p.plugin == party)
        assert problem.code == "collision"
        assert "acme (registered directly)" in problem.message and "acme2 (registered directly)" in problem.message
        assert "RAYACCEL_DISABLE=" in (problem.fix or "")


def test_resource_name_collision_is_refused_but_ray_gpu_families_may_share_gpu():
    manager = PluginManager(autoload=False)
    assert manager.register(make_plugin("nv", resource="GPU", env_var="CUDA_VISIBLE_DEVICES"), "nv")
    assert manager.register(make_plugin("amdx", resource="GPU", env_var="HIP_VISIBLE_DEVICES"), "amdx")
    assert manager.register(make_plugin("one", resource="WIDGET"), "one")
    assert not manager.register(make_plugin("two", resource="WIDGET"), "two")
    assert sorted(manager.plugin_names()) == ["amdx", "nv"]


def test_reserved_ray_names_are_refused():
    manager = PluginManager(autoload=False)
    assert not manager.register(make_plugin("cpu", resource="CPU"), "cpu")
    assert not manager.register(make_plugin("fake", resource="TPU", env_var="FAKE_VISIBLE"), "fake")
    assert codes(manager, "cpu") == ["reserved-name"]
    problem = next(p for p in manager.problems if p.plugin == "fake")
    assert "TPU_VISIBLE_CHIPS" in problem.message


def test_spec_major_version_mismatch_is_refused_with_the_versions():
    manager = PluginManager(autoload=False)
    assert not manager.register(make_plugin("future", spec="2.3"), "future")
    assert manager.register(make_plugin("minor", spec="1.7"), "minor")
    problem = next(p for p in manager.problems if p.plugin == "future")
    assert problem.code == "spec-version" and "2.3" in problem.message and hookspec.SPEC_VERSION in problem.message


def test_blocked_plugin_is_an_info_problem(monkeypatch):
    monkeypatch.setenv("RAYACCEL_DISABLE", "blocked, other")
    manager = PluginManager(autoload=False)
    assert not manager.register(make_plugin("blocked"), "blocked")
    problem = manager.problems[0]
    assert (problem.code, problem.severity) == ("disabled", "info")


def test_blocklist_applies_to_entry_points_and_env_plugins(monkeypatch):
    monkeypatch.setenv("RAYACCEL_PLUGINS", "acme=rayaccel_testplugins.acme")
    assert "acme" in PluginManager(autoload=False).plugin_names()
    monkeypatch.setenv("RAYACCEL_DISABLE", "acme")
    manager = PluginManager(autoload=False)
    assert manager.plugin_names() == [] and codes(manager, "acme") == ["disabled"]


def test_env_plugin_that_fails_to_import_is_a_problem(monkeypatch):
    monkeypatch.setenv("RAYACCEL_PLUGINS", "ghost=no_such_module_anywhere")
    manager = PluginManager(autoload=False)
    problem = manager.problems[0]
    assert problem.plugin == "ghost" and problem.code == "hook-raised" and "ModuleNotFoundError" in problem.message


def test_malformed_plugins_env_is_a_clear_error(monkeypatch):
    monkeypatch.setenv("RAYACCEL_PLUGINS", "justaname")
    with pytest.raises(PluginError, match="name=module"):
        PluginManager(autoload=False)


def test_unknown_hook_name_is_refused_with_the_known_names():
    plugin = make_plugin("typo", rayaccel_discovr=lambda host: [])
    manager = PluginManager(autoload=False)
    assert not manager.register(plugin, "typo")
    problem = manager.problems[0]
    assert problem.code == "unknown-hook" and "rayaccel_discovr" in problem.message
    assert "rayaccel_discover" in (problem.fix or "")


def test_missing_required_hook_is_refused():
    plugin = types.SimpleNamespace(rayaccel_family=make_plugin("nodisc").rayaccel_family)
    manager = PluginManager(autoload=False)
    assert not manager.register(plugin, "nodisc")
    assert codes(manager, "nodisc") == ["missing-hook"]


def test_undecorated_hook_functions_still_count():
    module = types.ModuleType("plain")
    module.rayaccel_family = lambda: FamilyDeclaration(  # type: ignore[attr-defined]
        name="plain", vendor="Plain", resource_name="PLAIN", visible_devices_env_var="PLAIN_VISIBLE",
        spec_version="1.0")
    module.rayaccel_discover = lambda host: []  # type: ignore[attr-defined]
    manager = PluginManager(autoload=False)
    assert manager.register(module, "plain")
    assert manager.implements("plain", "rayaccel_discover")


def test_unimplemented_optional_hook_is_missing_not_a_problem(manager_with_acme):
    assert manager_with_acme.call("acme", "rayaccel_cloud_hints", provider="aws", instance_type="x") is MISSING
    assert manager_with_acme.problems == []


def test_visibility_defaults_when_a_plugin_does_not_override(manager_with_acme):
    assert manager_with_acme.parse_visible("acme", "0, 2,3") == ["0", "2", "3"]
    assert manager_with_acme.parse_visible("acme", "") == []
    assert manager_with_acme.visible_env("acme", ["1", "3"]) == {"ACME_VISIBLE_DEVICES": "1,3"}


def test_unknown_plugin_lookup_names_the_installed_ones(manager_with_acme):
    with pytest.raises(PluginError, match=r"unknown plugin 'nope'.*acme"):
        manager_with_acme.plugin("nope")


# Through pluggy, with the metadata in the spec ---------------------------------------------------------


def test_every_hook_declares_its_metadata_in_the_spec():
    from rayaccel import hookspec

    specs = {name for name in vars(hookspec) if name.startswith("rayaccel_")}
    assert set(hookspec.HOOKS) == specs
    assert hookspec.REQUIRED_HOOKS == ("rayaccel_family", "rayaccel_discover")
    assert all(info.fix for info in hookspec.HOOKS.values())


def test_hooks_are_called_through_pluggy_with_the_plugins_wrappers_and_monitoring():
    def rayaccel_discover(host: Any) -> list[Device]:
        return [Device(index=0, id="w-0", product_name="w chip")]

    @hookimpl(wrapper=True)
    def wrap_discover(host: Any) -> Any:
        devices = yield
        return [*devices, Device(index=1, id="w-1", product_name="added by the wrapper")]

    wrap_discover.rayaccel_impl["specname"] = "rayaccel_discover"  # type: ignore[attr-defined]
    plugin = make_plugin("w", rayaccel_discover=rayaccel_discover)
    plugin.wrap_discover = wrap_discover
    manager = PluginManager(autoload=False)
    assert manager.register(plugin, "w")
    seen: list[str] = []
    undo = manager.pluggy.add_hookcall_monitoring(lambda name, impls, kwargs: seen.append(name),
                                                  lambda outcome, name, impls, kwargs: None)
    try:
        devices = manager.answer("w", hookspec.DISCOVER, [], host=RealHost())
    finally:
        undo()
    assert [d.id for d in devices or []] == ["w-0", "w-1"]
    assert seen == ["rayaccel_discover"]


def test_another_plugins_code_never_runs_in_a_plugins_call(manager_with_acme, acme_host):
    calls: list[str] = []

    def rayaccel_discover(host: Any) -> list[Device]:
        calls.append("other")
        return []

    assert manager_with_acme.register(make_plugin("other", rayaccel_discover=rayaccel_discover), "other")
    assert len(manager_with_acme.answer("acme", hookspec.DISCOVER, [], host=acme_host) or []) == 4
    assert calls == []
    assert manager_with_acme.answer("other", hookspec.DISCOVER, [], host=acme_host) == [] and calls == ["other"]


def test_disabled_names_are_blocked_in_pluggy_when_the_manager_is_made(monkeypatch):
    monkeypatch.setenv("RAYACCEL_DISABLE", "blocked")
    manager = PluginManager(autoload=False)
    monkeypatch.delenv("RAYACCEL_DISABLE")
    assert manager.pluggy.is_blocked("blocked")
    assert not manager.register(make_plugin("blocked"), "blocked")
    assert codes(manager, "blocked") == ["disabled"]


def test_one_default_manager_per_process_and_settings(monkeypatch):
    from rayaccel.plugins.manager import default_manager, reset_default_manager

    monkeypatch.setenv("RAYACCEL_NO_AUTOLOAD", "1")
    monkeypatch.setenv("RAYACCEL_PLUGINS", "acme=rayaccel_testplugins.acme")
    first = default_manager()
    assert default_manager() is first and first.plugin_names() == ["acme"]
    monkeypatch.setenv("RAYACCEL_DISABLE", "acme")
    assert default_manager() is not first and default_manager().plugin_names() == []
    monkeypatch.delenv("RAYACCEL_DISABLE")
    assert default_manager() is first
    reset_default_manager()
    assert default_manager() is not first


def test_a_plugin_importing_ray_is_not_blamed_for_what_importing_ray_sets(tmp_path, monkeypatch):
    """The template's transport subclasses Ray's TensorTransportManager, so its module imports Ray, and
    `import ray` writes RAY_CLIENT_MODE=0 into os.environ: that is Ray's, not the plugin's. A plugin writing
    any other variable at import is still caught and undone."""
    import subprocess
    import sys

    (tmp_path / "uses_ray.py").write_text(
        "import ray  # noqa: F401\nimport os\nimport rayaccel.transports.shared_memory  # noqa: F401\n"
        "from rayaccel import FamilyDeclaration, QuantityRule, hookimpl\n"
        "if os.environ.get('ALSO_WRITE'):\n    os.environ['ACME_SOMETHING'] = '1'\n"
        "@hookimpl\ndef rayaccel_family():\n"
        "    return FamilyDeclaration(name='uses-ray', vendor='U', resource_name='USES_RAY',\n"
        "                             visible_devices_env_var='USES_RAY_VISIBLE_DEVICES',\n"
        "                             quantity_rule=QuantityRule(kind='whole'), spec_version='1.0')\n"
        "@hookimpl\ndef rayaccel_discover(host):\n    return []\n")
    probe = ("from rayaccel.plugins.manager import PluginManager\n"
             "m = PluginManager()\n"
             "print(sorted(p.code for p in m.problems if p.plugin == 'uses-ray'), m.plugin_names())")
    env = {k: v for k, v in __import__("os").environ.items() if k != "RAY_CLIENT_MODE"}
    env.update({"RAYACCEL_NO_AUTOLOAD": "1", "RAYACCEL_PLUGINS": "uses-ray=uses_ray", "PYTHONPATH": str(tmp_path)})
    clean = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, env=env,
                           check=False)
    assert clean.returncode == 0, clean.stderr[-2000:]
    assert clean.stdout.strip() == "[] ['uses-ray']"
    dirty = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120,
                           env={**env, "ALSO_WRITE": "1"}, check=False)
    assert dirty.stdout.strip() == "['environ-changed'] ['uses-ray']", dirty.stderr[-2000:]


def test_each_typed_hook_reference_names_a_hook_and_its_answer_type() -> None:
    """`manager.answer(plugin, hookspec.TOPOLOGY, ...)` is typed by the reference's parameter: it must be the
    hook's validated result, or that or None where the hook's default is no answer."""
    import typing

    hints = typing.get_type_hints(hookspec, localns=hookspec.annotation_names())
    references = {name: value for name, value in vars(hookspec).items() if isinstance(value, hookspec.Hook)}
    assert len(references) == 12
    for constant, reference in references.items():
        info = hookspec.HOOKS[reference.name]
        (answer,) = typing.get_args(hints[constant])
        no_answer = info.default(family=None, unit_ids=[], value="", provider="", instance_type="") is None
        assert answer == (info.result | None if no_answer and info.result is not None else info.result), constant
