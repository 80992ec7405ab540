"""Corpus mutants that lose a metric on a second node of the same cards, whose fixture then says the metric is not
offered there (issue 46, held-out round 13's ``p2``: a TPU wrapper filing slice-indexed samples under the host's chip
indexes, so worker 1 of a v5p-16 lost its memory samples, and ``p2e``, worker 1's ``expected.metrics`` edited to
what the code gave, passed). Each mutant ships acme-4 and a second machine of the same R1 cards, whose
``expected.metrics`` leaves the lost metric out, as its author believed; the second machine's files still state it.
RAC255's ``an-unoffered-metric-is-not-stated`` kills both shapes: power read only on nodes named as the lab's were,
and temperature read only with the driver version the plugin was written on.

Imported by tests/conformance/test_conformance_corpus.py (``corpus.MUTANT_MODULES``); each is bound here under its name
so a Ray node loads it (``c-power-on-lab-nodes-only`` as ``c_power_on_lab_nodes_only``).
"""

from __future__ import annotations

import copy

from rayaccel import Device, Host, MetricSample
from rayaccel_testplugins.corpus import LABEL_PREFIX, Healthy, add_import_defect, read_machine, write_machine

#: Every metric acme-4's cards report, as the second machine's ``expected.metrics`` lists those it offers.
ACME_METRICS = ("memory_total", "memory_used", "utilization", "temperature", "power")


def second_machine(plugin: str, machine: str, lost: str, hostname: str | None = None,
                   driver: str | None = None) -> None:
    """``plugin``'s acme-4 as another node of the same cards (named ``hostname``, or with ``driver``), whose
    ``expected.metrics`` leaves ``lost`` out and whose ``expected.metric_values`` lack it; written atomically."""
    data = copy.deepcopy(read_machine(plugin))
    data["name"], data["description"] = machine, f"{machine}: acme-4's cards on another node, as {plugin} sees it"
    if hostname:
        data["host"]["hostname"] = hostname
    if driver:
        data["host"]["commands"]["acme-smi --version"]["stdout"] = f"acme-smi {driver}\n"
        if "/sys/module/acme/version" in data["host"]["files"]:  # the module states the version it loaded too
            data["host"]["files"]["/sys/module/acme/version"] = f"{driver}\n"
        labels = data["expected"]["labels"]
        labels["rayaccel.io/driver-version"] = labels[f"{LABEL_PREFIX}/driver"] = driver
    data["expected"]["metrics"] = [m for m in ACME_METRICS if m != lost]
    for values in data["expected"].get("metric_values", {}).values():
        values.pop(lost, None)
    data.pop("perturbations", None)
    write_machine(plugin, machine, data)


class PowerOnLabNodesOnly(Healthy):
    DEFECT = ("power is read only on nodes whose host name starts with 'acme-node', as the lab's nodes were named "
              "(the BMC path the author tested): a node named otherwise reports none though its cards write power_mw")
    KILLED_BY = ("RAC255", "invariant an-unoffered-metric-is-not-stated")

    def __init__(self, name: str) -> None:
        super().__init__(name)
        second_machine(name, "acme-4-rack-2", "power", hostname="rack2-r1-07")

    def samples(self, host: Host, device: Device) -> list[MetricSample]:
        found = super().samples(host, device)
        return found if host.name.startswith("acme-node") else [s for s in found if s.name != "power"]


class TemperatureForOneDriver(Healthy):
    DEFECT = ("temperature is read only where the driver is 3.1.4, the version the plugin was written on: a node "
              "with driver 3.2.0 reports none though its cards still write temp_mc")
    KILLED_BY = ("RAC255", "invariant an-unoffered-metric-is-not-stated")

    def __init__(self, name: str) -> None:
        super().__init__(name)
        second_machine(name, "acme-4-driver-3-2", "temperature", driver="3.2.0")

    def samples(self, host: Host, device: Device) -> list[MetricSample]:
        found = super().samples(host, device)
        return found if device.driver_version == "3.1.4" else [s for s in found if s.name != "temperature"]


for _cls in (PowerOnLabNodesOnly, TemperatureForOneDriver):
    _plugin = add_import_defect(_cls)
    globals()[_plugin.name.replace("-", "_")] = _plugin
