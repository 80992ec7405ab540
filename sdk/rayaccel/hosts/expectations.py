"""What a fixture says the SDK must make of its host, and the one differ that checks an inventory against it.

The fixture tests, ``rayaccel sku add`` (before it writes a derived fixture) and the conformance suite (RAC104,
RAC201, RAC203) all compare through :func:`expectation_differences`, so a fixture passes or fails the same
way everywhere.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal, Protocol

from pydantic import Field

from rayaccel.cpus import CpuListError, parse_cpu_list
from rayaccel.records import AttributeValue, Device, HealthState, NodeInventory, Record

#: The runtime numbers its units (NEURON_RT_VISIBLE_CORES' logical cores, ...) whichever tool the plugin read them
#: from: a fallback path must give the ids the vendor's own tool lists on the same machine.
UNITS_DESCRIPTION = ("Device id -> the unit ids it provides (Device.units, as the vendor's runtime numbers them); "
                     "in order")

#: Opt-in, exact where stated: what a mutant of a plugin changes without changing counts or health (issue 46).
DEVICE_FIELDS_DESCRIPTION = ("Device id -> Device field (pci_device_id, numa_node, ...) or attribute (serial, "
                             "device_file, ...), partition_capacity.<field> (compute_slices, memory_slices) or "
                             "partition.<partition id>.<field or attribute> -> the value the machine gives; only "
                             "the names stated are compared")
#: Opt-in, where stated: a problem's code alone lets a plugin call every problem an error, or none (issue 46).
SEVERITIES_DESCRIPTION = ("Problem code -> the severity it must be reported with (info, warning or error), where "
                          "the severity is part of the behaviour (an error for what blinds the plugin, a warning for "
                          "what it works around, info for what changes nothing); only the codes stated are compared")
METRIC_VALUES_DESCRIPTION = ("Device id -> standard metric name -> the value the machine reads, in the metric's "
                             "standard unit (bytes, watts, ...; compared within 1%)")


#: A severity a fixture may require of a problem (info too: a fault's problem_codes name info problems).
ProblemSeverity = Literal["info", "warning", "error"]


class DomainExpectation(Record):
    """A topology domain's figures, each compared where stated."""

    size: int | None = Field(None, ge=1, description="Devices (or hosts, for slices) in the whole domain")
    hosts: int | None = Field(None, ge=1, description="Hosts in the whole domain")
    host_index: int | None = Field(None, ge=0, description="This host's place in the domain")


class LinkExpectation(Record):
    """One link of the topology, by its two ends (either order), and its parallel lanes."""

    a: str = Field(min_length=1, description="Device id of one end")
    b: str = Field(min_length=1, description="Device id of the other end")
    lanes: int = Field(ge=1, description="Parallel links of its kind between the two (Link.lanes)")


class Expected(Record):
    """What the SDK must make of the host."""

    devices: int = Field(ge=0)
    device_ids: list[str] = Field(default_factory=list)
    accelerator_type: str | None = None
    resources: dict[str, float] = Field(default_factory=dict)
    labels: dict[str, str] = Field(default_factory=dict)
    health: dict[str, HealthState] = Field(default_factory=dict,
                                           description="Device id -> state; unlisted devices are healthy")
    skus: dict[str, str] = Field(default_factory=dict, description="Device id -> SKU id")
    links: int | None = Field(None, ge=0, description="Number of links in the topology")
    affinities: dict[str, str] = Field(
        default_factory=dict, description="Device id -> the CPUs the vendor interface gives as its affinity, as a "
                                          "Linux CPU list ('0-55,112-167'); compared as sets of CPUs")
    units: dict[str, list[str]] = Field(default_factory=dict, description=UNITS_DESCRIPTION)
    metrics: list[str] = Field(default_factory=list,
                               description="Metric names every device reports (the vendor interface offers them)")
    metric_values: dict[str, dict[str, float]] = Field(default_factory=dict, description=METRIC_VALUES_DESCRIPTION)
    device_fields: dict[str, dict[str, AttributeValue]] = Field(default_factory=dict,
                                                                description=DEVICE_FIELDS_DESCRIPTION)
    domains: dict[str, DomainExpectation] = Field(default_factory=dict,
                                                  description="Domain id -> its size, hosts, host index where stated")
    link_lanes: list[LinkExpectation] = Field(default_factory=list,
                                              description="Links whose lanes are stated: each must be there with them")
    problems: list[str] = Field(
        default_factory=list, description="Problem codes (warnings, errors) a healthy build of this machine "
                                          "legitimately reports (a fallback it must take); any other is a defect")
    problem_severities: dict[str, ProblemSeverity] = Field(default_factory=dict, description=SEVERITIES_DESCRIPTION)


