"""Held-out grading, round 6 (issue 46, lane H2): the untaken paths its Neuron, TPU and Gaudi survivors needed, on
the reference plugins wrapped with the survivor's one edit (registered under the real plugin's name, graded on its
own fixtures, as the round graded them).

The corpus grades the same invariants on plugins of other shapes (c-hint-row-of-next-size,
c-hint-gives-fabric-it-lacks: RAC209's hint-is-its-stated-machine).
"""

from __future__ import annotations

import types
from pathlib import Path
from typing import Any

import pytest

import rayaccel_neuron.plugin as neuron_plugin
from rayaccel import CloudHint, hookimpl
from rayaccel.hosts.fixtures import installed_fixtures, load_fixture
from rayaccel.plugins.instance_types import cloud_hint
from rayaccel.plugins.manager import PluginManager
from rayaccel_conformance.checks import all_checks
from rayaccel_conformance.checks.cloud_machines import stated_instance_types
from rayaccel_conformance.harness.subject import Subject
from rayaccel_conformance.registry import CHECKS, CheckFailed

NEURON_PACKAGE = neuron_plugin.__file__.rsplit("/", 1)[0]


def wrapped(module: types.ModuleType, name: str, package: str, **hooks: Any) -> Subject:
    """The reference plugin ``module`` with ``hooks`` in place of its own, under its own name and fixtures."""
    all_checks()
    own = {key: getattr(module, key) for key in dir(module) if key.startswith("rayaccel_")}
    fixture_dirs = hookimpl(lambda: [f"{package}/fixtures"])
    plugin = types.SimpleNamespace(**{**own, "rayaccel_fixture_dirs": fixture_dirs,
                                      **{key: hookimpl(value) for key, value in hooks.items()}})
    manager = PluginManager(autoload=False, timeout=10.0)
    manager.register(plugin, name)
    return Subject(name, manager)


def test_the_instance_type_a_host_states_is_read_from_ec2_s_dmi_product_name_only_in_its_shape() -> None:
    fixture = load_fixture(installed_fixtures(PluginManager())["neuron/trn2u.48xlarge-ultraserver-x2"])
    assert stated_instance_types(fixture) == [("aws", "trn2u.48xlarge", "/sys/devices/virtual/dmi/id/product_name")]
    for board in ("Standard PC (Q35 + ICH9, 2009)\n", "Virtual Machine\n", ""):
        files = {**fixture.host.files, "/sys/devices/virtual/dmi/id/product_name": board}
        assert stated_instance_types(fixture.model_copy(update={"host": fixture.host.model_copy(
            update={"files": files})})) == [], board


@pytest.mark.parametrize(("edited", "count"), [("trn2u.48xlarge", 128), ("trn2.48xlarge", 32)])
def test_a_neuron_hint_unlike_the_fixture_its_host_states_fails_rac209_naming_it(edited: str, count: int) -> None:
    def hints(provider: str, instance_type: str) -> CloudHint | None:  # the table, one row's count edited
        found = cloud_hint(Path(NEURON_PACKAGE) / "instance-types.yaml", provider, instance_type)
        return found.model_copy(update={"count": count}) if found and instance_type == edited else found

    subject = wrapped(neuron_plugin, "neuron", NEURON_PACKAGE, rayaccel_cloud_hints=hints)
    with pytest.raises(CheckFailed) as failed:
        CHECKS["RAC209"].function(subject)
    said = str(failed.value)
    assert f"hint for aws {edited}: count {count}" in said, said
    if edited == "trn2u.48xlarge":  # no fixture is named for it: only its host says what it is
        assert "invariant hint-is-its-stated-machine" in said and "ultraserver-x2 (its /sys/devices/virtual/dmi/id/" \
            "product_name states that instance type) discovery counts 64 neuron_cores" in said, said


def test_a_hint_equal_to_one_of_its_type_s_fixtures_at_its_defaults_passes_rac209() -> None:
    # trn2.48xlarge's two fixtures count 64 (LNC 2, the default) and 128 (NEURON_LOGICAL_NC_CONFIG=1): 64 is the type's.
    all_checks()
    said = CHECKS["RAC209"].function(Subject("neuron", PluginManager()))
    assert "trn2.48xlarge: 64 neuron_cores" in said, said
