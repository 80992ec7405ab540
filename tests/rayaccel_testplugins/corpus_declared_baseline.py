"""A corpus plugin that declares its own performance baseline (``rayaccel_performance_baseline``), one figure of
which no run reaches: a bandwidth of 1 PB/s for the reference transport. RAC310, given no previous report,
holds the run to the declared figures and fails naming that one figure; the others (generous) pass.

``RAYACCEL_PLUGINS=c-declares-baseline=rayaccel_testplugins.corpus_declared_baseline:plugin`` loads it;
tests/conformance/test_conformance_recovery.py grades it.
"""

from __future__ import annotations

from rayaccel import PerformanceBaseline
from rayaccel_testplugins import corpus

#: The figure the declaration holds out of reach, and the declared value.
UNREACHED = ("transport RAYACCEL_SHM bandwidth", 1e9)


class DeclaresBaseline(corpus.Healthy):
    DEFECT = "its declared baseline holds the reference transport to 1 PB/s, which no run reaches"
    KILLED_BY = ("RAC310", "transport RAYACCEL_SHM bandwidth regressed")

    def rayaccel_performance_baseline(self) -> list[PerformanceBaseline]:
        name, value = UNREACHED
        return [PerformanceBaseline(hardware="simulated", tolerance_percent=10,
                                    figures={"inventory build": 60_000.0, "node start": 600_000.0, name: value}),
                PerformanceBaseline(hardware="real", figures={name: 1.0})]


plugin = DeclaresBaseline("c-declares-baseline")
