"""RAC201's ``a-label-agrees-with-its-devices`` (issue 46, lane J21, held-out round 18's ``e2``): a label whose name
names an attribute every device holds alike holds that value. Killed: the two corpus shapes and the Neuron plugin with
the round's one edit (the LNC label read from ``NEURON_LOGICAL_NC_CONFIG``, ``1`` where unset); the Neuron plugin as
shipped passes, and AMD's and Neuron's labels that restate an attribute are compared (the invariant is not vacuous)."""

from __future__ import annotations

import pytest
from mutant_grading import graded, mutant, wrapped

import rayaccel_neuron.plugin as neuron_plugin
from rayaccel import Device, FamilyInventory, Host
from rayaccel.plugins.manager import PluginManager
from rayaccel_conformance.checks import all_checks
from rayaccel_conformance.checks.label_attributes import label_attribute_findings
from rayaccel_conformance.harness.subject import Subject
from rayaccel_conformance.registry import CHECKS, CheckFailed
from rayaccel_testplugins.corpus_label_attributes import MemoryModeLabelFromSheet, ModeLabelFromVariable

NEURON_PACKAGE = neuron_plugin.__file__.rsplit("/", 1)[0]
LNC_LABEL = "aws.amazon.com/neuron.logical-nc-config"


@pytest.mark.parametrize(("cls", "machine", "said"), [
    (ModeLabelFromVariable, "acme-4-compute-mode",
     "label acme.example.com/compute-mode='exclusive', where every device's attribute compute_mode is 'shared'"),
    (MemoryModeLabelFromSheet, "acme-4-memory-mode",
     "label acme.example.com/memory-mode='flat', where every device's attribute memory_mode is 'cache'")],
    ids=["from-variable", "from-sheet"])
def test_a_label_unlike_its_devices_attribute_fails_rac201_naming_it(cls: type, machine: str, said: str) -> None:
    plugin = mutant(cls)
    subject = graded(plugin)
    with pytest.raises(CheckFailed) as failed:
        CHECKS["RAC201"].function(subject, f"{plugin.name}/{machine}")
    assert f"invariant a-label-agrees-with-its-devices, {plugin.name}/{machine}: {said}" in str(failed.value)


def test_the_neuron_plugin_labelling_lnc_from_its_variable_fails_rac201_and_as_shipped_passes() -> None:
    all_checks()
    CHECKS["RAC201"].function(Subject("neuron", PluginManager()), "neuron/trn2.48xlarge")

    def lnc_from_variable(host: Host, inventory: FamilyInventory) -> dict[str, str]:  # round 18's e2, its one edit
        labels: dict[str, str] = neuron_plugin.rayaccel_labels(host, inventory)
        return {**labels, LNC_LABEL: host.getenv("NEURON_LOGICAL_NC_CONFIG") or "1"}

    subject = wrapped(neuron_plugin, "neuron", NEURON_PACKAGE, rayaccel_labels=lnc_from_variable)
    with pytest.raises(CheckFailed) as failed:
        CHECKS["RAC201"].function(subject, "neuron/trn2.48xlarge")
    assert (f"invariant a-label-agrees-with-its-devices, neuron/trn2.48xlarge: label {LNC_LABEL}='1', where every "
            "device's attribute logical_nc_config is '2'") in str(failed.value), failed.value


@pytest.mark.parametrize(("plugin", "fixture", "label"), [
    ("amd", "amd/mi300x-cpx-nps4", "amd.com/gpu.compute-partition"), ("neuron", "neuron/trn2.48xlarge", LNC_LABEL)])
def test_a_reference_label_restating_an_attribute_is_compared(plugin: str, fixture: str, label: str) -> None:
    all_checks()
    subject = Subject(plugin, PluginManager())
    family = subject.inventory(fixture).family(subject.family().name)
    assert family is not None and label in family.labels
    assert label_attribute_findings(subject.fixture(fixture), family) == []
    wrong = family.model_copy(update={"labels": {**family.labels, label: "other"}})
    assert [f for f in label_attribute_findings(subject.fixture(fixture), wrong) if f"label {label}='other'" in f]


def test_only_an_attribute_every_device_holds_alike_binds_a_label() -> None:
    all_checks()
    subject = Subject("neuron", PluginManager())
    fx = subject.fixture("neuron/trn2.48xlarge")
    family = subject.inventory("neuron/trn2.48xlarge").family("neuron")
    assert family is not None
    first, *rest = family.devices

    def with_lnc(device: Device, value: object | None) -> Device:
        attributes = {k: v for k, v in device.attributes.items() if k != "logical_nc_config"}
        return device.model_copy(update={"attributes": attributes | ({} if value is None else
                                                                     {"logical_nc_config": value})})

    label = {**family.labels, LNC_LABEL: "1"}
    for devices in ([with_lnc(first, 1), *rest], [with_lnc(first, None), *rest]):  # devices differ; one states none
        assert label_attribute_findings(fx, family.model_copy(update={"devices": devices, "labels": label})) == []
    flags = [with_lnc(d, True) for d in family.devices]  # a boolean is written as a label writes one
    assert label_attribute_findings(fx, family.model_copy(update={"devices": flags, "labels": {LNC_LABEL: "true"}})) \
        == []
