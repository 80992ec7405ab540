"""Corpus mutants that count one ECC error in both classes (issue 46, held-out round 14's ``c3``: a CSV bake publishing
``ecc_errors_corrected`` as corrected plus uncorrected, "every error the ECC logic saw"). Every fixture's counters are
0, so no build tells a sum from its part; RAC223's ``an-error-is-counted-once`` builds the fixture's fault raising one
counter and names a plugin whose ECC counters rise, together, by more than the machine's numbers rose.

Two shapes, each on the ECC tool of tests/rayaccel_testplugins/corpus_fault_counters.py (acme-smi listing each card's
counters, all 0; a fault ``corrected-2`` raising card 2's corrected count to 12): uncorrected published as every error
counted (a JSON record's two counts summed), and the card's error total published in both classes (a CSV row's two
cells summed, each metric given the sum).

Imported by tests/conformance/test_conformance_corpus.py (``corpus.MUTANT_MODULES``); each is bound here under its
name (``c-ecc-uncorrected-counts-all`` as ``c_ecc_uncorrected_counts_all``) so a Ray node loads it
by ``RAYACCEL_PLUGINS``.
"""

from __future__ import annotations

from rayaccel import Device, Host, MetricSample
from rayaccel_testplugins.corpus import Healthy, add_import_defect
from rayaccel_testplugins.corpus_counter_polls import _csv_counts, _json_counts
from rayaccel_testplugins.corpus_fault_counters import (
    ECC_CSV,
    ECC_JSON,
    _add_ecc_tool,
    _csv_output,
    _json_output,
    _with_ecc,
)


class EccUncorrectedCountsAll(Healthy):
    DEFECT = ("acme-smi's JSON ECC record published with ecc_errors_uncorrected = corrected + uncorrected (every error "
              "the card logged): a corrected error counted in both classes")
    KILLED_BY = ("RAC223", "invariant an-error-is-counted-once")

    def __init__(self, name: str) -> None:
        super().__init__(name)
        _add_ecc_tool(name, ECC_JSON, _json_output)

    def rayaccel_metrics(self, host: Host, devices: list[Device]) -> list[MetricSample]:
        # the defect: the uncorrected count takes the corrected ones too
        counts = {i: (corrected, corrected + uncorrected) for i, (corrected, uncorrected) in _json_counts(host).items()}
        return _with_ecc(self, host, devices, counts)


class EccTotalInBothClasses(Healthy):
    DEFECT = ("acme-smi's CSV ECC row summed into the card's error total and that total published as both "
              "ecc_errors_corrected and ecc_errors_uncorrected: every error counted in each class")
    KILLED_BY = ("RAC223", "invariant an-error-is-counted-once")

    def __init__(self, name: str) -> None:
        super().__init__(name)
        _add_ecc_tool(name, ECC_CSV, _csv_output)

    def rayaccel_metrics(self, host: Host, devices: list[Device]) -> list[MetricSample]:
        totals = {i: corrected + uncorrected for i, (corrected, uncorrected) in _csv_counts(host).items()}
        return _with_ecc(self, host, devices, {i: (total, total) for i, total in totals.items()})  # the defect


MUTANTS = (EccUncorrectedCountsAll, EccTotalInBothClasses)
for _cls in MUTANTS:
    _plugin = add_import_defect(_cls)
    globals()[_plugin.name.replace("-", "_")] = _plugin
