"""A family Ray already knows sets and reads its visible-devices variable as Ray's own manager does, under every
setting of Ray's that the manager reads (supported tier, issue 46): RAC270.

For a resource Ray has a built-in accelerator manager for (``TPU`` with ``TPU_VISIBLE_CHIPS``, ``neuron_cores``,
``HPU``, ``GPU``), Ray's manager is the other reader and writer of the variable on the same node: the plugin's
``rayaccel_visible_env`` and ``rayaccel_parse_visible`` have to agree with it, or a task sees other devices
than Ray gave it. Some of Ray's managers read settings of their own (``RAY_TPU_RESOURCE_PER_CHIP``: TPU units
per chip), which no fixture can carry since they live in the processes' environment; the suite finds which
``RAY_*`` settings the manager reads by watching it, then sets each to the small numbers Ray accepts and one it
refuses, and asks both sides. Ray's manager is called, never patched; the process environment is restored.
"""

from __future__ import annotations

import contextlib
import os
from typing import Any

from rayaccel.records import Device, FamilyInventory
from rayaccel.simulation.host_factory import simulated_host
from rayaccel_conformance.checks.experimental import _ray_validator, process_env_var
from rayaccel_conformance.checks.ray_counts import companions_only_where_ray_writes_them
from rayaccel_conformance.checks.ray_environment import NOSET, RAY_PREFIX, environment_kept
from rayaccel_conformance.checks.ray_labels import labels_as_ray_gives_them, labels_read_first
from rayaccel_conformance.checks.ray_resources import resource_disagreements
from rayaccel_conformance.checks.ray_types import type_disagreements
from rayaccel_conformance.harness.subject import Subject
from rayaccel_conformance.registry import CheckFailed, Evidence, NotApplicable, check

#: What Ray 2.60's managers read as "no device" (nvidia_gpu, amd_gpu, intel_gpu, npu, ttnpu: the empty value and
#: ``NoDevFiles``, a container runtime's answer). Each is asked of the manager itself: only a value it reads as
#: no device binds the plugin.
NO_DEVICE_VALUES = ("", "NoDevFiles")
#: Values of a Ray setting tried: the small counts Ray's managers take, and 0, which a count setting refuses.
SETTING_VALUES = ("1", "2", "0")


def settings_read(manager: Any, var: str) -> list[str]:
    """The ``RAY_*`` settings Ray's manager looks up while it writes and reads ``var`` (less NOSET switches)."""
    seen: set[str] = set()
    original = type(os.environ)

    class Recording(original):  # type: ignore[valid-type,misc]
        def __getitem__(self, key: Any) -> Any:
            if isinstance(key, str) and key.startswith(RAY_PREFIX) and not key.startswith(NOSET):
                seen.add(key)
            return super().__getitem__(key)

    with environment_kept():
        os.environ.__class__ = Recording
        try:
            with contextlib.suppress(Exception):  # a manager refusing the probe still looked its settings up
                manager.set_current_process_visible_accelerator_ids(["0"])
                os.environ[var] = "0"
                manager.get_current_process_visible_accelerator_ids()
        finally:
            os.environ.__class__ = original
    return sorted(seen)


def companions_read(manager: Any, var: str) -> list[str]:
    """The variables other than ``var`` and Ray's settings that Ray's manager looks up while it reads ``var`` for a
    process (AMD's ``ROCR_VISIBLE_DEVICES``: it refuses that one set without ``HIP_VISIBLE_DEVICES``)."""
    seen: set[str] = set()
    original = type(os.environ)

    class Recording(original):  # type: ignore[valid-type,misc]
        def __getitem__(self, key: Any) -> Any:
            seen.add(str(key))
            return super().__getitem__(key)

        def __contains__(self, key: Any) -> bool:
            seen.add(str(key))
            return bool(super().__contains__(key))

    for value in ("0", None):  # unset too: AMD's manager looks ROCR_VISIBLE_DEVICES up only without its own
        with environment_kept():
            os.environ.pop(var, None)
            if value is not None:
                os.environ[var] = value
            os.environ.__class__ = Recording
            try:
                with contextlib.suppress(Exception):
                    manager.get_current_process_visible_accelerator_ids()
            finally:
                os.environ.__class__ = original
    return sorted(key for key in seen if key != var and not key.startswith(RAY_PREFIX))