class FaultExpectation(Record):
    health: dict[str, HealthState] = Field(default_factory=dict)
    units: dict[str, list[str]] = Field(default_factory=dict, description=UNITS_DESCRIPTION)
    resources: dict[str, float] | None = None
    devices: int | None = Field(None, ge=0)
    fatal: bool | None = Field(None, description="Whether some reason is fatal (the node is drained)")
    problem_codes: list[str] = Field(default_factory=list)
    problem_severities: dict[str, ProblemSeverity] = Field(default_factory=dict, description=SEVERITIES_DESCRIPTION)
    reasons: dict[str, list[str]] = Field(
        default_factory=dict, description="Device id -> health reason codes it must report (among others)")
    problems_exactly: bool = Field(False, description="The warnings and errors reported are problem_codes' and no "
                                                      "other (a state the plugin must take without complaint)")
    metric_values: dict[str, dict[str, float]] = Field(default_factory=dict, description=METRIC_VALUES_DESCRIPTION)
    device_fields: dict[str, dict[str, AttributeValue]] = Field(default_factory=dict,
                                                                description=DEVICE_FIELDS_DESCRIPTION)
    domains: dict[str, DomainExpectation] = Field(default_factory=dict,
                                                  description="Domain id -> its size, hosts, host index where stated")
    link_lanes: list[LinkExpectation] = Field(default_factory=list,
                                              description="Links whose lanes are stated: each must be there with them")


#: What an ``unknown`` without a reason most often is: the SDK's stand-in for a device the health hook left out.
NO_REPORT = (" with no reason (what the SDK counts a device as when rayaccel_health gives no report for it: report "
             "every device given, healthy ones too)")


