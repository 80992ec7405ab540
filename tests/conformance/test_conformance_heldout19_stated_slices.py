"""RAC202's ``a-slice-holds-the-chips-its-topology-states`` (issue 46, lane J24, held-out round 19's ``p2``): where the
machine states one count twice, a topology's product and the count a name ends in, a domain whose id the machine
states holds that many devices. Killed: the two corpus shapes and the TPU plugin with the round's one edit (v6e left
out of the single-core generations, a v6e-256 slice sized 128), also where its fixture expects the edit's labels
(``p2e``); the TPU plugin as shipped (round 19's control) passes on every fixture, and the invariant reads the machine,
not the fixture's expectation."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from mutant_grading import failure, graded, mutant, wrapped

import rayaccel_tpu.plugin as tpu_plugin
from rayaccel.plugins.manager import PluginManager
from rayaccel_conformance.checks import all_checks
from rayaccel_conformance.checks.stated_slices import INVARIANT, counted_twice, stated_slice_findings
from rayaccel_conformance.harness.subject import Subject
from rayaccel_conformance.registry import CHECKS, CheckFailed
from rayaccel_testplugins.corpus_stated_slices import SliceSizedByOwnCards, SliceTopologyReadFlat
from rayaccel_tpu import podtype

TPU_PACKAGE = tpu_plugin.__file__.rsplit("/", 1)[0]
V6E = "v6e-256-worker"
SlicePlugin = type[SliceTopologyReadFlat | SliceSizedByOwnCards]


@pytest.mark.parametrize(("cls", "said"), [
    (SliceTopologyReadFlat, "domain 'acme-slice-a' (other) has size 8, 1/4 of the 32 the machine states twice: its "
                            "topology 2x4x4 (`acme-smi slice --json` output) holds 32 chips and its name acme-x1-32"),
    (SliceSizedByOwnCards, "domain 'acme-pod-b' (other) has size 4, 1/4 of the 16 the machine states twice: its "
                           "topology 4x4 (file /sys/class/acme/slice/info) holds 16 chips and its name acme-r2-16")],
    ids=["topology-read-flat", "sized-by-own-cards"])
def test_a_slice_sized_otherwise_than_its_stated_chips_fails_rac202_naming_it(cls: SlicePlugin, said: str) -> None:
    plugin = mutant(cls)
    message = failure(plugin, "RAC202", cls.MACHINE)
    assert f"invariant {INVARIANT}, {plugin.name}/{cls.MACHINE}: {said}" in message, message


@pytest.mark.parametrize("cls", [SliceTopologyReadFlat, SliceSizedByOwnCards], ids=["json", "file"])
def test_the_slice_sized_by_its_topology_is_no_finding(cls: SlicePlugin) -> None:
    plugin = mutant(cls)
    subject = graded(plugin)
    fx = subject.fixture(f"{plugin.name}/{cls.MACHINE}")
    twice = counted_twice(fx.host.model_dump(mode="json"))
    assert twice is not None
    (domain,) = subject.inventory(fx.ref).family(plugin.name).topology.domains  # type: ignore[union-attr]
    assert stated_slice_findings(fx, [domain]) != []
    assert stated_slice_findings(fx, [domain.model_copy(update={"size": twice[0]})]) == []
    # a domain the machine does not name is not bound by the slice's count
    assert stated_slice_findings(fx, [domain.model_copy(update={"id": "another-domain"})]) == []


def _p2_fixture(tmp_path: Path) -> Path:
    """The TPU plugin's v6e fixture with its expected labels rewritten to the edit's answer (round 19's ``p2e``)."""
    data = yaml.safe_load((Path(TPU_PACKAGE) / "fixtures" / f"{V6E}.yaml").read_text(encoding="utf-8"))
    data["expected"]["labels"]["rayaccel.io/scale-up-domain-size"] = "128"
    (tmp_path / f"{V6E}.yaml").write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return tmp_path


@pytest.mark.parametrize("edited", [False, True], ids=["p2", "p2e"])
def test_the_tpu_plugin_counting_v6e_as_two_cores_fails_rac202_naming_it(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path, edited: bool) -> None:
    monkeypatch.setattr(podtype, "SINGLE_CORE_GENERATIONS", ("v5litepod",))  # round 19's p2, its one edit
    fixtures = str(_p2_fixture(tmp_path)) if edited else f"{TPU_PACKAGE}/fixtures"
    subject = wrapped(tpu_plugin, "tpu", TPU_PACKAGE, rayaccel_fixture_dirs=lambda: [fixtures])
    with pytest.raises(CheckFailed) as failed:
        CHECKS["RAC202"].function(subject, f"tpu/{V6E}")
    assert (f"invariant {INVARIANT}, tpu/{V6E}: domain 'trillium-pod-256' (tpu-slice) has size 128, half the 256 the "
            "machine states twice: its topology 16x16") in str(failed.value), failed.value
    assert "its name v6e-256" in str(failed.value)


def test_the_tpu_plugin_as_shipped_passes_rac202_on_every_fixture() -> None:
    all_checks()
    subject = Subject("tpu", PluginManager())
    refs = list(subject.fixture_paths())
    assert f"tpu/{V6E}" in refs
    for ref in refs:
        CHECKS["RAC202"].function(subject, ref)
    # the invariant binds on v6e-256 and v5e-8 (topology and type agree), not on v5p/v3/tpu7x (they count cores)
    bound = [ref for ref in refs if counted_twice(subject.fixture(ref).host.model_dump(mode="json"))]
    assert sorted(bound) == ["tpu/v5e-8", f"tpu/{V6E}"]
