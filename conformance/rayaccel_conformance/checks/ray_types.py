"""The accelerator type Ray's own manager gives a node, against the plugin's on the same machine, its SKU catalogued
or not (RAC270's ``accelerator-type-as-ray-answers-it``; issue 46, held-out round 11's ``e2``: a Neuron wrapper
answering the product name, ``Trainium2``, for a SKU its catalog does not list, where Ray answers
``aws-neuron-core`` for every Neuron node).

Ray's manager for a family it knows is the other author of ``accelerator_type:<TYPE>`` on the node (it keeps its
place in Ray's registry), so the family's type must be the one it answers. It is asked wired to the simulated
machine at its vendor interface (``ray_labels.wired``: the process environment the host's, its module's metadata
calls answered by the host's server); a manager that reads hardware the suite cannot wire (NVML, amdsmi, hl-smi)
answers None there, and nothing is compared. The machine is then made one of a product the catalog cannot know yet:
each device's product name written as a newer product's and its PCI device id as an id no SKU lists, wherever the
host states them (as ``rayaccel sku add``'s day-zero case meets it). Ray's answer does not depend on the catalog,
so the plugin's must not either.

Where the manager names the node from a vendor runtime the suite cannot wire (Ray's HPU manager: ``"Intel-"`` and
``habana_frameworks.torch.hpu.get_device_name()``; issue 46, held-out round 17's ``g1``: a Gaudi wrapper typing an
uncatalogued module by hl-smi's board name alone, ``HL-338``), the runtime is stood in (``ray_runtimes``) to learn
the frame Ray writes around the name, and the family's type, as recorded and for a product the catalog does not
list, must be a name in that frame: which name the runtime gives no fixture records, but Ray frames every one.
"""

from __future__ import annotations

from typing import Any

from rayaccel.hosts.fixtures import Fixture, HostState
from rayaccel.records import FamilyInventory
from rayaccel.simulation.host_factory import simulated_host
from rayaccel_conformance.checks.catalog_agreement import plugin_catalog
from rayaccel_conformance.checks.pci_id_forms import host_with_id_in_form
from rayaccel_conformance.checks.ray_labels import wired
from rayaccel_conformance.checks.ray_runtimes import in_frame, ray_type_frame
from rayaccel_conformance.checks.unknown_products import newer_product, renamed_host
from rayaccel_conformance.harness.subject import Subject

INVARIANT = "invariant accelerator-type-as-ray-answers-it"
#: Where the suite's made-up PCI device ids start (RAC230's day-zero SKU takes the first free one from here too).
FIRST_NEW_PCI_ID = 0xFE30


def ray_accelerator_type(manager: Any, fx: Fixture) -> str | None:
    """The type Ray's manager answers for the fixture's machine; None where it cannot read it here."""
    with wired(manager, simulated_host(fx), dict(fx.host.env), set()):
        try:
            answer = manager.get_current_node_accelerator_type()
        except Exception:  # Ray's manager failing on this machine says nothing of the plugin
            return None
    return answer if isinstance(answer, str) else None


def uncatalogued(subject: Subject, fx: Fixture, fam: FamilyInventory) -> tuple[Fixture, list[str]] | None:
    """The fixture with each device's product name and PCI device id written as a product's the catalog cannot know
    yet, and what was rewritten; None where nothing the host states names them."""
    try:
        taken = {p.lower() for sku in plugin_catalog(subject).skus for p in sku.match.pci_device_ids}
    except Exception:
        taken = set()
    taken |= {d.pci_device_id.lower() for d in fam.devices if d.pci_device_id}
    host = fx.host.model_dump(mode="json")
    changes: list[str] = []
    for name in sorted({d.product_name.strip() for d in fam.devices if d.product_name.strip()}):
        state = renamed_host(host, name, newer_product(name))
        if state != host:
            host = state
            changes.append(f"product {name!r} -> {newer_product(name)!r}")
    free = (f"0x{n:04x}" for n in range(FIRST_NEW_PCI_ID, 0x10000) if f"0x{n:04x}" not in taken)
    for pci in sorted({d.pci_device_id.lower() for d in fam.devices if d.pci_device_id}):
        new = next(free)
        state, places = host_with_id_in_form(host, pci, new)
        if places:
            host = state
            changes.append(f"PCI device id {pci} -> {new}")
    if not changes:
        return None
    return fx.model_copy(update={"host": HostState.model_validate(host), "faults": []}), changes


def type_disagreements(subject: Subject, manager: Any, fx: Fixture, fam: FamilyInventory) -> list[str]:
    """``invariant accelerator-type-as-ray-answers-it`` on ``fx`` as recorded and made of an uncatalogued product."""
    healthy = fx.model_copy(update={"faults": []})
    theirs = ray_accelerator_type(manager, healthy)
    if theirs is None:
        return framed_disagreements(subject, manager, fx, fam)
    wrong = []
    if fam.accelerator_type != theirs:
        wrong.append(f"{INVARIANT}, {fx.ref}: the family's accelerator type is {fam.accelerator_type!r}; Ray's "
                     f"{manager.__name__} answers {theirs!r} for this machine, and adds accelerator_type:{theirs} "
                     "to the node itself")
    made = uncatalogued(subject, healthy, fam)
    if made is None:
        return wrong
    variant, changes = made
    built = subject.build(simulated_host(variant)).family(subject.family().name)
    if built is None or built.sku_known or not built.devices:
        return wrong  # still a catalogued SKU (the catalog matched something not rewritten), or no device: no case
    theirs_now = ray_accelerator_type(manager, variant)
    if theirs_now is not None and built.accelerator_type != theirs_now:
        wrong.append(f"{INVARIANT}, {fx.ref} made of a product the catalog does not list ({'; '.join(changes)}): "
                     f"the family's accelerator type is {built.accelerator_type!r}, where Ray's {manager.__name__} "
                     f"answers {theirs_now!r} for the machine whatever its SKU (and {fam.accelerator_type!r} was "
                     "the catalog's): the type is derived unlike Ray's for a SKU the catalog does not know yet")
    return wrong


def framed_disagreements(subject: Subject, manager: Any, fx: Fixture, fam: FamilyInventory) -> list[str]:
    """``invariant accelerator-type-as-ray-answers-it`` where Ray's manager names the node from a runtime the suite
    stands in: the family's type, as recorded and made of an uncatalogued product, in the frame Ray writes."""
    frame = ray_type_frame(manager)
    if frame is None:
        return []
    prefix, suffix = frame
    said = (f"Ray's {manager.__name__} answers {prefix!r} + the runtime's device name"
            + (f" + {suffix!r}" if suffix else "") + " for every node it types")
    wrong = []
    if not in_frame(fam.accelerator_type, frame):
        wrong.append(f"{INVARIANT}, {fx.ref}: the family's accelerator type is {fam.accelerator_type!r}; {said}, "
                     "so its type is never this")
    made = uncatalogued(subject, fx.model_copy(update={"faults": []}), fam)
    if made is None:
        return wrong
    variant, changes = made
    built = subject.build(simulated_host(variant)).family(subject.family().name)
    if built is None or built.sku_known or not built.devices:
        return wrong  # still a catalogued SKU, or no device: no case
    if not in_frame(built.accelerator_type, frame):
        wrong.append(f"{INVARIANT}, {fx.ref} made of a product the catalog does not list ({'; '.join(changes)}): "
                     f"the family's accelerator type is {built.accelerator_type!r}, where {said}, whatever its SKU "
                     f"(and {fam.accelerator_type!r} was the catalog's): a product the catalog does not list yet is "
                     "typed by Ray all the same, so write its type in that frame")
    return wrong
