"""Held-out grading, round 13 (issue 46, lane J1): a visible env sets the family's visibility variables and nothing
else (``invariant sets-only-its-visibility-variables``, RAC107).

The command-csv bake ``c1`` returned ``LD_LIBRARY_PATH=/opt/patterdale/lib`` from ``rayaccel_visible_env`` beside its
visible-devices variable: the SDK wrote every key into each worker and the raylet's env, so every task on the node lost
its own library path, and RAC107 judged only the family's variable and other families'. Ray's managers write their
own variable alone (TPU's two sub-host bounds beside it); a day-zero family's companions are those it declares. Two
corpus shapes (a constant library path, a thread count following the units), c1's edit on the TPU and Gaudi plugins
(Ray's managers the oracle) are named; TPU's bounds, which Ray writes too, and a day-zero runtime variable the family
declares pass; a declaration naming a process's variable or one Ray does not write is refused.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from mutant_grading import failure, mutant, wrapped
from pydantic import ValidationError

import rayaccel_gaudi.plugin
import rayaccel_tpu.plugin
from rayaccel import FamilyDeclaration
from rayaccel_conformance.checks.visibility_variables import unowned_variable_errors, unowned_variables
from rayaccel_conformance.registry import CHECKS, CheckFailed
from rayaccel_testplugins import zeta
from rayaccel_testplugins.corpus_visibility_variables import VisibleEnvSetsLibraryPath, VisibleEnvSetsThreadCount

INVARIANT = "invariant sets-only-its-visibility-variables"


@pytest.mark.parametrize(("shape", "setting"), [(VisibleEnvSetsLibraryPath, "LD_LIBRARY_PATH='/opt/acme/lib'"),
                                                (VisibleEnvSetsThreadCount, "OMP_NUM_THREADS='8'")])
def test_a_process_variable_in_the_visible_env_is_named(shape: type[VisibleEnvSetsLibraryPath], setting: str) -> None:
    plugin = mutant(shape)
    said = failure(plugin, "RAC107", "acme-4")
    assert f"{INVARIANT}: rayaccel_visible_env for units ['0'] sets {setting}, which is no visibility variable" in said
    assert f"visibility is {plugin.family.visible_devices_env_var} and the companions its declaration lists in " \
           "visible_env_companions (none)" in said, said
    assert "expected" not in said, said  # no fixture's expectation read


def with_library_path(module: Any) -> Callable[[list[str]], dict[str, str]]:
    """``module``'s rayaccel_visible_env (the SDK's default where it has none) with c1's edit: the runtime's library
    path beside it."""
    def visible_env(unit_ids: list[str]) -> dict[str, str]:
        own = getattr(module, "rayaccel_visible_env", None)
        env = own(unit_ids) if own else {module.rayaccel_family().visible_devices_env_var: ",".join(unit_ids)}
        return {**env, "LD_LIBRARY_PATH": "/opt/vendor/lib"}
    return visible_env


@pytest.mark.parametrize(("module", "name", "fixture", "rays"), [
    (rayaccel_tpu.plugin, "tpu", "v5e-8", "Ray's TPUAcceleratorManager writes only TPU_VISIBLE_CHIPS, "
                                          "TPU_CHIPS_PER_HOST_BOUNDS, TPU_HOST_BOUNDS for a task"),
    (rayaccel_gaudi.plugin, "gaudi", "hls-gaudi2", "Ray's HPUAcceleratorManager writes only HABANA_VISIBLE_MODULES "
                                                   "for a task")])
def test_a_reference_plugin_with_c1s_edit_is_named_against_rays_manager(module: Any, name: str, fixture: str,
                                                                        rays: str) -> None:
    subject = wrapped(module, name, str(Path(module.__file__).parent), rayaccel_visible_env=with_library_path(module))
    with pytest.raises(CheckFailed) as failed:
        CHECKS["RAC107"].function(subject, f"{name}/{fixture}")
    said = str(failed.value)
    assert f"sets LD_LIBRARY_PATH='/opt/vendor/lib', which is no visibility variable: {rays}" in said, said


def test_tpus_bounds_which_ray_writes_too_pass() -> None:
    subject = wrapped(rayaccel_tpu.plugin, "tpu", str(Path(rayaccel_tpu.plugin.__file__).parent))
    assert rayaccel_tpu.plugin.rayaccel_visible_env(["0"]).keys() == {
        "TPU_VISIBLE_CHIPS", "TPU_CHIPS_PER_HOST_BOUNDS", "TPU_HOST_BOUNDS"}
    assert "unit sets round-trip" in str(CHECKS["RAC107"].function(subject, "tpu/v5e-8"))


def test_rays_own_companions_stay_the_familys_where_a_plugin_declares_none() -> None:
    """A TPU plugin written before visible_env_companions existed writes Ray's bounds beside TPU_VISIBLE_CHIPS as
    Ray's manager does: neither the SDK drops them nor RAC107 names them; another key is still named."""
    undeclared = rayaccel_tpu.plugin.rayaccel_family().model_copy(update={"visible_env_companions": []})
    env = rayaccel_tpu.plugin.rayaccel_visible_env(["0", "1"])
    assert set(undeclared.visibility_variables) == set(env) == {
        "TPU_VISIBLE_CHIPS", "TPU_CHIPS_PER_HOST_BOUNDS", "TPU_HOST_BOUNDS"}
    assert unowned_variables(undeclared, env) == {}
    assert unowned_variables(undeclared, {**env, "LD_LIBRARY_PATH": "/opt/vendor/lib"}) == {
        "LD_LIBRARY_PATH": "/opt/vendor/lib"}


def test_a_runtime_variable_a_day_zero_family_declares_passes_and_undeclared_is_named() -> None:
    declared = zeta.rayaccel_family()
    env = zeta.rayaccel_visible_env(["0", "2"])
    assert env == {"ZETA_VISIBLE_DEVICES": "zeta0+zeta2", "ZETA_DEVICE_COUNT": "2"}
    assert unowned_variables(declared, env) == {}
    undeclared = declared.model_copy(update={"visible_env_companions": []})
    (said,) = unowned_variable_errors(undeclared, [(["0", "2"], unowned_variables(undeclared, env))])
    assert said.startswith(f"{INVARIANT}: rayaccel_visible_env for units ['0', '2'] sets ZETA_DEVICE_COUNT='2'"), said


@pytest.mark.parametrize(("resource", "var", "companion", "why"), [
    ("ACME", "ACME_VISIBLE_DEVICES", "LD_LIBRARY_PATH", "is a well-known process, runtime or other vendor's variable"),
    ("ACME", "ACME_VISIBLE_DEVICES", "OMP_NUM_THREADS", "is a well-known process, runtime or other vendor's variable"),
    ("ACME", "ACME_VISIBLE_DEVICES", "ACME_VISIBLE_DEVICES", "is the family's visible_devices_env_var itself"),
    ("TPU", "TPU_VISIBLE_CHIPS", "TPU_ACCELERATOR_TYPE", "is not a variable Ray's manager for TPU with "
                                                         "TPU_VISIBLE_CHIPS writes beside it"),
    ("HPU", "HABANA_VISIBLE_MODULES", "HABANA_VISIBLE_DEVICES", "(it writes none)")])
def test_a_declared_companion_must_select_devices_as_the_family_or_ray_does(resource: str, var: str, companion: str,
                                                                            why: str) -> None:
    with pytest.raises(ValidationError, match=r"visible_env_companions.*" + re.escape(why)):
        FamilyDeclaration(name="acme", vendor="Acme", resource_name=resource, visible_devices_env_var=var,
                          spec_version="1.0", visible_env_companions=[companion])
