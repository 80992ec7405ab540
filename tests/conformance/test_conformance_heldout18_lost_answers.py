"""Held-out grading, round 18 (issue 46, lane J20): a fault that only takes answers away makes no fact another value
(``invariant a-lost-answer-is-no-other-answer``, RAC203 under a declared fault, RAC204 under every command failing or
hanging and every library raising).

The AMD wrapper ``a1`` named a partitioned GPU whose compute partition amd-smi does not state CPX whatever its
partition count: when ``amd-smi partition --current`` fails (the AMD fixture ``mi300x-dpx-amd-smi-26``'s fault), a DPX
GPU's two partitions became ``cpx.4xcd.96gb``. Only the fault's expected resources named it, and ``a1e``, those set to
the code's answer, reached ``supported``. Both corpus shapes and a1's edit on the AMD plugin are named now; the corpus
controls leaving what they cannot read out pass, and so does the AMD plugin as shipped (it names the mode from the
partition count, the same answer as amd-smi's).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from mutant_grading import evidence, failure, mutant, wrapped

import rayaccel_amd.discovery
import rayaccel_amd.plugin
from rayaccel_conformance.checks.lost_answers import lost_answer_findings, takes_answers_away
from rayaccel_conformance.registry import CHECKS, CheckFailed
from rayaccel_testplugins.corpus import Healthy
from rayaccel_testplugins.corpus_lost_answers import (
    CSV_MACHINE,
    JSON_MACHINE,
    FailedModesAsDefaults,
    UnansweredEccModeAsEnabled,
)

INVARIANT = "invariant a-lost-answer-is-no-other-answer"
AMD = str(Path(rayaccel_amd.plugin.__file__).parent)
DEVICE_1 = "device ACME-0001-5e1f-4c2a-9d3b-000000000001"


class ModesLeftOut(FailedModesAsDefaults):
    """The tool's failure read right: no modes stated while it fails."""

    assume_defaults = False


class EccModeLeftOut(UnansweredEccModeAsEnabled):
    """The table's absence read right: no ECC mode stated while it is not printed."""

    assume_default = False


def test_modes_assumed_when_the_query_fails_are_named_under_the_declared_fault() -> None:
    plugin = mutant(FailedModesAsDefaults)
    said = failure(plugin, "RAC203", JSON_MACHINE)
    assert (f"{INVARIANT}, {plugin.name}/{JSON_MACHINE} fault static-query-fails (it only takes answers away): the "
            "plugin states device ACME-0000-5e1f-4c2a-9d3b-000000000000 compute_mode 'SPX' (the machine's full "
            "answers give 'QPX')") in said, said
    assert f"{DEVICE_1} memory_mode 'NPS1' (the machine's full answers give 'NPS4')" in said, said
    assert f"{INVARIANT}, {plugin.name}/{JSON_MACHINE} with every command fails" in failure(plugin, "RAC204",
                                                                                             JSON_MACHINE)


def test_a_mode_assumed_when_the_tool_does_not_answer_is_named_with_no_fault_declared() -> None:
    plugin = mutant(UnansweredEccModeAsEnabled)
    said = failure(plugin, "RAC204", CSV_MACHINE)
    assert (f"{INVARIANT}, {plugin.name}/{CSV_MACHINE} with every command hangs (it only takes answers away): the "
            f"plugin states {DEVICE_1} ecc_mode 'Enabled' (the machine's full answers give 'Disabled')") in said, said
    assert "ACME-0000-5e1f-4c2a-9d3b-000000000000 ecc_mode" not in said, said  # card 0 has ECC on: no other value


@pytest.mark.parametrize(("cls", "machine"), [(ModesLeftOut, JSON_MACHINE), (EccModeLeftOut, CSV_MACHINE)],
                         ids=["tool-json", "tool-csv"])
def test_what_cannot_be_read_left_out_passes(cls: type[Healthy], machine: str) -> None:
    plugin = cls("c-" + cls.__name__.lower())
    assert "every command fails" in str(evidence(plugin, "RAC204", machine))
    assert "faults as declared" in str(evidence(plugin, "RAC203", machine))


class _AlwaysCpx(dict[int, str]):
    """a1's edit: a mode amd-smi does not state named CPX whatever the GPU's partition count."""

    def get(self, key: int, default: object = None) -> str:
        return "cpx"


def test_a1s_edit_on_the_amd_plugin_is_named_its_expectations_aside(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(rayaccel_amd.discovery, "MODES", _AlwaysCpx())
    subject = wrapped(rayaccel_amd.plugin, "amd", AMD)
    with pytest.raises(CheckFailed) as failed:
        CHECKS["RAC203"].function(subject, "amd/mi300x-dpx-amd-smi-26")
    said = str(failed.value)
    assert (f"{INVARIANT}, amd/mi300x-dpx-amd-smi-26 fault amd-smi-partition-fails (it only takes answers away): the "
            "plugin states resource 'GPU_COMPUTE_PARTITION_cpx.4xcd.96gb', which the machine's full answers do not "
            "give") in said, said
    assert "profile 'cpx.4xcd.96gb' (the machine's full answers give 'dpx.4xcd.96gb')" in said, said
    # the invariant alone, the fault's expected answers set to what the edit gives (as a1e did)
    healthy = subject.inventory("amd/mi300x-dpx-amd-smi-26").family("amd")
    fault = subject.fixture("amd/mi300x-dpx-amd-smi-26").fault("amd-smi-partition-fails")
    faulty = subject.fault_runs[("amd/mi300x-dpx-amd-smi-26", fault.name)][0].family("amd")
    assert lost_answer_findings("f", fault.patch, healthy, faulty)


def test_the_amd_plugin_as_shipped_names_the_mode_its_partitions_give() -> None:
    subject = wrapped(rayaccel_amd.plugin, "amd", AMD)
    assert "amd-smi-partition-fails" in str(CHECKS["RAC203"].function(subject, "amd/mi300x-dpx-amd-smi-26"))


def test_only_a_patch_that_takes_answers_away_is_held() -> None:
    failing = {"stdout": "", "stderr": "x: failed\n", "returncode": 1}
    assert takes_answers_away({"commands": {"x": failing}, "files": {"/sys/a": None}})
    assert takes_answers_away({"commands": {"x": {"hang": True}}, "libraries": {"lib": {"rayaccel_fault": {}}}})
    assert takes_answers_away({"http": {"http://m/x": {"status": 503, "body": "error"}}})
    assert not takes_answers_away({"commands": {"x": {"returncode": 1}}})  # stdout kept: the answer is still there
    assert not takes_answers_away({"commands": {"x": failing}, "files": {"/sys/a": "1\n"}})
    assert not takes_answers_away({"libraries": {"lib": {"devices": {"0": {"mode": "SPX"}}}}})
    assert not takes_answers_away({})
