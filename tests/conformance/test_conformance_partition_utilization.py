"""AMD's partition fixtures are recorded busy (each CPX/DPX partition at its own GFX activity): the reference plugin's
utilization, its partitions' mean, is what the fixture states (RAC206) and within 0-100 (RAC218); one summed over
the partitions fails both, RAC218 naming the sum."""

from __future__ import annotations

import pytest

from rayaccel.plugins.manager import PluginManager
from rayaccel_amd import metrics
from rayaccel_conformance.checks import all_checks
from rayaccel_conformance.harness.subject import Subject

CHECKS = {c.id: c for c in all_checks() if c.id in ("RAC206", "RAC218")}
REF = "amd/mi300x-dpx-amd-smi-26"


@pytest.fixture(scope="module")
def manager() -> PluginManager:
    return PluginManager(autoload=True)


def test_a_busy_partitioned_gpus_utilization_is_its_partitions_mean(manager: PluginManager) -> None:
    for check in CHECKS.values():
        for ref in (REF, "amd/mi300x-cpx-nps4"):
            result = Subject("amd", manager).run(check, ref)
            assert result.outcome == "passed", (check.id, ref, result.evidence)


def test_a_utilization_summed_over_partitions_is_named(manager: PluginManager, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(metrics._COMBINE, "utilization", sum)
    assert Subject("amd", manager).run(CHECKS["RAC206"], REF).outcome == "failed"
    result = Subject("amd", manager).run(CHECKS["RAC218"], REF)
    assert result.outcome == "failed"
    assert any("invariant metric-in-unit-range" in line and "is 149 percent, outside [0, 100]: summed over its 2 "
               "partitions? a device's share of time busy is their mean" in line for line in result.evidence), \
        result.evidence
