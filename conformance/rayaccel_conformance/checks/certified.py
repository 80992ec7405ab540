"""Certified tier (RAC3xx): transports, who stands behind the plugin, and evidence from real hardware."""

from __future__ import annotations

import re
from typing import Any

from rayaccel import hookspec
from rayaccel.hosts.seam import RealHost
from rayaccel.inventory.transport_paths import RAY_TRANSPORTS, REFERENCE, SCALE_UP, moves_host_memory_only
from rayaccel.records import DEVICE_FILE, Problem, expand_device_file
from rayaccel.simulation.host_factory import simulated_host
from rayaccel.support.lazy import import_object
from rayaccel.support.raycompat import TESTED_RAY_VERSIONS
from rayaccel_conformance.checks.ownership import label_owner_problem, transport_owner_problems
from rayaccel_conformance.checks.transport_devices import class_device_problems, device_type_problems
from rayaccel_conformance.harness.subject import Subject
from rayaccel_conformance.registry import CheckFailed, CheckSkipped, Evidence, NotApplicable, check

# SPDX license expressions: ids joined by AND/OR/WITH, optionally parenthesised.
_SPDX = re.compile(r"^[()A-Za-z0-9.+-]+( (AND|OR|WITH) [()A-Za-z0-9.+-]+)*$")
_VERSION = re.compile(r"^\d+\.\d+(\.\d+)?$")


@check("RAC301", uses_ray=True)
def transports(subject: Subject) -> Evidence:
    """Every declared tensor transport registers with Ray and moves tensors between two real actors.

    Each ``rayaccel_transports`` record names ``module:Class``; the class must import in this environment
    and subclass ``ray.experimental.TensorTransportManager``, and ``rayaccel.ray.register_transports`` must
    accept it. Then each transport that can run on this machine sends a list of tensors (several dtypes,
    an empty one) from one Ray actor to another, twice: the bytes must arrive identical, the freed ref is
    collected, and an abort between the two leaves the transport working. Five more transfers to the same
    receiver follow: after them it must hold less than one descriptor or thread more per transfer than after the
    first (within 30 s). Then a sender is killed after its
    part of a transfer and before the receive: the receive must fail with one error naming the transport (or,
    where the bytes outlive the sender, arrive identical), the receiver must hold no more descriptors or
    threads than before it (within 30 s), and a third transfer must work. A transport that cannot run
    here (no such device, a missing library) is skipped with the reason, never passed; so is a plugin
    that declares none. Fix: point ``manager_class`` at the subclass, make its module importable without
    the device present, and see ``rayaccel.transports.shared_memory`` for a transport that implements the contract.
    """
    from ray.experimental import TensorTransportManager

    from rayaccel_conformance.checks.transport_contract import cannot_run_here, contract_run

    subject.family()
    problems: list[Problem] = []
    specs = subject.manager.answer(subject.name, hookspec.TRANSPORTS, problems)
    wrong = [p.render() for p in problems]
    runnable = []
    skipped = []
    for spec in specs:
        try:
            cls: object = import_object(spec.manager_class)
        except Exception as e:  # an import error is the finding, whatever its type
            wrong.append(f"{spec.name}: {spec.manager_class} does not import: {type(e).__name__}: {e}")
            continue
        if not (isinstance(cls, type) and issubclass(cls, TensorTransportManager)):
            wrong.append(f"{spec.name}: {spec.manager_class} is not a subclass of TensorTransportManager")
            continue
        why = cannot_run_here(spec)
        if why:
            skipped.append(f"{spec.name} not run here: {why}")
        else:
            runnable.append(spec)
    if wrong:
        raise CheckFailed(wrong)
    if not specs:
        raise CheckSkipped("the plugin declares no tensor transports: nothing to certify")
    if not runnable:
        raise CheckSkipped("; ".join(skipped))
    from rayaccel.errors import RayaccelError
    from rayaccel.ray.transports import register_transports
    from rayaccel_conformance.harness.raycluster import shared_cluster

    shared_cluster().start()
    try:
        register_transports(subject.manager, [subject.name])
    except RayaccelError as e:
        raise CheckFailed(str(e)) from None
    ran = []
    for spec in runnable:
        try:
            ran.append(contract_run(spec))
        except Exception as e:  # whatever the transfer raised is the finding
            wrong.append(f"{spec.name}: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}")
    if wrong:
        raise CheckFailed(wrong)
    return [*ran, *skipped]