def expectation_differences(inventory: NodeInventory, plugin: str,
                            expected: Expected | FaultExpectation) -> list[str]:
    """Differences between an inventory and what ``plugin``'s fixture expects of it (healthy, or under a
    fault), one sentence each; empty when they agree.

    A healthy expectation states every device (unlisted ones must be healthy) and what it leaves empty is not
    checked; a fault's expectation checks only what it states.
    """
    family = next((f for f in inventory.families if f.plugin == plugin), None)
    devices = family.devices if family else []
    states = {h.device: h.state for h in family.health} if family else {}
    reasons = {h.device: h.reasons for h in family.health} if family else {}
    diffs: list[str] = []
    if expected.devices is not None and len(devices) != expected.devices:
        diffs.append(f"devices: expected {expected.devices}, discovered {len(devices)}")
    if isinstance(expected, Expected):
        ids = [d.id for d in devices]
        if expected.device_ids and sorted(ids) == sorted(expected.device_ids) and ids != expected.device_ids:
            at = next(k for k, (got, want) in enumerate(zip(ids, expected.device_ids, strict=True)) if got != want)
            diffs.append(f"device ids: the same devices in another order: index {devices[at].index} is {ids[at]} "
                         f"here, {expected.device_ids[at]} in the fixture (a listing sorted as text puts 10 before "
                         "2: number each device by its own index, sort numerically)")
        elif expected.device_ids and ids != expected.device_ids:
            diffs.append(f"device ids: expected {expected.device_ids}, discovered {ids}")
        got_type = family.accelerator_type if family else None
        if expected.accelerator_type is not None and got_type != expected.accelerator_type:
            diffs.append(f"accelerator type: expected {expected.accelerator_type!r}, got {got_type!r}")
    resources = (expected.resources or None) if isinstance(expected, Expected) else expected.resources
    if resources is not None and inventory.resources != resources:
        diffs.append(f"resources: expected {resources}, got {inventory.resources}")
    units = {d.id: d.unit_ids for d in devices}
    index_units = {d.id for d in devices if d.unit_ids == [str(d.index)]}
    unlike = [device_id for device_id, want in expected.units.items() if units.get(device_id) != want]
    # Every device numbered by its listing index where the runtime's variable takes another id (a module, a slot).
    by_index = (": the device's index, not the id the runtime's visible-devices variable takes"
                if unlike and set(unlike) <= index_units else "")
    diffs += [f"units of {device_id}: expected {expected.units[device_id]}, got "
              f"{units.get(device_id, 'absent (no such device)')}{by_index}" for device_id in unlike]
    diffs += stated_differences(inventory, plugin, expected)
    if isinstance(expected, Expected) and expected.labels:
        diffs += map_differences("label", expected.labels, inventory.labels, exact=True)
    wanted = ({d.id: expected.health.get(d.id, "healthy") for d in devices} if isinstance(expected, Expected)
              else dict(expected.health))
    for device_id, want in wanted.items():
        got = states.get(device_id)
        if got != want and not (got is None and want == "unhealthy" and expected.devices is not None):
            # (a device expected unhealthy that is gone altogether is lost: the device count says so)
            diffs.append(f"health of {device_id}: expected {want}, got {got or 'absent'}"
                         + (NO_REPORT if got == "unknown" and not reasons.get(device_id) else ""))
    if isinstance(expected, Expected):
        diffs += _topology_differences(inventory, plugin, expected)
        diffs += healthy_problem_differences(inventory, plugin, expected.problems)
    else:
        diffs += _fault_only_differences(inventory, plugin, expected)
    diffs += severity_differences(inventory, plugin, expected.problem_severities)
    return diffs


def severity_differences(inventory: NodeInventory, plugin: str, expected: Mapping[str, str]) -> list[str]:
    """Each stated problem reported with the severity stated, every time it is reported (a problem not reported
    at all is named once: as expected.problems or problem_codes say, or here where only its severity is stated)."""
    diffs = []
    for code, want in expected.items():
        got = sorted({p.severity for p in inventory.problems if p.plugin == plugin and p.code == code})
        if not got:
            diffs.append(f"problem {code}: expected as {want} (expected.problem_severities), not reported")
        elif got != [want]:
            diffs.append(f"problem {code}: expected as {want} (expected.problem_severities), reported as "
                         f"{' and '.join(got)}")
    return diffs


def _topology_differences(inventory: NodeInventory, plugin: str, expected: Expected) -> list[str]:
    family = next((f for f in inventory.families if f.plugin == plugin), None)
    if family is None:
        return []
    diffs = []
    skus = {d.id: d.sku for d in family.devices}
    for device_id, sku in expected.skus.items():
        if skus.get(device_id) != sku:
            diffs.append(f"SKU of {device_id}: expected {sku}, got {skus.get(device_id)}")
    if expected.links is not None and len(family.topology.links) != expected.links:
        diffs.append(f"links: expected {expected.links}, got {len(family.topology.links)}")
    cpus_of = {af.device: af.cpus for af in family.topology.affinities}
    for device_id, want in expected.affinities.items():
        got = cpus_of.get(device_id)
        if got is None or _cpu_set(got) != _cpu_set(want):
            diffs.append(f"CPU affinity of {device_id}: expected {want}, got {got or 'none'}"
                         + _affinity_hint(want, got))
    return diffs


