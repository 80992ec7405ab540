"""RAC270's ``labels-as-ray-gives-them`` (issue 46, lane J21, held-out round 18's ``p1``): a label Ray's own manager
gives the node on the same machine, given by the plugin too, holds Ray's value. Killed: the two corpus shapes
(``TPU_POD_TYPE_MUTANTS``, graded alone: one claimant of TPU_VISIBLE_CHIPS per manager) and the TPU plugin with the
round's one edit (``v5litepod`` labelled ``v5e``); the TPU plugin as shipped passes on every fixture."""

from __future__ import annotations

from typing import Any

import pytest
from mutant_grading import wrapped
from test_conformance_heldout5 import rac270_alone

import rayaccel_tpu.plugin as tpu_plugin
from rayaccel import FamilyInventory, Host
from rayaccel.plugins.manager import PluginManager
from rayaccel_conformance.checks import all_checks
from rayaccel_conformance.checks.experimental import _ray_validator
from rayaccel_conformance.checks.ray_labels import labels_as_ray_gives_them
from rayaccel_conformance.harness.subject import Subject
from rayaccel_conformance.registry import CHECKS, CheckFailed
from rayaccel_testplugins.corpus_ray_pod_types import TPU_POD_TYPE_MUTANTS

TPU_PACKAGE = tpu_plugin.__file__.rsplit("/", 1)[0]


@pytest.mark.parametrize(("mutant", "ours", "rays"), [
    (TPU_POD_TYPE_MUTANTS[0], "v5e-4", "v5litepod-4"), (TPU_POD_TYPE_MUTANTS[1], "v5p-8", "v5p-16")],
    ids=lambda v: v.__name__ if isinstance(v, type) else None)
def test_a_tpu_pod_type_label_unlike_ray_s_fails_rac270_naming_it(mutant: type[Any], ours: str, rays: str) -> None:
    fixture, said = rac270_alone(mutant)
    assert (f"invariant labels-as-ray-gives-them, {fixture}: label ray.io/tpu-pod-type={ours!r}; Ray's "
            f"TPUAcceleratorManager gives {rays!r} on this machine") in said, said


def test_the_tpu_plugin_labelling_v5litepod_as_v5e_fails_rac270_and_as_shipped_passes() -> None:
    all_checks()
    assert "TPU_VISIBLE_CHIPS as Ray's" in str(CHECKS["RAC270"].function(Subject("tpu", PluginManager()), "tpu/v5e-8"))

    def as_google_writes(host: Host, inventory: FamilyInventory) -> dict[str, str]:  # round 18's p1, its one edit
        labels: dict[str, str] = tpu_plugin.rayaccel_labels(host, inventory)
        return {k: v.replace("v5litepod", "v5e") if k == "ray.io/tpu-pod-type" else v for k, v in labels.items()}

    subject = wrapped(tpu_plugin, "tpu", TPU_PACKAGE, rayaccel_labels=as_google_writes)
    with pytest.raises(CheckFailed) as failed:
        CHECKS["RAC270"].function(subject, "tpu/v5e-8")
    assert ("invariant labels-as-ray-gives-them, tpu/v5e-8: label ray.io/tpu-pod-type='v5e-8'; Ray's "
            "TPUAcceleratorManager gives 'v5litepod-8' on this machine") in str(failed.value), failed.value


def test_every_tpu_fixture_s_labels_are_ray_s_where_ray_gives_them() -> None:
    # Ray's manager gives labels on these fixtures (the invariant is not vacuous), and the plugin's are its.
    all_checks()
    subject = Subject("tpu", PluginManager())
    manager = _ray_validator("TPU", "TPU_VISIBLE_CHIPS")
    compared = 0
    for ref in subject.fixture_paths():
        family = subject.inventory(ref).family("tpu")
        assert family is not None
        assert labels_as_ray_gives_them(manager, subject.fixture(ref), family) == [], ref
        compared += "ray.io/tpu-pod-type" in family.labels
    assert compared >= 4, compared