@check("RAC302")
def support_metadata(subject: Subject) -> Evidence:
    """The plugin's metadata names at least 2 maintainers, a support contact, a license and the Ray
    versions it is tested with.

    ``FamilyDeclaration.support`` is what users and Ray's maintainers rely on: ``maintainers`` (2 or more,
    so support outlives one person), ``contact`` (URL or e-mail), ``license`` (an SPDX expression) and
    ``tested_ray_versions`` (e.g. ``["2.60.0"]``). Fix: fill in ``support=SupportInfo(...)``.
    """
    support = subject.family().support
    wrong = []
    maintainers = [m for m in support.maintainers if m.strip()]
    if len(set(maintainers)) < 2:
        wrong.append(f"names {len(set(maintainers))} maintainers, 2 or more are needed")
    if not support.contact or not ("@" in support.contact or support.contact.startswith(("http://", "https://"))):
        wrong.append(f"support contact {support.contact!r} is not a URL or e-mail address")
    if not support.license or not _SPDX.match(support.license):
        wrong.append(f"license {support.license!r} is not an SPDX expression")
    if not support.tested_ray_versions or not all(_VERSION.match(v) for v in support.tested_ray_versions):
        wrong.append(f"tested Ray versions {support.tested_ray_versions} must list versions like '2.60.0'")
    if wrong:
        raise CheckFailed(wrong)
    current = [v for v in support.tested_ray_versions if v in TESTED_RAY_VERSIONS]
    return [f"maintainers: {', '.join(maintainers)}; contact {support.contact}; license {support.license}",
            f"tested with Ray {', '.join(support.tested_ray_versions)}"
            + ("" if current else f" (not with the SDK's Ray {', '.join(TESTED_RAY_VERSIONS)})")]


@check("RAC303")
def real_hardware(subject: Subject) -> Evidence:
    """The run includes evidence from real hardware: at least one device of the family on this machine.

    Simulated hosts prove the plugin's logic against recorded vendor answers; certification also needs a
    run on the hardware itself (``--conformance-hardware real`` on a machine with the family's devices).
    A simulated-only run never reports certified: this check is skipped there, with this reason. Fix: run
    the suite on a machine with the devices and attach its report.
    """
    family = subject.family()
    if subject.hardware != "real":
        raise CheckSkipped("simulated-only run: certified needs --conformance-hardware real on a machine with "
                           f"{family.vendor} devices")
    inventory = subject.build(RealHost())
    fam = inventory.family(family.name)
    if fam is None or not fam.devices:
        problems = [p.render() for p in subject.plugin_problems(inventory, severities=("error", "warning"))]
        raise CheckFailed([f"no {family.name} device found on {inventory.host}", *problems])
    products = sorted({d.product_name or "no product name" for d in fam.devices})
    return (f"{len(fam.devices)} devices on {inventory.host} ({', '.join(products)}), accelerator type "
            f"{fam.accelerator_type}, resources {fam.resources}")


