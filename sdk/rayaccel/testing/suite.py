"""The tests every plugin gets by one line: ``TestPlugin = plugin_suite(plugin)`` in one of its test files.

Each fixture gives the inventory it expects with no problem it does not expect; each fault a fixture declares gives
the state it expects and, switched off, the host is as expected again; the first fixture builds the same with the
plugin in a worker process of its own (as a Ray node runs it); a machine without the hardware gives no devices and
no problem; the units of the first fixture survive the visible-devices variable.
"""

from __future__ import annotations

from types import ModuleType

import pytest

from rayaccel.testing.kit import (
    fault_differences,
    fixture_differences,
    metric_differences,
    plugin_kit,
    without_hardware,
)


def plugin_suite(plugin: ModuleType, name: str | None = None, *, distribution: str | None = None) -> type:
    """A test class (assign it to a name starting with ``Test``) holding the common tests of ``plugin``,
    parametrised over its fixtures and their faults (:class:`~rayaccel.testing.PluginKit` finds them)."""
    kit = plugin_kit(plugin, name, distribution=distribution)
    names = list(kit.fixture_paths)
    faults = kit.fault_cases()
    if not names:
        raise ValueError(f"plugin {kit.name} has no fixture: a plugin ships at least one (docs/fixtures.md)")

    @pytest.mark.parametrize("fixture", names)
    def test_fixture_gives_its_expected_inventory(self: object, fixture: str) -> None:
        assert fixture_differences(kit.inventory(fixture), kit.fixture(fixture)) == []

    @pytest.mark.parametrize("fixture", names)
    def test_fixture_gives_the_metric_values_its_machine_reads(self: object, fixture: str) -> None:
        assert metric_differences(kit.inventory(fixture), kit.fixture(fixture)) == []

    @pytest.mark.parametrize(("fixture", "fault"), faults, ids=[f"{n}:{f}" for n, f in faults])
    def test_fault_gives_its_expected_state_and_recovers(self: object, fixture: str, fault: str) -> None:
        faulty = kit.inventory(fixture, [fault])
        assert fault_differences(faulty, kit.fixture(fixture), fault) == []
        assert metric_differences(faulty, kit.fixture(fixture), fault) == []
        assert fixture_differences(kit.inventory(fixture), kit.fixture(fixture)) == []  # without it: healthy again

    def test_a_worker_process_builds_the_first_fixture_as_expected(self: object) -> None:
        assert fixture_differences(kit.inventory(names[0], isolated=True), kit.fixture(names[0])) == []

    def test_a_machine_without_the_hardware_gives_no_devices_and_no_problem(self: object) -> None:
        inventory = kit.inventory(without_hardware(kit.fixture(names[0])))
        assert inventory.family(kit.name) is None
        assert [p.render() for p in inventory.problems if p.plugin == kit.name] == []

    def test_the_visible_devices_variable_names_the_units_it_was_given(self: object) -> None:
        family = kit.inventory(names[0], with_metrics=False).family(kit.name)
        assert family is not None and family.schedulable_units, f"{names[0]} offers no unit"
        units = family.schedulable_units[::-1][:2]  # two units, not in discovery order
        env_var = kit.manager.family(kit.name).visible_devices_env_var
        value = kit.manager.visible_env(kit.name, units).get(env_var)
        assert value is not None and kit.manager.parse_visible(kit.name, value) == units

    tests = {f.__name__: f for f in (
        test_fixture_gives_its_expected_inventory, test_fixture_gives_the_metric_values_its_machine_reads,
        test_fault_gives_its_expected_state_and_recovers,
        test_a_worker_process_builds_the_first_fixture_as_expected,
        test_a_machine_without_the_hardware_gives_no_devices_and_no_problem,
        test_the_visible_devices_variable_names_the_units_it_was_given)}
    if not faults:
        del tests["test_fault_gives_its_expected_state_and_recovers"]
    return type(f"Test{kit.name.title().replace('-', '').replace('_', '')}Plugin", (),
                {"__doc__": __doc__, **tests})
