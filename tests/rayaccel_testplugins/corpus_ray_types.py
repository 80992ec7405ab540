"""Mutants of a family Ray already has a manager for whose accelerator type differs from Ray's for a SKU the catalog
does not list (issue 46, held-out round 11's e2: a Neuron wrapper answering the product name, ``Trainium2``, where
Ray's Neuron manager answers ``aws-neuron-core`` for every Neuron node). Each claims ``neuron_cores`` with
``NEURON_RT_VISIBLE_CORES`` over the ACME machine, its catalog's SKUs typed ``aws-neuron-core`` as the Neuron
plugin's are, so the machine as recorded agrees with Ray; two shapes for the uncatalogued product: the type derived
from the product's name (e2's), and no type at all (the SDK's ``no_accelerator_type``, "never guess"). RAC270
``invariant accelerator-type-as-ray-answers-it``. The same two shapes claim ``HPU`` with ``HABANA_VISIBLE_MODULES``
(held-out round 17's g1: a Gaudi wrapper typing an uncatalogued module by hl-smi's board name, without the
``Intel-`` Ray's HPU manager writes before the runtime's device name): the HPU runtime is stood in to learn that frame.

Graded alone, each by its own manager beside the healthy control (tests/conformance/test_conformance_heldout11_
accelerator_types.py): the corpus's one manager lets one plugin claim a variable (RAC104), and
c-neuron-cores-written-as-ranges claims NEURON_RT_VISIBLE_CORES there. Each is bound here under its name, so a fresh
process (RAC112, RAC269) imports it.
"""

from __future__ import annotations

from typing import Any

from rayaccel import CloudHint, Device, Host, ResourceContribution, Topology, to_label_value
from rayaccel_testplugins.corpus import Healthy, read_machine, write_machine

#: Ray 2.60's type for every Neuron node (ray.util.accelerators.AWS_NEURON_CORE).
NEURON_TYPE = "aws-neuron-core"
#: The ACME catalog's type, which acme-4's expectations were written with.
ACME_TYPE = "R1"
#: What Ray 2.60's HPU manager writes before the runtime's device name (ray/_private/accelerators/hpu.py).
HPU_PREFIX = "Intel-"
#: The HPU-like catalog's type: the frame Ray writes around a runtime name.
HPU_TYPE = f"{HPU_PREFIX}{ACME_TYPE}"


def typed_as_ray(expected: dict[str, Any], ray_type: str = NEURON_TYPE) -> None:
    """An expectation of acme-4 (the machine's or a fault's) with the catalog's type written as Ray's (Neuron's)."""
    if expected.get("accelerator_type") == ACME_TYPE:
        expected["accelerator_type"] = ray_type
    resources = expected.get("resources") or {}
    if f"accelerator_type:{ACME_TYPE}" in resources:
        resources[f"accelerator_type:{ray_type}"] = resources.pop(f"accelerator_type:{ACME_TYPE}")
    labels = expected.get("labels") or {}
    if labels.get("ray.io/accelerator-type") == ACME_TYPE:
        labels["ray.io/accelerator-type"] = ray_type


class NeuronLike(Healthy):
    """The healthy control claiming Ray's Neuron cores, typed as Ray types them."""

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.family = self.family.model_copy(update={"visible_devices_env_var": "NEURON_RT_VISIBLE_CORES"})
        data = read_machine(name)
        for expected in [data["expected"], *(fault.get("expected") or {} for fault in data.get("faults") or [])]:
            typed_as_ray(expected)
        write_machine(name, "acme-4", data)

    def _resource(self, token: str) -> str:
        return "neuron_cores"

    def catalog_data(self) -> dict[str, Any]:
        data = super().catalog_data()
        for sku in data["skus"]:
            sku["accelerator_type"] = NEURON_TYPE
        return data

    def hint(self, provider: str, instance_type: str) -> CloudHint | None:
        hint = super().hint(provider, instance_type)
        return hint.model_copy(update={"accelerator_type": NEURON_TYPE}) if hint is not None else None

    def rayaccel_resources(self, host: Host, devices: list[Device], topology: Topology) -> ResourceContribution:
        return ResourceContribution(accelerator_type=NEURON_TYPE if devices else None, extra=self.extra(devices))


class NeuronTypeFromProduct(NeuronLike):
    DEFECT = ("accelerator type from the product's name (e2's shape), the catalog's aws-neuron-core winning only for "
              "a SKU it lists: a newer product's node is typed by its name, where Ray's Neuron manager answers "
              "aws-neuron-core for every Neuron node")
    KILLED_BY = ("RAC270", "invariant accelerator-type-as-ray-answers-it")

    def rayaccel_resources(self, host: Host, devices: list[Device], topology: Topology) -> ResourceContribution:
        return Healthy.rayaccel_resources(self, host, devices, topology)