@check("RAC304")
def scheduler_names(subject: Subject) -> Evidence:
    """The family names its devices for every scheduler rayaccel exports to, under its own vendor's names,
    and its device files are the ones its fixtures show.

    ``FamilyDeclaration.schedulers`` is what ``rayaccel export`` writes for KubeRay and Kubernetes DRA
    (``kubernetes_resource``, e.g. ``nvidia.com/gpu``; ``dra_driver``, e.g. ``gpu.nvidia.com``) and Slurm
    (``slurm_gres``, e.g. ``gpu``; ``device_files``, e.g. ``/dev/nvidia{index}``): an operator cannot feed
    those schedulers from the inventory without them. The resource and the driver must be under the vendor's
    own domain (another vendor's, such as ``nvidia.com/gpu`` for an ACME card, would claim that vendor's
    devices). On every fixture whose machine shows device nodes where the pattern points, each discovered
    device's file (its ``device_file`` attribute, else the pattern with its index) must be one of them. Fix:
    declare ``schedulers=SchedulerNames(...)`` (``rayaccel new`` fills in defaults from the vendor's domain).
    """
    family = subject.family()
    names = family.schedulers
    wrong = [f"schedulers.{field} is not declared" for field in ("kubernetes_resource", "dra_driver", "slurm_gres")
             if getattr(names, field) is None]
    if not names.device_files:
        wrong.append("schedulers.device_files is empty: Slurm's File= needs the device's character device")
    if names.kubernetes_resource is not None:
        why = label_owner_problem(names.kubernetes_resource, family)
        if why:
            wrong.append("schedulers.kubernetes_resource: " + why.replace("label ", "extended resource ", 1))
    if names.dra_driver is not None:
        why = label_owner_problem(f"{names.dra_driver}/device", family)
        if why:
            wrong.append(f"schedulers.dra_driver {names.dra_driver!r}: " + why.split(": ", 1)[-1])
    checked = 0
    for ref in subject.fixture_paths() if names.device_files else ():
        host = simulated_host(subject.fixture(ref))
        listed: dict[str, list[str]] = {}  # a folder of /dev -> the device nodes this recording shows in it
        compared = False
        for device in subject.devices(subject.inventory(ref)):
            own = device.attributes.get(DEVICE_FILE)
            path = own if isinstance(own, str) else expand_device_file(names.device_files[0], device.index)
            folder = path.rsplit("/", 1)[0]
            shown = listed.setdefault(folder, host.glob(folder + "/*"))
            if not shown:
                continue  # the recording holds no device nodes there (an NVML answer, not /dev): nothing to compare
            compared = True
            if path not in shown:
                wrong.append(f"{ref}: device {device.index} ({device.id})'s file {path} is not among the device "
                             f"nodes the machine shows in {folder} ({', '.join(sorted(shown)[:4])})")
        checked += compared
    if wrong:
        raise CheckFailed(wrong)
    return [f"Kubernetes {names.kubernetes_resource}, DRA driver {names.dra_driver}, Slurm GRES {names.slurm_gres} "
            f"({', '.join(names.device_files)})",
            f"device files match the device nodes of {checked} fixture(s) that record them" if checked
            else "no fixture records device nodes: device files not compared"]


