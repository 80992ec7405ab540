"""Cross-record invariants (issue 46), beyond the corpus's kills (tests/conformance/test_conformance_corpus.py grades
two mutants per family): a cloud hint another vendor's installed plugin also gives is a conflict naming it (RAC220),
the unrelated device the suite adds at the host seam is one the fixture does not have, and a correct plugin
passes every invariant on every variant."""

from __future__ import annotations

from typing import Any

import pytest

from rayaccel import CloudHint
from rayaccel.plugins.manager import PluginManager
from rayaccel_conformance.checks import all_checks
from rayaccel_conformance.checks.invariants import unrelated_device_patch, variants
from rayaccel_conformance.harness.subject import Subject
from rayaccel_conformance.registry import CHECKS
from rayaccel_testplugins import corpus

all_checks()
INVARIANTS = ("RAC114", "RAC215", "RAC216", "RAC217", "RAC218", "RAC219", "RAC220")


class OtherVendorSameMachine(corpus.Healthy):
    """Another vendor's plugin whose instance-type table lists the control's machine, ``acme-node``."""

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.family = self.family.model_copy(update={"vendor": "Zeta Systems"})

    def rayaccel_cloud_instance_types(self) -> list[CloudHint]:
        return [CloudHint(provider="other", instance_type="acme-node", family=self.name, count=4)]


@pytest.fixture(scope="module")
def graded() -> dict[str, Subject]:
    manager = PluginManager(autoload=False, timeout=5.0)
    plugins: dict[str, Any] = {"c-healthy": corpus.PLUGINS["c-healthy"],
                               "c-other-vendor": OtherVendorSameMachine("c-other-vendor")}
    for name, plugin in plugins.items():
        manager.register(plugin, name)
    subjects = {}
    for name in plugins:
        subject = Subject(name, manager)
        for check_id in INVARIANTS:
            refs = list(subject.fixture_paths()) if CHECKS[check_id].scope == "fixture" else [None]
            for ref in refs:
                subject.run(CHECKS[check_id], ref)
        subjects[name] = subject
    return subjects


def test_a_hint_another_vendors_plugin_gives_too_is_a_conflict_naming_it(graded: dict[str, Subject]) -> None:
    rac220 = [o for o in graded["c-healthy"].outcomes if o.check_id == "RAC220"]
    assert [o.outcome for o in rac220] == ["failed"]
    assert any("other acme-node is hinted by installed plugin c-other-vendor too" in line
               for line in rac220[0].evidence), rac220[0].evidence


def test_the_control_holds_every_other_invariant_on_every_variant(graded: dict[str, Subject]) -> None:
    outcomes = [o for o in graded["c-healthy"].outcomes if o.check_id != "RAC220"]
    assert outcomes and all(o.outcome in ("passed", "skipped") for o in outcomes), [
        (o.check_id, o.evidence) for o in outcomes if o.outcome not in ("passed", "skipped")]
    assert any(o.outcome == "passed" and o.check_id == "RAC219" for o in outcomes)
    subject = graded["c-healthy"]
    ref = next(iter(subject.fixture_paths()))
    names = [v.name for v in variants(subject, ref)]
    assert names[0].endswith("as recorded") and "unrelated virtio display device" in names[-1]
    assert any("perturbation" in n for n in names)


def test_the_unrelated_device_is_one_the_fixture_does_not_have(graded: dict[str, Subject]) -> None:
    subject = graded["c-healthy"]
    fx = subject.fixture(next(iter(subject.fixture_paths())))
    patch, what = unrelated_device_patch(fx)
    assert not set(patch["files"]) & set(fx.host.files)
    assert "0000:ee:00.0" in what and "/dev/dri/card9" in what