def ray_refusal(manager: Any, env: dict[str, str], names: list[str]) -> str | None:
    """What Ray's manager says refusing a process environment holding ``env`` (of ``names``, the rest unset), or
    None where it reads it."""
    with environment_kept():
        for name in names:
            os.environ.pop(name, None)
        os.environ.update(env)
        try:
            manager.get_current_process_visible_accelerator_ids()
        except (RuntimeError, ValueError) as e:
            return str(e) or type(e).__name__
    return None


def companion_disagreements(subject: Subject, manager: Any, var: str, fx: Any) -> list[str]:
    """``invariant companions-as-ray-reads-them``: each variable Ray's manager reads beside ``var`` set on the node
    (to a unit, as Slurm's gres sets ROCR_VISIBLE_DEVICES) with ``var`` unset, empty (what Ray writes for a task
    given no unit) and a unit: the plugin refuses (an error naming either variable, or discovery raising) the
    environments Ray's manager refuses, and only those."""
    wrong = []
    for companion in companions_read(manager, var):
        names = [var, companion]
        for env in ({companion: "0"}, {companion: "0", var: ""}, {companion: "0", var: "0"}):
            refused = ray_refusal(manager, env, names)
            host = {k: v for k, v in fx.host.env.items() if k not in names} | env
            built = subject.build(simulated_host(fx.model_copy(update={
                "host": fx.host.model_copy(update={"env": host}), "faults": []})))
            said = [p for p in subject.plugin_problems(built, ("rayaccel_discover",), ("error",))
                    if p.code == "hook-raised" or companion in p.message or var in p.message]
            shown = ", ".join(f"{k}={v!r}" for k, v in env.items()) + ("" if var in env else f", {var} unset")
            where = f"invariant companions-as-ray-reads-them, {fx.ref} with {shown}"
            if refused and not said:
                wrong.append(f"{where}: Ray's {manager.__name__} refuses it ({refused}); the plugin discovers "
                             f"{len(subject.devices(built))} devices and names neither variable")
            elif not refused and said:
                wrong.append(f"{where}: Ray's {manager.__name__} reads it (as {var} alone), yet the plugin refuses it: "
                             f"{said[0].message.splitlines()[0]}")
    return wrong


def ray_accepts(manager: Any, var: str) -> bool:
    """Whether Ray's manager takes the settings as they are now (it raises ValueError on a value it refuses)."""
    with environment_kept():
        os.environ[var] = "0"
        try:
            manager.get_current_process_visible_accelerator_ids()
        except ValueError:
            return False
    return True


def unit_sets(family: FamilyInventory) -> list[list[str]]:
    """The unit lists a task may be given: each healthy whole device's, the first two's together, all of them."""
    down = {h.device for h in family.health if h.state == "unhealthy"}
    devices: list[Device] = [d for d in family.devices if d.id not in down and not d.partitions]
    sets = [d.unit_ids for d in devices]
    if len(devices) > 1:
        sets += [[u for d in devices[:2] for u in d.unit_ids], [u for d in devices for u in d.unit_ids]]
    return sets


def answers(subject: Subject, var: str, family: FamilyInventory) -> list[tuple[list[str], str | None, list[str]]]:
    """The plugin's variable for each unit list a task may hold, and its reading of that value."""
    found = []
    for units in unit_sets(family):
        value = subject.manager.visible_env(subject.name, units).get(var)
        found.append((units, value, subject.manager.parse_visible(subject.name, value or "")))
    return found


def companions(before: dict[str, str], after: dict[str, str], var: str) -> dict[str, str]:
    """The variables besides ``var`` that Ray's manager set (added or changed), in name order (TPU's bounds)."""
    return {key: after[key] for key in sorted(after) if key != var and before.get(key) != after[key]}


