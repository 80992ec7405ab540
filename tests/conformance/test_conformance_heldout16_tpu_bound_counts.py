"""Held-out grading, round 16 (issue 46, lane J6): the variables Ray's manager writes beside its own for some counts
of devices stay unset for the others (``invariant companions-only-where-ray-writes-them``, RAC270).

``p1`` (a TPU wrapper) added a 4-chip entry to the sub-host bounds table: a task given a whole 4-chip host got
``TPU_CHIPS_PER_HOST_BOUNDS=2,2,1`` and ``TPU_HOST_BOUNDS=1,1,1``, so a host of a multi-host slice (v5p-16's) was
told it is alone. Ray 2.60's TPUAcceleratorManager writes the bounds for 1 or 2 chips only and leaves the node's
for any other count; RAC270 compared the variables Ray writes, for each device, the first two and all, so one Ray
leaves alone for all the chips was never compared. Now every count the node offers is asked of Ray's manager, and
a variable it writes for some count but not this one, set by the plugin, is named: p1's edit on the TPU plugin and
two corpus shapes graded alone (one claimant of TPU_VISIBLE_CHIPS per manager); the TPU plugin as shipped passes.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest
from mutant_grading import wrapped

from rayaccel.plugins.manager import PluginManager
from rayaccel_conformance.checks import all_checks
from rayaccel_conformance.checks.experimental import _ray_validator
from rayaccel_conformance.checks.ray_counts import INVARIANT, ray_writes
from rayaccel_conformance.harness.subject import Subject
from rayaccel_conformance.registry import CHECKS, CheckFailed
from rayaccel_testplugins.corpus import Healthy
from rayaccel_testplugins.corpus_tpu_bound_counts import BOUND_COUNT_MUTANTS, RAY_CHIP_BOUNDS, SINGLE_HOST, _TpuLike
from rayaccel_tpu import plugin as tpu, visibility

VAR, BOUNDS, HOST_BOUNDS = "TPU_VISIBLE_CHIPS", "TPU_CHIPS_PER_HOST_BOUNDS", "TPU_HOST_BOUNDS"


def test_ray_s_tpu_manager_writes_bounds_for_one_or_two_chips_only() -> None:
    """The oracle, Ray 2.60's own manager: bounds for 1 and 2 chips, none for 3 or 4."""
    manager = _ray_validator("TPU", VAR)
    cleared = [BOUNDS, HOST_BOUNDS]
    assert ray_writes(manager, VAR, ["0"], cleared) == {BOUNDS: "1,1,1", HOST_BOUNDS: "1,1,1"}
    assert ray_writes(manager, VAR, ["0", "1"], cleared) == {BOUNDS: "1,2,1", HOST_BOUNDS: "1,1,1"}
    assert ray_writes(manager, VAR, ["0", "1", "2"], cleared) == {}
    assert ray_writes(manager, VAR, ["0", "1", "2", "3"], cleared) == {}


def name_of(cls: type[Healthy]) -> str:
    return "c-" + "".join(f"-{c.lower()}" if c.isupper() else c for c in cls.__name__).lstrip("-")


def alone(plugin: Healthy) -> Subject:
    """``plugin`` under a manager of its own (one claimant of TPU_VISIBLE_CHIPS)."""
    all_checks()
    manager = PluginManager(autoload=False, timeout=5.0)
    manager.register(plugin, plugin.name)
    return Subject(plugin.name, manager)


@pytest.mark.parametrize("mutant", BOUND_COUNT_MUTANTS, ids=lambda cls: cls.__name__)
def test_bounds_written_for_a_count_ray_leaves_alone_fail_rac270_naming_them(mutant: type[Healthy]) -> None:
    subject = alone(mutant(name_of(mutant)))
    (fixture, *_) = subject.fixture_paths()
    with pytest.raises(CheckFailed) as failed:
        CHECKS["RAC270"].function(subject, fixture)
    said = str(failed.value)
    assert mutant.KILLED_BY == ("RAC270", INVARIANT)
    unset = [line for line in said.split("; invariant ") if "Ray's settings unset" in line]
    assert unset and all(line.startswith(INVARIANT.removeprefix("invariant ")) or line.startswith(INVARIANT)
                         for line in unset), said
    assert f"{INVARIANT}, {subject.fixture(fixture).ref}, Ray's settings unset: units ['0', '1', '2', '3'] (4 of 4 " \
           f"devices) set " \
           f"{HOST_BOUNDS}='1,1,1'" in said, said
    assert f"Ray's TPUAcceleratorManager writes {HOST_BOUNDS} only for 1 or 2 devices and leaves it unset for 4" \
           in said, said


def test_the_same_family_writing_bounds_as_ray_does_passes_rac270() -> None:
    """The mutants' base with Ray's bounds for 1 and 2 chips only: the invariant is the only kill (with Ray's
    setting unset; with ``RAY_TPU_RESOURCE_PER_CHIP=2`` the base takes units for chips, as corpus_ray_parity's do)."""
    class AsRay(_TpuLike):
        def rayaccel_visible_env(self, unit_ids: Sequence[str]) -> dict[str, str]:
            env = {VAR: ",".join(unit_ids)}
            bounds = RAY_CHIP_BOUNDS.get(len(unit_ids))
            return {**env, BOUNDS: bounds, HOST_BOUNDS: SINGLE_HOST} if bounds else env

    subject = alone(AsRay("c-tpu-bounds-as-ray"))
    (fixture, *_) = subject.fixture_paths()
    try:
        said = str(CHECKS["RAC270"].function(subject, fixture))
    except CheckFailed as failed:  # the ACME base takes units for chips: right while Ray's setting is unset only
        said = str(failed)
        assert "Ray's settings unset" not in said and "RAY_TPU_RESOURCE_PER_CHIP=2" in said, said
    assert INVARIANT not in said, said


TPU_PACKAGE = str(Path(tpu.__file__).parent)


@pytest.mark.parametrize("fixture", ["tpu/v5p-16-worker0", "tpu/v6e-256-worker"])
def test_p1s_edit_on_the_tpu_plugin_fails_rac270_naming_it(fixture: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The TPU plugin with p1's one edit: a 4-chip entry in its sub-host bounds table."""
    monkeypatch.setitem(visibility.SUBHOST_BOUNDS, 4, "2,2,1")
    with pytest.raises(CheckFailed) as failed:
        CHECKS["RAC270"].function(wrapped(tpu, "tpu", TPU_PACKAGE), fixture)
    said = str(failed.value)
    assert f"{INVARIANT}, {fixture}, Ray's settings unset: units ['0', '1', '2', '3'] (4 of 4 devices) set " \
           f"{BOUNDS}='2,2,1'" in said, said


@pytest.mark.parametrize("fixture", ["tpu/v5p-16-worker0", "tpu/v6e-256-worker"])
def test_the_tpu_plugin_as_shipped_passes_rac270(fixture: str) -> None:
    said = str(CHECKS["RAC270"].function(wrapped(tpu, "tpu", TPU_PACKAGE), fixture))
    assert "as Ray's TPUAcceleratorManager writes and reads it" in said, said
