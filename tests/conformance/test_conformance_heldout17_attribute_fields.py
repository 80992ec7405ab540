"""Held-out grading, round 17 (issue 46, lane J13): an attribute named as the machine names a field holds what that
field states (``invariant an-attribute-holds-its-field``, RAC216).

The AMD wrapper ``a1`` took a partitioned GPU's compute partition mode from amdsmi's ``memory_partition`` first:
attribute ``compute_partition='NPS4'`` and profiles ``nps4.1xcd.24gb`` where amdsmi states ``compute_partition``
``CPX``. Only the fixtures' expected resources and labels named it, and its edited variant ``a1e`` reached
``supported``. RAC216 now holds every text attribute of a device or partition named as a field of the machine's records
about it to a value those records state for that field. Both corpus shapes and a1's edit on the AMD plugin are named;
the corpus controls reading each mode from its own field pass, and so does the AMD plugin as shipped.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from mutant_grading import evidence, failure, mutant, wrapped

import rayaccel
import rayaccel_amd.discovery
import rayaccel_amd.plugin
from rayaccel_amd.readings import GpuRecord
from rayaccel_conformance.checks.attribute_fields import attribute_field_findings, stated_fields
from rayaccel_conformance.registry import CHECKS, CheckFailed
from rayaccel_testplugins.corpus import Healthy
from rayaccel_testplugins.corpus_attribute_fields import (
    FILES_MACHINE,
    JSON_MACHINE,
    ComputeModeFromMemoryFile,
    ModesByPosition,
)

INVARIANT = "invariant an-attribute-holds-its-field"
AMD = str(Path(rayaccel_amd.plugin.__file__).parent)
AMDSMI_FIXTURES = ["mi300x-cpx-nps4", "mi300x-cpx-nps4-shared-uuid", "mi350x-dpx-nps2-pod", "mi350x-qpx-nps2-pod"]


class ComputeModeFromItsFile(ComputeModeFromMemoryFile):
    """The driver's files read right: each mode from its own file."""

    compute_file = "compute_mode"


class ModesByKey(ModesByPosition):
    """The tool's JSON read right: each mode by its key."""

    by_position = False


@pytest.mark.parametrize(("shape", "machine", "fragment"), [
    (ComputeModeFromMemoryFile, FILES_MACHINE, "has attribute compute_mode='NPS4', where the machine's records about "
     "it state compute_mode as 'QPX' (file /sys/class/acme/acme0/compute_mode); 'NPS4' is what they state as "
     "memory_mode (file /sys/class/acme/acme0/memory_mode)"),
    (ModesByPosition, JSON_MACHINE, "has attribute memory_mode='QPX', where the machine's records about it state "
     "memory_mode as 'NPS4' (`acme-smi static --json` output.0.modes.memory_mode)")],
    ids=["driver-files", "tool-json-by-position"])
def test_an_attribute_holding_another_fields_value_is_named(shape: type[Healthy], machine: str, fragment: str) -> None:
    plugin = mutant(shape)
    said = failure(plugin, "RAC216", machine)
    assert f"{INVARIANT}, {plugin.name}/{machine}: device ACME-0000-5e1f-4c2a-9d3b-000000000000 " in said, said
    assert fragment in said, said


@pytest.mark.parametrize(("cls", "machine"), [(ComputeModeFromItsFile, FILES_MACHINE), (ModesByKey, JSON_MACHINE)],
                         ids=["driver-files", "tool-json"])
def test_attributes_read_from_their_own_fields_pass_on_the_same_machine(cls: type[Healthy], machine: str) -> None:
    name = "c-" + cls.__name__.lower()
    assert "one size" in evidence(cls(name), "RAC216", machine)


def test_a1s_edit_on_the_amd_plugin_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    own = rayaccel_amd.discovery._partitioned

    def memory_mode_first(members: list[GpuRecord], source: str) -> rayaccel.Device:
        """a1's edit: the mode taken from the memory partition first, then the compute partition."""
        return own([dataclasses.replace(g, compute_partition=g.memory_partition or g.compute_partition)
                    for g in members], source)

    monkeypatch.setattr(rayaccel_amd.discovery, "_partitioned", memory_mode_first)
    subject = wrapped(rayaccel_amd.plugin, "amd", AMD)
    for fixture in AMDSMI_FIXTURES:
        with pytest.raises(CheckFailed) as failed:
            CHECKS["RAC216"].function(subject, f"amd/{fixture}")
        said = str(failed.value)
        assert f"{INVARIANT}, amd/{fixture}: device " in said and "has attribute compute_partition='NPS" in said, said
        assert "is what they state as memory_partition (library amdsmi.gpus.0.memory_partition)" in said, said


@pytest.mark.parametrize("fixture", AMDSMI_FIXTURES)
def test_the_amd_plugin_as_shipped_publishes_the_modes_amdsmi_states(fixture: str) -> None:
    subject = wrapped(rayaccel_amd.plugin, "amd", AMD)
    built = subject.inventory(f"amd/{fixture}").family("amd")
    assert built is not None
    state = subject.fixture(f"amd/{fixture}").host.model_dump(mode="json")
    assert attribute_field_findings(list(built.devices), state, fixture) == []
    partitioned = next(d for d in built.devices if d.partitions)
    ids = [partitioned.id, *(str(p.attributes["uuid"]) for p in partitioned.partitions)]
    assert str(partitioned.attributes["compute_partition"]).lower() in stated_fields(state, ids)["compute_partition"]


def test_a_record_answering_na_states_nothing() -> None:
    state = {"libraries": {"lib": {"gpus": {"0": {"uuid": "GPU-aaaaaa", "mode": "N/A"}}}}}
    device = rayaccel.Device(index=0, id="GPU-aaaaaa", attributes={"mode": "CPX"})
    assert stated_fields(state, ["GPU-aaaaaa"]) == {"uuid": {"gpu-aaaaaa": ("GPU-aaaaaa", "library lib.gpus.0.uuid")}}
    assert attribute_field_findings([device], state, "f") == []
    state["libraries"]["lib"]["gpus"]["0"]["mode"] = "SPX"
    assert INVARIANT in attribute_field_findings([device], state, "f")[0]