def left_to_the_node(env: dict[str, str], read: list[str], written: dict[str, str]) -> list[str]:
    """The variables of ``env`` that Ray's manager reads beside its own (``read``) but never writes for a task
    (not in ``written``): under Ray a task's process holds the node's value of each (Slurm's gres sets AMD's
    ``ROCR_VISIBLE_DEVICES``), so a plugin writing one replaces the layer the family's ids are counted in."""
    return [key for key in read if key in env and key not in written]


def disagreements(subject: Subject, manager: Any, var: str, family: FamilyInventory, where: str) -> list[str]:
    """What the plugin writes or reads otherwise than Ray's manager, for each unit list a task may hold."""
    wrong = []
    read_beside = companions_read(manager, var)
    left: dict[str, tuple[list[str], str, str | None, dict[str, str]]] = {}
    for units in unit_sets(family):
        with environment_kept():
            os.environ.pop(var, None)
            before = dict(os.environ)
            manager.set_current_process_visible_accelerator_ids(units)
            written = os.environ.get(var)
            beside = companions(before, dict(os.environ), var)
        env = subject.manager.visible_env(subject.name, units)
        ours = env.get(var)
        # The SDK's manager replaces Ray's in Ray's registry: a task's process gets the plugin's variables only.
        wrong += [f"invariant visible-env-companions-as-ray-writes-them, {where}: units {units} set {key}="
                  f"{env.get(key)!r}; Ray's {manager.__name__} writes {key}={value!r} beside {var}={written!r} "
                  "(the task gets only the plugin's variables)"
                  for key, value in beside.items() if env.get(key) != value]
        for key in left_to_the_node(env, read_beside, {var: "", **beside}):
            if key not in left or len(units) == 2:  # one example a variable, two devices' where there is one
                left[key] = (units, env[key], ours, beside)
        if written is not None and ours != written:
            wrong.append(f"invariant visible-env-as-ray-writes-it, {where}: units {units} set as {var}={ours!r}; "
                         f"Ray's {manager.__name__} writes {written!r}")
            continue
        if written is None:
            continue
        with environment_kept():
            os.environ[var] = written
            ray_reads = manager.get_current_process_visible_accelerator_ids()
        read = subject.manager.parse_visible(subject.name, written)
        if read != ray_reads:
            wrong.append(f"invariant visible-parse-as-ray-reads-it, {where}: {var}={written!r} parses as {read}; "
                         f"Ray's {manager.__name__} reads {ray_reads}")
        elif ray_reads != units:
            wrong.append(f"invariant units-as-ray-numbers-them, {where}: a task given units {units} (one device's, "
                         f"or whole devices') is shown {var}={written!r}, which Ray's {manager.__name__} reads as "
                         f"{ray_reads}: the devices' units are not numbered as Ray numbers them")
    # A variable Ray's manager reads but never writes is the node's in a task (Slurm's ROCR_VISIBLE_DEVICES): ROCm
    # applies it first and renumbers what it keeps, HIP_VISIBLE_DEVICES then indexes that list, so the family's
    # ids written into both keep GPUs 2,3 as 0,1 and then ask for 2,3 of two: none.
    wrong += [f"invariant companions-left-as-ray-leaves-them, {where}: units {units} set {key}={value!r} beside "
              f"{var}={ours!r}; Ray's {manager.__name__} reads {key} but writes only {', '.join([var, *beside])}, "
              f"so a task's process keeps the node's {key}: the plugin's value replaces it, a second layer of "
              f"visibility among whose devices {var}'s ids are then counted"
              for key, (units, value, ours, beside) in left.items()]
    wrong += companions_only_where_ray_writes_them(
        manager, var, family, lambda units: subject.manager.visible_env(subject.name, units), where)
    for value in NO_DEVICE_VALUES:
        with environment_kept():
            os.environ[var] = value
            try:
                ray_reads = manager.get_current_process_visible_accelerator_ids()
            except ValueError:
                continue
        read = subject.manager.parse_visible(subject.name, value)
        if ray_reads == [] and read:
            wrong.append(f"invariant visible-none-as-ray-reads-it, {where}: {var}={value!r}, which Ray's "
                         f"{manager.__name__} reads as no device, parses as {read}: a process Ray gave no device "
                         "would be told it has these")
    return wrong


