"""Held-out grading, round 17 (issue 46, lane J12): a metric the machine states in like parts counts every part
(``invariant every-part-counts``, RAC223).

The Neuron wrappers ``e1`` and ``e2`` read a device's memory in use from NeuronCore 0's stats only, or from the
``tensors`` category only, where the driver states it per core and per category
(``neuron_core<k>/stats/memory_usage/device_mem/<category>/total``); only trn1.32xlarge's expected value caught them,
and with it edited (``e1e``, ``e2e``) both reached ``supported``. RAC223 now finds the share of like parts a summed
metric is the sum of, and moves a part it leaves out alone at the host seam: the metric must move by it. Both corpus
shapes and both edits on the Neuron plugin are named; the plugin as shipped and controls summing every part pass.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from mutant_grading import failure, graded, mutant, wrapped

import rayaccel_neuron.plugin
from rayaccel import Host
from rayaccel_conformance.checks.summed_readings import part_groups, shares
from rayaccel_conformance.registry import CHECKS, CheckFailed
from rayaccel_neuron import sysfs
from rayaccel_testplugins.corpus import Healthy
from rayaccel_testplugins.corpus_summed_parts import (
    DIES_MACHINE,
    POOLS_MACHINE,
    MemoryFromDieZero,
    MemoryFromOnePool,
)

INVARIANT = "invariant every-part-counts"
NEURON = str(Path(rayaccel_neuron.plugin.__file__).parent)
FIXTURE = "neuron/trn1.32xlarge"


class DiesSummed(MemoryFromDieZero):
    """The die machine read right: every die's part."""

    def number(self, host: Host, path: str) -> float | None:
        dies = [path.replace("/mem_used_mib", f"/die{d}/mem_used_mib") for d in range(2)]
        if path.endswith("/mem_used_mib") and host.exists(dies[0]):
            parts = [Healthy.number(self, host, die) for die in dies]
            return None if None in parts else sum(p for p in parts if p is not None)
        return Healthy.number(self, host, path)


class PoolsSummed(MemoryFromOnePool):
    """The pools machine read right: every pool of every core."""

    def counted(self, pool: str) -> bool:
        return True


@pytest.mark.parametrize(("shape", "machine", "left_out"), [
    (MemoryFromDieZero, DIES_MACHINE, "file /sys/class/acme/acme2/die1/mem_used_mib moved alone"),
    (MemoryFromOnePool, POOLS_MACHINE, "output cards.2.cores.nc0.pools.kv_cache.used_mib moved alone")])
def test_a_card_summing_a_share_of_its_parts_is_named(shape: type[Healthy], machine: str, left_out: str) -> None:
    message = failure(mutant(shape), "RAC223", machine)
    assert INVARIANT in message and left_out in message and "every part counts" in message, message


@pytest.mark.parametrize(("control", "machine"), [(DiesSummed, DIES_MACHINE), (PoolsSummed, POOLS_MACHINE)])
def test_a_card_summing_every_part_passes(control: type[Healthy], machine: str) -> None:
    plugin = control(f"c-{control.__name__.lower()}")
    subject = graded(plugin)
    assert "moved exactly with their readings" in str(CHECKS["RAC223"].function(subject, f"{plugin.name}/{machine}"))


def _core_zero_only(host: Host, index: int) -> int | None:
    """e1's edit: "the device's memory pool is shared by its cores: core 0's stats cover it"."""
    mem = f"{sysfs.device_dir(index, host)}/neuron_core0/stats/memory_usage/device_mem"
    values = [sysfs.read_count(host, f"{mem}/{category}/total") for category in sysfs.DEVICE_MEM_CATEGORIES]
    return sum(v for v in values if v is not None) if any(v is not None for v in values) else None


@pytest.mark.parametrize(("edit", "share"), [("e1", "the sum of 3 of the 6 like parts"),
                                              ("e2", "the sum of 2 of the 6 like parts")])
def test_round_17s_edits_on_the_neuron_plugin_are_named(monkeypatch: pytest.MonkeyPatch, edit: str,
                                                          share: str) -> None:
    if edit == "e1":
        monkeypatch.setattr(sysfs, "device_memory_used", _core_zero_only)
    else:
        monkeypatch.setattr(sysfs, "DEVICE_MEM_CATEGORIES", ("tensors",))  # e2's: "the rest is the runtime's own"
    subject = wrapped(rayaccel_neuron.plugin, "neuron", NEURON)
    with pytest.raises(CheckFailed) as failed:
        CHECKS["RAC223"].function(subject, FIXTURE)
    said = str(failed.value)
    assert INVARIANT in said and share in said and "/stats/memory_usage/device_mem/" in said, said


def test_the_neuron_plugin_as_shipped_passes() -> None:
    subject = wrapped(rayaccel_neuron.plugin, "neuron", NEURON)
    assert "moved exactly with their readings" in str(CHECKS["RAC223"].function(subject, FIXTURE))


def test_the_parts_of_a_neuron_device_are_its_cores_categories() -> None:
    subject = wrapped(rayaccel_neuron.plugin, "neuron", NEURON)
    fx = subject.fixture(FIXTURE)
    family = subject.inventory(FIXTURE).family("neuron")
    assert family is not None
    device = family.devices[2]
    groups = [g for g in part_groups(fx.host.model_dump(mode="json"), device)
              if g[0][0][-1] == "total" and "device_mem" in g[0][0]]
    assert len(groups) == 1 and len(groups[0]) == 6, groups
    # Its shares: each core's three categories, each category's two cores, each part alone; the largest first.
    sizes = [len(share) for share, _ in shares(groups[0])]
    assert sizes == sorted(sizes, reverse=True) and sizes.count(3) == 2 and sizes.count(2) == 3 and sizes.count(1) == 6
