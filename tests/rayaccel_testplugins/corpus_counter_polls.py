"""Corpus mutants that publish an error counter otherwise than as the device's running total (issue 46, held-out round
13's ``s3``: a sysfs bake publishing its ECC counters as the increase since its previous poll, so a driver counter 0,
5, 5 was published 0, 5, 0). The SDK exports both ECC metrics as Prometheus counters, which never go down but where
the counter resets; every fixture's counters are static, so one build never tells a total from an increment.
RAC246's ``a-counter-never-goes-down`` polls one host three times, the fixture's machine, a fault raising a counter
and that fault again, and names either.

Two shapes, each on the ECC tool of tests/rayaccel_testplugins/corpus_fault_counters.py (acme-smi listing each card's
counters, all 0; a fault ``corrected-2`` raising card 2's corrected count to 12): the increase since the previous
poll (JSON), and errors per second between the two polls (CSV): both what an alert fires on, published under the
counter's name. (A third, the polls' readings summed, is killed before by RAC261, whose second build of one machine
sees the sum grow.)

Imported by tests/conformance/test_conformance_corpus.py (``corpus.MUTANT_MODULES``); each is bound here under its
name (``c-ecc-published-per-poll`` as ``c_ecc_published_per_poll``) so a Ray node loads it by ``RAYACCEL_PLUGINS``.
"""

from __future__ import annotations

import json
import time

from rayaccel import Device, Host, MetricSample, malformed
from rayaccel_testplugins.corpus import Healthy, add_import_defect, tool_output
from rayaccel_testplugins.corpus_fault_counters import (
    ECC_CSV,
    ECC_JSON,
    _add_ecc_tool,
    _count,
    _csv_output,
    _json_output,
    _with_ecc,
)


def _json_counts(host: Host) -> dict[int, tuple[int, int]]:
    """Each card's (corrected, uncorrected) count from acme-smi's JSON, read right."""
    stdout = tool_output(host, ECC_JSON)
    try:
        cards = json.loads(stdout)["cards"] if stdout is not None else []
    except (ValueError, KeyError, TypeError):
        malformed(" ".join(ECC_JSON), "its output", "JSON with an ECC record per card")
        cards = []
    counts = {}
    for card in cards:
        index, ecc = card.get("index"), card.get("ecc") or {}
        corrected, uncorrected = _count(ecc.get("corrected"), "ecc.corrected", index), _count(
            ecc.get("uncorrected"), "ecc.uncorrected", index)
        if isinstance(index, int) and corrected is not None and uncorrected is not None:
            counts[index] = (corrected, uncorrected)
    return counts


def _csv_counts(host: Host) -> dict[int, tuple[int, int]]:
    """Each card's (corrected, uncorrected) count from acme-smi's CSV rows, read right."""
    counts = {}
    for line in (tool_output(host, ECC_CSV) or "").splitlines():
        cells = [cell.strip() for cell in line.split(",")]
        if len(cells) != 4 or not cells[0].isdigit():
            if line.strip():
                malformed(" ".join(ECC_CSV), line, "index, uuid, ecc.corrected, ecc.uncorrected")
            continue
        index = int(cells[0])
        corrected, uncorrected = _count(cells[2], "ecc.corrected", index), _count(cells[3], "ecc.uncorrected", index)
        if corrected is not None and uncorrected is not None:
            counts[index] = (corrected, uncorrected)
    return counts


class EccPublishedPerPoll(Healthy):
    DEFECT = ("acme-smi's ECC counters published as the increase since the previous poll (an alert then fires on new "
              "errors only): a counter that falls back to 0 on the poll after each error")
    KILLED_BY = ("RAC246", "invariant a-counter-never-goes-down")

    def __init__(self, name: str) -> None:
        super().__init__(name)
        _add_ecc_tool(name, ECC_JSON, _json_output)
        self.previous: dict[int, tuple[int, int]] = {}

    def rayaccel_metrics(self, host: Host, devices: list[Device]) -> list[MetricSample]:
        counts = _json_counts(host)
        published = {}
        for index, (corrected, uncorrected) in counts.items():
            was = self.previous.get(index, (corrected, uncorrected))  # the defect: the increase, not the total
            published[index] = (max(0, corrected - was[0]), max(0, uncorrected - was[1]))
        self.previous.update(counts)
        return _with_ecc(self, host, devices, published)


class EccPublishedAsRate(Healthy):
    DEFECT = ("acme-smi's ECC counts published as errors per second since the previous poll (the rate an alert "
              "fires on): a counter that falls back to 0 on the poll after each error")
    KILLED_BY = ("RAC246", "invariant a-counter-never-goes-down")

    def __init__(self, name: str) -> None:
        super().__init__(name)
        _add_ecc_tool(name, ECC_CSV, _csv_output)
        self.previous: dict[int, tuple[float, int, int]] = {}

    def rayaccel_metrics(self, host: Host, devices: list[Device]) -> list[MetricSample]:
        now = time.monotonic()
        published = {}
        for index, (corrected, uncorrected) in _csv_counts(host).items():
            at, was_corrected, was_uncorrected = self.previous.get(index, (now, corrected, uncorrected))
            seconds = max(now - at, 1e-3)  # the defect: a rate between two polls, not the total
            published[index] = (round((corrected - was_corrected) / seconds), round((uncorrected - was_uncorrected)
                                                                                     / seconds))
            self.previous[index] = (now, corrected, uncorrected)
        return _with_ecc(self, host, devices, published)


MUTANTS = (EccPublishedPerPoll, EccPublishedAsRate)
for _cls in MUTANTS:
    _plugin = add_import_defect(_cls)
    globals()[_plugin.name.replace("-", "_")] = _plugin