@check("RAC270", scope="fixture")
def visible_devices_as_ray_reads_them(subject: Subject, fixture: str | None) -> Evidence:
    """A family Ray already has a manager for sets and reads its visible-devices variable as that manager does,
    under every value of the Ray settings the manager reads.

    Not applicable to a day-zero family (Ray has no manager for its resource and variable). For each whole
    device's units, the first two devices' and all of them, the variable the plugin's ``rayaccel_visible_env``
    sets must be the one Ray's manager writes (``set_current_process_visible_accelerator_ids``), and the
    plugin's ``rayaccel_parse_visible`` of that value must be what the manager reads back, which must be the
    units given (``invariant units-as-ray-numbers-them``: discovery numbers units as Ray does). Every other
    variable the manager writes beside it (TPU's sub-host bounds for one or two chips) the plugin's env must
    hold with the same value (``invariant visible-env-companions-as-ray-writes-them``: the SDK's manager takes
    the place of Ray's, so a task's process gets the plugin's variables only). A variable the manager reads
    beside its own but never writes (AMD's ``ROCR_VISIBLE_DEVICES``) is the node's in a task, and the plugin's env
    must not set it (``invariant companions-left-as-ray-leaves-them``: ROCm applies it first and renumbers, so the
    task's ids written into both show it no GPU). A variable the manager writes for some counts of devices only
    (TPU's bounds, for one or two chips) the plugin's env must leave unset for every count the manager leaves it
    unset for, all of the node's devices included (``invariant companions-only-where-ray-writes-them``: a whole host
    of a multi-host slice keeps its own). A value the
    manager reads as no device (the empty value, ``NoDevFiles``) the plugin must read as none too
    (``invariant visible-none-as-ray-reads-it``). Each variable the manager reads beside its own (AMD's
    ``ROCR_VISIBLE_DEVICES``, which Slurm's gres sets) is set on the node, on the first fixture, with the
    family's variable unset, empty (what Ray writes for a task given no unit) and a unit: the plugin's discovery
    must refuse (raise, or an error naming either variable) exactly the environments the manager refuses
    (``invariant companions-as-ray-reads-them``). The suite
    watches which ``RAY_*`` settings the manager reads (TPU's ``RAY_TPU_RESOURCE_PER_CHIP``), sets each in
    the process to 1 and 2, builds the (first) fixture again, and asks both sides again; a value Ray accepts must not
    be reported as malformed by the plugin (``invariant ray-setting-taken-as-ray-takes-it``). Set to 0, which
    Ray refuses, the plugin must name the setting and build the node as without it, the default it reports
    using (``invariant refused-setting-not-used``). On a host with a metadata server, a variable Ray's manager
    reads before it while labelling the node (of those its module names) whose label holds a whole number
    (TPU's ``TPU_WORKER_ID``, beside ``agent-worker-number``, as on a GKE TPU node) is set to another number
    than the server's, and the plugin's label must be the one Ray's manager, wired to the same simulated
    machine, gives (``invariant labels-as-ray-reads-them``); on every fixture as recorded, each label that wired
    manager gives and the plugin gives too must hold Ray's value (``invariant labels-as-ray-gives-them``: TPU's pod
    type ``v5litepod-8``, not Cloud's ``v5e-8``). Where that wired manager answers the node's
    accelerator type (Neuron's ``aws-neuron-core``, TPU's from the metadata server; NVML, amdsmi and hl-smi are
    not wired, so no answer), the family's type must be it on each fixture, and again with each device's product
    name and PCI device id written as a product's the catalog cannot list yet (``invariant
    accelerator-type-as-ray-answers-it``: Ray adds ``accelerator_type:<its type>`` itself); where the manager
    names the node from a runtime the suite stands in (HPU's ``"Intel-"`` and the runtime's device name), the type
    must be a name in the frame Ray writes. Each resource that
    wired manager adds to the node itself (TPU's slice name and ``TPU-<pod type>-head``) the plugin offers at
    Ray's quantity, if at all, and none it adds on another host of the group alone, asked again with each variable
    it read set to 0 and 1 (``invariant resources-as-ray-adds-them``: TPU's head resource on worker 0 only). Fix:
    read the setting with Ray's own rule, each label from the source Ray reads first, give each device the units
    Ray's manager numbers for it, the family the type Ray's manager answers, catalogued SKU or not, and each
    resource Ray adds where and as Ray adds it.
    """
    family = subject.family()
    var = family.visible_devices_env_var
    manager = _ray_validator(family.resource_name, var)
    if manager is None:
        raise NotApplicable(f"Ray has no manager of its own for {family.resource_name} with {var}: nothing to agree "
                            "with")
    fx = subject.fixture(fixture)
    base = subject.inventory(fixture).family(family.name)
    if base is None or not base.devices:
        raise NotApplicable(f"{fx.ref}: no devices")
    wrong = disagreements(subject, manager, var, base, f"{fx.ref}, Ray's settings unset")
    # The companions, like Ray's settings below, on the first fixture only: the plugin's rule is the same everywhere.
    if not subject.__dict__.setdefault("_ray_companions_tried", False):
        subject.__dict__["_ray_companions_tried"] = True
        wrong += companion_disagreements(subject, manager, var, fx)
    wrong += labels_as_ray_gives_them(manager, fx, base)
    wrong += labels_read_first(subject, manager, fx)
    wrong += type_disagreements(subject, manager, fx, base)
    wrong += resource_disagreements(manager, fx, base)
    unset = answers(subject, var, base)
    # Each setting is varied on the first fixture only (as RAC265 does): the plugin's rule for it is the same on
    # every machine, and a build per value and fixture is the check's whole cost.
    tried_before: set[str] = subject.__dict__.setdefault("_ray_settings_tried", set())
    settings = [name for name in settings_read(manager, var) if name not in tried_before]
    tried_before.update(settings)
    healthy = simulated_host(fx.model_copy(update={"faults": []}))
    tried = []
    for name in settings:
        for value in SETTING_VALUES:
            with process_env_var(name) as set_var:
                set_var(value)
                accepted = ray_accepts(manager, var)
                built = subject.build(healthy)
                fam = built.family(family.name)
                said = [p for p in subject.plugin_problems(built, severities=("error", "warning")) if name in p.message]
                where = f"{fx.ref} with {name}={value}"
                if accepted and said:
                    wrong.append(f"invariant ray-setting-taken-as-ray-takes-it, {where}: Ray's {manager.__name__} "
                                 f"takes it, yet the plugin says: {said[0].message}")
                elif accepted and fam is not None:
                    wrong += disagreements(subject, manager, var, fam, where)
                elif not accepted:
                    units = sorted(u for d in (fam.devices if fam else []) for u in d.unit_ids)
                    plain = sorted(u for d in base.devices for u in d.unit_ids)
                    if not said:
                        wrong.append(f"invariant refused-setting-not-used, {where}: Ray's {manager.__name__} refuses "
                                     "it and the plugin reports no warning or error naming it")
                    elif units != plain:
                        wrong.append(f"invariant refused-setting-not-used, {where}: the plugin names it malformed "
                                     f"({said[0].message}) but numbers the units {units[:8]}, not {plain[:8]} as "
                                     "without it")
                    elif (now := answers(subject, var, base)) != unset:
                        (given, set_as, read_as), (_, was, was_read) = next(
                            (a, b) for a, b in zip(now, unset, strict=True) if a != b)
                        wrong.append(f"invariant refused-setting-not-used, {where}: the plugin names it malformed "
                                     f"but sets units {given} as {var}={set_as!r} and reads it as {read_as}, not "
                                     f"{was!r} and {was_read} as without it")
            tried.append(f"{name}={value}")
    if wrong:
        raise CheckFailed(wrong[:6])
    return (f"{fx.ref}: {var} as Ray's {manager.__name__} writes and reads it, for {len(unit_sets(base))} unit "
            "lists" + (f", with {', '.join(tried)}" if tried else
                       " (Ray's settings unset; any its manager reads were varied on an earlier fixture)"))