@check("RAC305")
def transport_ownership(subject: Subject) -> Evidence:
    """Every declared tensor transport is the family's own: Ray's built-in transports only as Ray's, never
    another vendor's or another family's.

    ``rayaccel_transports`` names what Ray Direct Transport may move the family's tensors with, and path
    selection trusts it. A name Ray registers itself (``NCCL``, ``GLOO``, ``NIXL``, ``CUDA_IPC``) must be
    declared ``builtin_in_ray`` with Ray's own manager class and only device types Ray moves with it (a
    plugin class under the name ``NCCL`` takes Ray's transport over for every family). A transport of the
    plugin's own must not carry another vendor's collective library or fabric name (``RCCL`` is AMD's,
    ``HCCL`` Intel Gaudi's, an ``NVLINK_*`` transport NVIDIA's), another installed plugin's transport name,
    or a manager class outside the plugin's own package (a transport copied from another plugin moves that
    plugin's devices). A declaration's ``one_sided`` must say what its manager class's ``is_one_sided()``
    says (invariant one-sided-as-its-class: NCCL declared one-sided, or NIXL two-sided, misleads path
    selection and RAC301's choice of what to run). Its class's ``tensor_transport_backend()`` must answer the
    declared name (invariant named-as-declared: each of Ray's own transports answers the name it registers, Ray
    matches a transport by it, and the transport's errors and logs carry it, so a subclass that keeps its
    parent's name, the SDK's ``RAYACCEL_SHM`` or a sibling's, names another transport to its users); a subclass
    of Ray's collective transport answers the ``ray.util.collective`` backend its actors' groups are found by
    instead (AMD's ``RCCL`` answers ``NCCL``). A transport that moves CPU tensors only declares no scale-up
    link (invariant host-memory-crosses-no-scale-up-link: NVLink, NVSwitch, xGMI, ICI and NeuronLink join two
    devices' memories with no host memory on the way, and Ray moves a tensor only on the device types a transport
    is registered for, so it moves only copies staged through host memory: path selection never offers it there, and
    the declaration claims a link its users never get). A transport of device memory is declared for the torch device
    type the family's tensors have (invariant devices-as-ray-matches-them: Ray matches a tensor to a transport by
    ``tensor.device.type`` in its declared devices, and Ray's torch device manager for the family's resource gives
    its tensors that type: ``cuda`` for GPU, ROCm's too, ``hpu`` for HPU, ``npu`` for NPU; a transport declared for
    ``hip`` alone matches no tensor of the family). A transport whose manager class moves host memory alone is
    declared for no device type (invariant host-memory-declares-no-device: the class's own answer,
    ``moved_device_types()``, is the oracle; the SDK's ``SharedMemoryTransport`` answers ``('cpu',)`` while its memory
    steps are its own, so a subclass declared for the family's device type too is registered with Ray for tensors its
    steps refuse, and path selection never offers it for device tensors). Checked from the declarations alone, without
    Ray; RAC301
    then runs each one. Fix: name your transport after the family (``rayaccel new`` gives ``<FAMILY>_SHM``),
    keep its class in your package, override ``tensor_transport_backend()`` to return that name, declare
    Ray's transports exactly as Ray registers them, with the ``one_sided`` flag their class answers, a
    host-memory transport with the links host memory crosses (pcie, ethernet, roce, infiniband, efa), and a device
    transport with the torch device type of the family's tensors (``cuda`` on ROCm), a transport of the SDK's
    shared-memory class, its memory steps kept, for ``cpu`` alone.
    """
    subject.family()
    problems: list[Problem] = []
    specs = subject.manager.transports(subject.name, problems)  # with what each class says it moves
    wrong = [p.render() for p in problems]
    if not specs and not wrong:
        raise NotApplicable("the plugin declares no tensor transports")
    own = subject.package
    others = {spec.name: other for other in subject.manager.plugin_names() if other != subject.name
              for spec in subject.manager.answer(other, hookspec.TRANSPORTS, []) if not spec.builtin_in_ray}
    collectives = {backend.name for other in subject.manager.plugin_names()
                   for backend in subject.manager.answer(other, hookspec.COLLECTIVE_BACKENDS, [])}
    for spec in specs:
        wrong += transport_owner_problems(spec, subject.family(), own, others)
        wrong += one_sided_problems(spec)
        wrong += backend_name_problems(spec, others | {s.name: subject.name for s in specs}, collectives)
        wrong += scale_up_problems(spec)
        wrong += device_type_problems(spec, subject.family())
        wrong += class_device_problems(spec)
    if wrong:
        raise CheckFailed(wrong)
    return [f"{s.name}: {'Ray' if s.builtin_in_ray else 'own'} ({s.manager_class}; {', '.join(s.devices)})"
            for s in specs]


