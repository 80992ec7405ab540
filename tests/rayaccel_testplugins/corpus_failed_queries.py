"""Corpus mutants that publish a reading kept from an earlier poll when the tool's query fails (issue 46, held-out
round 15's ``j2``: a command-json bake publishing its last stats again, as current, whenever its stats query
failed, "no gap in dashboards"). Every fixture's tool answers, so one build never takes that path; RAC246's
``a-failed-query-gives-no-reading`` polls one host after two histories (the machine, and the machine with the
query's readings scaled), then with the query failing, and names a gauge that follows the earlier poll.

Two shapes, each on a machine of tests/rayaccel_testplugins/corpus_siblings.py (acme-smi installed beside acme-4):
each card's last utilization figure from the tool's JSON busy records, kept per card (``acme-4-busy``); the tool's
last CSV power rows kept whole and read again (``acme-4-power``). A tool that is not installed or does not know the
query (acme-4: an older acme-smi, a usage error) and a tool that fails are told apart by the tool's exit status: in
the first case the driver's files answer, as the healthy plugin reads them, in the second the defect answers.

Imported by tests/conformance/test_conformance_corpus.py (``corpus.MUTANT_MODULES``); each is bound here under its
name so a Ray node or a fresh process loads it (``c-busy-kept-on-failure`` as
``c_busy_kept_on_failure``).
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from rayaccel import Device, Host, HostError, MetricSample
from rayaccel_testplugins.corpus import Healthy, add_import_defect
from rayaccel_testplugins.corpus_siblings import (
    BUSY,
    POWER,
    _busy_machine,
    _number,
    _power_machine,
    _replaced,
    _write_machine,
)

#: The exit status of a tool that does not know the query (an older acme-smi, as on acme-4): a usage error.
USAGE_ERROR = 2


def _failed(host: Host, argv: Sequence[str]) -> bool:
    """Whether the tool is installed, knows the query and failed to answer it (a non-zero exit other than a usage
    error): not whether it is missing, too old for the query or hung."""
    try:
        return host.run(list(argv), timeout=2.0).returncode not in (0, USAGE_ERROR)
    except HostError:
        return False


def _busy_figures(host: Host) -> dict[int, float] | None:
    """Card index -> the core's busy % in ``acme-smi --json --query-busy``; None where the tool does not answer."""
    try:
        result = host.run(list(BUSY), timeout=2.0)
        cards = json.loads(result.stdout)["cards"] if result.returncode == 0 else None
    except (HostError, ValueError, KeyError, TypeError):
        return None
    if cards is None:
        return None
    figures = {}
    for card in cards:
        record = card.get("utilization") if isinstance(card, dict) else None
        value = _number(record.get("core"), "utilization.core", card.get("index")) if isinstance(record, dict) else None
        if isinstance(card.get("index"), int) and value is not None:
            figures[card["index"]] = value
    return figures


def _power_rows(host: Host) -> dict[int, list[str]] | None:
    """Card index -> its row's cells in ``acme-smi --query-power`` (index, uuid, draw, limit); None where the tool does
    not answer."""
    try:
        result = host.run(list(POWER), timeout=2.0)
    except HostError:
        return None
    if result.returncode != 0:
        return None
    rows = {}
    for line in result.stdout.splitlines():
        cells = line.split(",")
        if len(cells) == 4 and cells[0].strip().isdigit():
            rows[int(cells[0])] = cells
    return rows


class BusyKeptOnFailure(Healthy):
    DEFECT = ("each card's last utilization figure from acme-smi's JSON busy records kept, and published again as "
              "current when the tool's query fails (no gap in dashboards): a card shown busy that nobody measured")
    KILLED_BY = ("RAC246", "invariant a-failed-query-gives-no-reading")

    def __init__(self, name: str) -> None:
        super().__init__(name)
        _write_machine(name, "acme-4-busy", _busy_machine)
        self.last: dict[int, float] = {}

    def rayaccel_metrics(self, host: Host, devices: list[Device]) -> list[MetricSample]:
        figures = _busy_figures(host)
        if figures is not None:
            self.last.update(figures)
        elif _failed(host, BUSY):
            figures = dict(self.last)  # the defect: the last figures, published as this poll's
        out = []
        for device in devices:
            samples = Healthy.samples(self, host, device)
            if figures and device.index in figures:
                samples = _replaced(samples, device, "utilization", "percent", figures[device.index])
            out += samples
        return out


class PowerRowsKeptOnFailure(Healthy):
    DEFECT = ("acme-smi's last CSV power rows kept whole and read again when the tool's query fails: every card's "
              "draw is the one of the last poll that answered, as current")
    KILLED_BY = ("RAC246", "invariant a-failed-query-gives-no-reading")

    def __init__(self, name: str) -> None:
        super().__init__(name)
        _write_machine(name, "acme-4-power", _power_machine)
        self.rows: dict[int, list[str]] | None = None

    def rayaccel_metrics(self, host: Host, devices: list[Device]) -> list[MetricSample]:
        rows = _power_rows(host)
        if rows is not None:
            self.rows = rows
        elif _failed(host, POWER):
            rows = self.rows  # the defect: the last answer read again
        out = []
        for device in devices:
            samples = Healthy.samples(self, host, device)
            if rows is not None and device.index in rows:
                samples = _replaced(samples, device, "power", "watts",
                                    _number(rows[device.index][2].strip(), "power", device.index))
            out += samples
        return out


MUTANTS = (BusyKeptOnFailure, PowerRowsKeptOnFailure)
for _cls in MUTANTS:
    _plugin = add_import_defect(_cls)
    globals()[_plugin.name.replace("-", "_")] = _plugin