class NeuronTypeWithheldUnknown(NeuronLike):
    DEFECT = ("no accelerator type for a product the catalog does not list (no_accelerator_type: never guess): Ray's "
              "Neuron manager answers aws-neuron-core for the node whatever the product")
    KILLED_BY = ("RAC270", "invariant accelerator-type-as-ray-answers-it")

    def rayaccel_resources(self, host: Host, devices: list[Device], topology: Topology) -> ResourceContribution:
        listed = {name for sku in self.catalog_data()["skus"] for name in sku["match"].get("product_names", [])}
        if devices and all(d.product_name in listed for d in devices):
            return super().rayaccel_resources(host, devices, topology)
        return ResourceContribution(no_accelerator_type=True, extra=self.extra(devices))


class HpuLike(Healthy):
    """The healthy control claiming Ray's HPU modules, typed as Ray frames them: ``Intel-`` and the runtime's device
    name (its catalog's SKUs ``Intel-R1``, an uncatalogued product ``Intel-`` and its model word)."""

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.family = self.family.model_copy(update={"visible_devices_env_var": "HABANA_VISIBLE_MODULES"})
        data = read_machine(name)
        for expected in [data["expected"], *(fault.get("expected") or {} for fault in data.get("faults") or [])]:
            typed_as_ray(expected, HPU_TYPE)
        write_machine(name, "acme-4", data)

    def _resource(self, token: str) -> str:
        return "HPU"

    def catalog_data(self) -> dict[str, Any]:
        data = super().catalog_data()
        for sku in data["skus"]:
            sku["accelerator_type"] = HPU_TYPE
        return data

    def hint(self, provider: str, instance_type: str) -> CloudHint | None:
        hint = super().hint(provider, instance_type)
        return hint.model_copy(update={"accelerator_type": HPU_TYPE}) if hint is not None else None

    def rayaccel_resources(self, host: Host, devices: list[Device], topology: Topology) -> ResourceContribution:
        model = devices[0].product_name.split()[-1] if devices else ""
        return ResourceContribution(accelerator_type=to_label_value(f"{HPU_PREFIX}{model}") if model else None,
                                    extra=self.extra(devices))


class HpuTypeFromProduct(HpuLike):
    DEFECT = ("accelerator type the product's model word without Ray's Intel- prefix (held-out round 17's g1 shape), "
              "the catalog's Intel-R1 winning only for a SKU it lists: Ray's HPU manager answers Intel- and the "
              "runtime's device name for every node")
    KILLED_BY = ("RAC270", "invariant accelerator-type-as-ray-answers-it")

    def rayaccel_resources(self, host: Host, devices: list[Device], topology: Topology) -> ResourceContribution:
        return Healthy.rayaccel_resources(self, host, devices, topology)


class HpuTypeWithheldUnknown(HpuLike):
    DEFECT = ("no accelerator type for a product the catalog does not list (no_accelerator_type: never guess): Ray's "
              "HPU manager types the node Intel- and the runtime's device name whatever the product")
    KILLED_BY = ("RAC270", "invariant accelerator-type-as-ray-answers-it")

    def rayaccel_resources(self, host: Host, devices: list[Device], topology: Topology) -> ResourceContribution:
        listed = {name for sku in self.catalog_data()["skus"] for name in sku["match"].get("product_names", [])}
        if devices and all(d.product_name in listed for d in devices):
            return super().rayaccel_resources(host, devices, topology)
        return ResourceContribution(no_accelerator_type=True, extra=self.extra(devices))


TYPE_MUTANTS = (NeuronTypeFromProduct, NeuronTypeWithheldUnknown)
HPU_TYPE_MUTANTS = (HpuTypeFromProduct, HpuTypeWithheldUnknown)
CONTROLS = (NeuronLike, HpuLike)
c_neuron_type_from_product = NeuronTypeFromProduct("c-neuron-type-from-product")
c_neuron_type_withheld_unknown = NeuronTypeWithheldUnknown("c-neuron-type-withheld-unknown")
c_neuron_like = NeuronLike("c-neuron-like")
c_hpu_type_from_product = HpuTypeFromProduct("c-hpu-type-from-product")
c_hpu_type_withheld_unknown = HpuTypeWithheldUnknown("c-hpu-type-withheld-unknown")
c_hpu_like = HpuLike("c-hpu-like")