def one_sided_problems(spec: Any) -> list[str]:
    """Why ``spec``'s ``one_sided`` is not what its manager class answers (a class that does not import is
    RAC301's finding, not this one's)."""
    try:
        cls = import_object(spec.manager_class)
        answer = cls.is_one_sided()
    except Exception:  # not importable or no answer: RAC301 names it
        return []
    if not isinstance(answer, bool) or answer == spec.one_sided:
        return []
    return [f"invariant one-sided-as-its-class: transport {spec.name} is declared one_sided={spec.one_sided}, but "
            f"its class {spec.manager_class} answers is_one_sided() {answer}: declare what the class does"]


def backend_name_problems(spec: Any, declared: dict[str, str], collectives: set[str]) -> list[str]:
    """Why the name ``spec``'s manager class answers (``tensor_transport_backend()``) is not the one Ray can use.

    Ray's own transports each answer the name they are registered under (NIXL, GLOO, NCCL, CUDA_IPC), as the
    method's contract says ("Ray uses this name to match your transport with the tensor_transport argument"); the
    SDK's shared-memory class names itself so in every error and log line. Ray's collective class alone uses the
    answer as something else: the backend its actors' group is looked up by (``actor_has_tensor_transport``), so
    there it must be a backend ``ray.util.collective`` knows (AMD's RCCL class answers NCCL). ``declared``: the
    installed plugins' own transport names -> plugin; ``collectives``: the backends installed plugins declare."""
    try:
        cls = import_object(spec.manager_class)
        # Without __init__, which Ray runs in each actor (the SDK's sweeps /dev/shm): the name is a constant.
        answer = cls.__new__(cls).tensor_transport_backend()
    except Exception:  # not importable, abstract or needing its state: RAC301 runs it
        return []
    if _collective_class(cls):
        if not isinstance(answer, str) or _collective_backend(answer) or answer.upper() in collectives:
            return []
        return [f"invariant named-as-declared: transport {spec.name}'s class {spec.manager_class} is Ray's collective "
                f"transport, which finds each actor's group by the backend tensor_transport_backend() answers, and it "
                f"answers {answer!r}, no backend ray.util.collective knows (NCCL, GLOO, or one a plugin declares): no "
                f"actor ever has the transport; answer the collective backend its groups are created with"]
    if answer == spec.name:
        return []
    whose = _named_transport(answer, declared)
    return [f"invariant named-as-declared: transport {spec.name}'s class {spec.manager_class} answers "
            f"tensor_transport_backend() {answer!r}{whose}, not the name it is declared and registered under: Ray "
            f"matches a transport to the tensor_transport asked for by that name, each of Ray's own transports answers "
            f"the name it registers (NIXL, GLOO, NCCL, CUDA_IPC), and the transport's errors and logs name {answer!r} "
            f"to the user of {spec.name}; override tensor_transport_backend() to return {spec.name!r}"]


def scale_up_problems(spec: Any) -> list[str]:
    """Why ``spec`` claims a scale-up link it cannot carry: it moves CPU tensors only (Ray moves a tensor only on
    the device types a transport is registered for, rdt_store's "does not support tensor transfer on device"),
    and a scale-up link (``SCALE_UP``: NVLink, NVSwitch, xGMI, ICI, NeuronLink) joins two devices' memories with
    no host memory on the way. Path selection passes it over there (it can move only copies staged through host
    memory), so the declaration claims a link its users never get."""
    claimed = [kind for kind in spec.link_kinds if kind in SCALE_UP]
    if not claimed or not moves_host_memory_only(spec):
        return []
    return [f"invariant host-memory-crosses-no-scale-up-link: transport {spec.name} moves {', '.join(spec.devices)} "
            f"tensors only, yet declares {', '.join(claimed)}, a scale-up link between two devices' memories that "
            f"host memory never crosses: it moves only copies staged through host memory (Ray moves a tensor only on "
            f"the device types a transport is registered for), so path selection never offers {spec.name} between two "
            f"devices joined by {claimed[0]} and the declaration claims a link its users never get; declare the links "
            f"host memory crosses (pcie, ethernet, roce, infiniband, efa), or the device types it moves"]


