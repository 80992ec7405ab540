"""Mutation round 10 (issue 46, lane J18): an on/off attribute holds the switch the vendor states under its name
(RAC216's ``an-attribute-holds-its-field``, now over switches too).

The round's ``nvidia.discovery:231`` survivor inverted the NVIDIA plugin's ``mig_mode`` attribute (published to DRA):
NVML states the mode as ``NVML_DEVICE_MIG_ENABLE`` 1 or ``_DISABLE`` 0 (``nvmlDeviceGetMigMode``: current and
pending), and RAC216 compared text attributes with text fields only, so the number was never read against the word.
A text attribute saying on or off (enabled, disabled, ...) now must agree with a field of the same name that the
machine's records about the device state as 0 or 1 (or a boolean, or a list of them: any value stated). Both corpus
shapes and the round's edit on the NVIDIA plugin are named; the controls and the NVIDIA plugin as shipped pass.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from mutant_grading import evidence, failure, mutant, wrapped

import rayaccel_nvidia.discovery
import rayaccel_nvidia.plugin
from rayaccel import Device
from rayaccel_conformance.checks.attribute_fields import attribute_field_findings, stated_switches
from rayaccel_conformance.registry import CHECKS, CheckFailed
from rayaccel_testplugins.corpus import Healthy
from rayaccel_testplugins.corpus_switch_attributes import (
    JSON_MACHINE,
    LIBRARY_MACHINE,
    EccModeFromNeighbour,
    PersistenceZeroAsOn,
)

INVARIANT = "invariant an-attribute-holds-its-field"
NVIDIA = str(Path(rayaccel_nvidia.plugin.__file__).parent)


class PersistenceOneAsOn(PersistenceZeroAsOn):
    """The library's enum read right: 1 is on."""

    def on(self, value: int) -> bool:
        return value == 1


class EccModeFromItsField(EccModeFromNeighbour):
    """acme-smi's JSON read right: ecc_mode from its own field."""

    ecc_field = "ecc_mode"


@pytest.mark.parametrize(("shape", "machine", "fragment"), [
    (PersistenceZeroAsOn, LIBRARY_MACHINE, "device ACME-0000-5e1f-4c2a-9d3b-000000000000 has attribute "
     "persistence_mode='disabled' (off), where the machine's records about it state persistence_mode on (library "
     "acmeconf.cards.0.persistence_mode)"),
    (EccModeFromNeighbour, JSON_MACHINE, "device ACME-0002-5e1f-4c2a-9d3b-000000000002 has attribute "
     "ecc_mode='disabled' (off), where the machine's records about it state ecc_mode on (`acme-smi config --json` "
     "output.2.ecc_mode)")], ids=["library-enum", "tool-json-booleans"])
def test_a_switch_attribute_against_the_vendors_value_is_named(shape: type[Healthy], machine: str,
                                                               fragment: str) -> None:
    plugin = mutant(shape)
    said = failure(plugin, "RAC216", machine)
    assert f"{INVARIANT}, {plugin.name}/{machine}: {fragment}" in said, said


@pytest.mark.parametrize(("cls", "machine"), [(PersistenceOneAsOn, LIBRARY_MACHINE),
                                              (EccModeFromItsField, JSON_MACHINE)], ids=["library-enum", "tool-json"])
def test_switches_read_as_the_vendor_defines_them_pass(cls: type[Healthy], machine: str) -> None:
    assert "one size" in evidence(cls("c-" + cls.__name__.lower()), "RAC216", machine)


def test_the_rounds_nvidia_edit_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    own = rayaccel_nvidia.discovery.discover_one

    def mig_mode_inverted(*args: Any, **kwargs: Any) -> Device:
        """nvidia.discovery:231's edit: the mig_mode attribute the other way round."""
        device = own(*args, **kwargs)
        if "mig_mode" not in device.attributes:
            return device
        flipped = {"enabled": "disabled", "disabled": "enabled"}[str(device.attributes["mig_mode"])]
        return Device.model_validate({**device.model_dump(), "attributes": {**device.attributes, "mig_mode": flipped}})

    monkeypatch.setattr(rayaccel_nvidia.discovery, "discover_one", mig_mode_inverted)
    subject = wrapped(rayaccel_nvidia.plugin, "nvidia", NVIDIA)
    for fixture, said_now, stated in (("a100-mig", "disabled' (off)", "on"), ("dgx-h100", "enabled' (on)", "off")):
        with pytest.raises(CheckFailed) as failed:
            CHECKS["RAC216"].function(subject, f"nvidia/{fixture}")
        said = str(failed.value)
        assert f"{INVARIANT}, nvidia/{fixture}: device GPU-" in said, said
        assert f"has attribute mig_mode='{said_now}, where the machine's records about it state mig_mode {stated} " \
               "(library nvml.devices.0.mig_mode)" in said, said


@pytest.mark.parametrize("fixture", ["a100-mig", "dgx-h100", "h100-mig", "l4-single"])
def test_the_nvidia_plugin_as_shipped_publishes_nvmls_mode(fixture: str) -> None:
    assert "one size" in str(CHECKS["RAC216"].function(wrapped(rayaccel_nvidia.plugin, "nvidia", NVIDIA),
                                                       f"nvidia/{fixture}"))


def test_a_switch_is_a_0_or_1_a_boolean_or_a_list_of_them() -> None:
    state = {"libraries": {"nvml": {"devices": {"0": {"uuid": "GPU-aaaaaa", "mig_mode": [1, 0], "persistence": True,
                                                      "numa_node": 3, "ecc": {"enabled": 1}}}}}}
    switches = stated_switches(state, ["GPU-aaaaaa"])
    assert switches["mig_mode"] == {True: "library nvml.devices.0.mig_mode", False: "library nvml.devices.0.mig_mode"}
    assert switches["persistence"] == {True: "library nvml.devices.0.persistence"}
    assert "numa_node" not in switches and "enabled" not in switches  # a 3 is no switch; a nested record's key is not
    device = Device(index=0, id="GPU-aaaaaa", attributes={"mig_mode": "disabled", "persistence": "off"})
    said = attribute_field_findings([device], state, "f")
    assert len(said) == 1 and "persistence='off' (off)" in said[0], said  # a pending change states both modes