def _cpu_set(cpus: str) -> frozenset[int] | None:
    """A Linux CPU list ('0-3,8') as its CPUs; None when it is not one."""
    try:
        return parse_cpu_list(cpus)
    except CpuListError:
        return None


def _affinity_hint(want: str, got: str | None) -> str:
    # A CPU mask is an array of unsigned long words (cpu_set_t, NVML's nvmlDeviceGetCpuAffinity, hwloc): 64 bits
    # each on 64-bit Linux. Read as 32-bit words, CPU 64*w + b lands at 32*w + b: name that, not only the lists.
    wanted = _cpu_set(want)
    if got is None or wanted is None or max(wanted, default=0) < 64:
        return ""
    if _cpu_set(got) == frozenset(cpu // 64 * 32 + cpu % 64 for cpu in wanted):
        return (" (CPU 64*w+b read as 32*w+b: the affinity mask's words were taken as 32-bit; they are unsigned "
                "long, 64 bits each on 64-bit Linux)")
    return ""


def reported_problem_codes(inventory: NodeInventory, plugin: str) -> list[str]:
    """The codes of ``plugin``'s warnings and errors in an inventory (info is not a problem to expect)."""
    return sorted({p.code for p in inventory.problems if p.plugin == plugin and p.severity != "info"})


def healthy_problem_differences(inventory: NodeInventory, plugin: str, expected: list[str]) -> list[str]:
    """A healthy machine's build reports exactly the problems its fixture expects: a warning on every poll
    (health data called missing where the machine has it) is a defect, a fallback the machine forces is not."""
    problems = [p for p in inventory.problems if p.plugin == plugin and p.severity != "info"]
    diffs = [f"problem {p.code} ({p.severity}{' in ' + p.hook if p.hook else ''}: {p.message}) on a healthy "
             "build, which the fixture does not expect (expected.problems)"
             for p in problems if p.code not in expected]
    reported = {p.code for p in problems}
    diffs += [f"problem {code}: expected on a healthy build (expected.problems), not reported"
              for code in expected if code not in reported]
    return diffs


def _fault_only_differences(inventory: NodeInventory, plugin: str, expected: FaultExpectation) -> list[str]:
    family = next((f for f in inventory.families if f.plugin == plugin), None)
    diffs = []
    if expected.fatal is not None:
        fatal = any(r.fatal for h in (family.health if family else []) for r in h.reasons)
        if fatal != expected.fatal:
            diffs.append(f"fatal: expected {expected.fatal}, got {fatal}")
    # The reason code is what a health monitor and an operator act on: "some fault" with the wrong code is wrong.
    reported = {h.device: [r.code for r in h.reasons] for h in (family.health if family else [])}
    for device_id, want in expected.reasons.items():
        if device_id not in reported and expected.devices is not None:
            continue  # lost: its reasons are what a monitor polling the devices it knew sees (conformance RAC210)
        lacking = [c for c in want if c not in reported.get(device_id, [])]
        if lacking:
            diffs.append(f"health reasons of {device_id}: expected {lacking}, "
                         f"got {reported.get(device_id) or ('none' if device_id in reported else 'no report')}")
    codes = {p.code for p in inventory.problems if p.plugin == plugin}
    missing = [c for c in expected.problem_codes if c not in codes]
    if missing:
        diffs.append(f"problems: expected {missing}, got {sorted(codes) or 'none'}")
    if expected.problems_exactly:
        diffs += [f"problem {p.code} ({p.severity}: {p.message}), which the fault does not expect (its expected "
                  "states problems_exactly: the problems are problem_codes' and no other)"
                  for p in inventory.problems
                  if p.plugin == plugin and p.severity != "info" and p.code not in expected.problem_codes]
    return diffs


def device_field(device: Device, name: str) -> AttributeValue | None:
    """A device's field (``pci_device_id``) or, for a name that is no field, its attribute (``serial``); its
    ``partition_capacity.compute_slices``; ``partition.<id>.<name>``: its partition's field (``compute_slices``)
    or attribute (``device_file``). None where the device has no such thing."""
    if name.startswith("partition_capacity."):
        capacity = device.partition_capacity
        return _scalar(getattr(capacity, name.split(".", 1)[1], None)) if capacity else None
    if name.startswith("partition."):
        # The partition id may hold dots (a MIG instance's 'MIG-<uuid>' does not, an AMD HIP id does not): the
        # field is after the last one.
        partition_id, _, field = name.split(".", 1)[1].rpartition(".")
        partition = next((p for p in device.partitions if p.id == partition_id), None)
        if partition is None:
            return None
        if field in type(partition).model_fields and field != "attributes":
            return _scalar(getattr(partition, field))
        return partition.attributes.get(field)
    if name in Device.model_fields and name not in ("attributes", "units", "partitions", "partition_capacity"):
        return _scalar(getattr(device, name))
    return device.attributes.get(name)


def _scalar(value: object) -> AttributeValue | None:
    return value if isinstance(value, str | int | float | bool) else None


def stated_differences(inventory: NodeInventory, plugin: str, expected: Expected | FaultExpectation) -> list[str]:
    """The opt-in expectations (device fields, domains, link lanes): compared exactly where stated, nothing where
    not, so a fixture that states none of them means what it meant before they existed."""
    family = next((f for f in inventory.families if f.plugin == plugin), None)
    devices = {d.id: d for d in (family.devices if family else [])}
    diffs = []
    for device_id, fields in expected.device_fields.items():
        device = devices.get(device_id)
        if device is None:
            diffs.append(f"device fields of {device_id}: no such device (expected.device_fields)")
            continue
        diffs += [f"{name} of {device_id}: expected {want!r}, got {device_field(device, name)!r} "
                  "(expected.device_fields)" for name, want in fields.items() if device_field(device, name) != want]
    domains = {d.id: d for d in (family.topology.domains if family else [])}
    for domain_id, want_domain in expected.domains.items():
        domain = domains.get(domain_id)
        if domain is None:
            diffs.append(f"domain {domain_id}: expected, absent (got {sorted(domains) or 'none'})")
            continue
        diffs += [f"domain {domain_id}'s {name}: expected {value}, got {getattr(domain, name)}"
                  for name, value in want_domain.model_dump(exclude_none=True).items()
                  if getattr(domain, name) != value]
    lanes = {frozenset((link.a, link.b)): link.lanes for link in (family.topology.links if family else [])}
    for link in expected.link_lanes:
        got = lanes.get(frozenset((link.a, link.b)))
        if got != link.lanes:
            diffs.append(f"link {link.a} - {link.b}: expected {link.lanes} lanes, got "
                         f"{got if got is not None else 'no such link'} (expected.link_lanes)")
    return diffs


class Expecting(Protocol):
    """What the differ needs of a fixture (:class:`rayaccel.hosts.fixtures.Fixture`, which holds an
    :class:`Expected`: the fixture model is built on this module, not the other way round)."""

    @property
    def plugin(self) -> str: ...

    @property
    def expected(self) -> Expected: ...


def compare_expected(inventory: NodeInventory, fixture: Expecting, expected: Expected | None = None) -> list[str]:
    """Differences between an inventory and a fixture's (healthy) expectation, one sentence each."""
    return expectation_differences(inventory, fixture.plugin, expected or fixture.expected)


def map_differences(what: str, want: Mapping[str, str], got: Mapping[str, str], exact: bool) -> list[str]:
    """``want``'s entries that ``got`` lacks or differs in; with ``exact``, also ``got``'s extra keys."""
    diffs = [f"{what} {k}: expected {v!r}, got {got.get(k)!r}" for k, v in want.items() if got.get(k) != v]
    if exact:
        diffs += [f"{what} {k}={got[k]!r} is not expected" for k in sorted(set(got) - set(want))]
    return diffs