def _collective_class(cls: type) -> bool:
    try:
        from ray.experimental.rdt.collective_tensor_transport import CollectiveTensorTransport
    except ImportError:  # a Ray without it has no such class to be
        return False
    return issubclass(cls, CollectiveTensorTransport)


def _collective_backend(name: str) -> bool:
    """Whether ``ray.util.collective`` accepts ``name`` as a backend (its own, or one registered in this process)."""
    try:
        from ray.util.collective.types import Backend

        Backend(name)
    except Exception:
        return False
    return True


def _named_transport(name: Any, declared: dict[str, str]) -> str:
    """What else ``name`` names, in words (empty: nothing known)."""
    if name == REFERENCE.name:
        return " (the SDK's reference shared-memory transport, which every rayaccel node registers too)"
    if name in RAY_TRANSPORTS:
        return f" (Ray's own {name})"
    if name in declared:
        return f" (a transport plugin {declared[name]} declares)"
    return ""


@check("RAC306")
def collective_backends(subject: Subject) -> Evidence:
    """Every declared collective backend imports, registers with ray.util.collective and is the plugin's own.

    Each ``rayaccel_collective_backends`` record names ``module:Class``; the class must import in this
    environment, subclass Ray's ``BaseGroup`` with every abstract method implemented, live in the plugin's own
    package (a class of Ray's or another plugin's under a new name is not the family's library), and take a
    name that is neither Ray's own (``NCCL``, ``GLOO``) nor another installed plugin's. Then
    ``rayaccel.ray.collectives`` registers it in this process, as the bridge does in every driver and worker,
    and Ray's registry must hand back that class under the name. Not applicable to a plugin that declares
    none. Fix: point ``group_class`` at your ``BaseGroup`` subclass, keep it in your package, name the
    backend after the family (``<FAMILY>_CCL``), and see the template's ``collective.py``.
    """
    from rayaccel.ray.collectives import (
        Declared,
        declaration_problems,
        declared_backends,
        group_class,
        register,
    )

    subject.family()
    problems: list[Problem] = []
    specs = subject.manager.answer(subject.name, hookspec.COLLECTIVE_BACKENDS, problems)
    wrong = [p.render() for p in problems]
    if not specs and not wrong:
        raise NotApplicable("the plugin declares no collective backends")
    own = subject.package
    others = [d for d in declared_backends(subject.manager) if d.plugin != subject.name]
    mine = [Declared(subject.name, s.name, s.group_class) for s in specs]
    wrong += [w for w in declaration_problems([*mine, *others]) if w.startswith(f"plugin {subject.name}:")]
    wrong += [f"plugin {subject.name}: collective backend {d.name} is also declared by plugin {o.plugin}; name "
              "yours after the family" for d in mine for o in others if o.name == d.name]
    classes: dict[str, Any] = {}
    for d in mine:
        if d.group_class.split(":")[0].split(".")[0] != own:
            wrong.append(f"collective backend {d.name}: {d.group_class} lives in "
                         f"{d.group_class.split('.')[0].split(':')[0]}, not in the plugin's own package {own}")
            continue
        try:
            classes[d.name] = group_class(d)
        except Exception as e:  # the registration error names the plugin and the fix
            wrong.append(str(e))
    if wrong:
        raise CheckFailed(wrong)
    from ray.util.collective.backend_registry import _global_registry

    try:
        register(mine)
    except Exception as e:
        raise CheckFailed(f"registering with ray.util.collective: {e}") from None
    evidence = []
    for d in mine:
        if _global_registry.get(d.name) is not classes[d.name]:
            raise CheckFailed(f"collective backend {d.name}: Ray's registry holds another class under the name")
        try:
            available = "available here" if classes[d.name].check_backend_availability() else "not available here"
        except Exception as e:  # a library missing on the grading machine is not the finding
            available = f"availability unknown ({type(e).__name__})"
        evidence.append(f"{d.name}: own ({d.group_class}), registered with ray.util.collective, {available}")
    return evidence
