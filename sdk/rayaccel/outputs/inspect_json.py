"""The JSON ``rayaccel inspect --json`` prints, as records: :meth:`InspectOutput.of` an inventory.

The shipped ``inventory.schema.json`` is generated from :class:`InspectOutput`: it describes what tools
read, a node's inventory flattened across families (each device, link, domain, health report and metric
names its family), not the in-memory :class:`~rayaccel.records.NodeInventory`. A test validates the
output for every shipped fixture against the schema.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from rayaccel.records import (
    Affinity,
    Device,
    Domain,
    FamilyDeclaration,
    HealthDecision,
    HealthReport,
    Link,
    MetricSample,
    NodeInventory,
    Problem,
    Record,
)


class InspectFamily(FamilyDeclaration):
    """A family's declaration with what the node found of it."""

    plugin: str
    device_count: int = Field(ge=0)
    accelerator_type: str | None
    sku_known: bool
    resources: dict[str, float]
    schedulable_units: list[str] = Field(description="Unit ids of healthy devices, best-connected first")
    partition_units: dict[str, list[str]] = Field(
        default_factory=dict, description="The Ray resource of each partition profile (e.g. 'GPU_MIG_1g.10gb') "
        "-> the ids of its partitions that take work; the partitions themselves are in their device's "
        "'partitions'")


class InspectDevice(Device):
    family: str


class InspectLink(Link):
    family: str


class InspectDomain(Domain):
    family: str


class InspectHealth(HealthReport):
    family: str


class InspectMetric(MetricSample):
    family: str


class InspectDecision(HealthDecision):
    family: str


class InspectPolicy(Record):
    """The operator's health policy and what it did on this node."""

    file: str
    decisions: list[InspectDecision]


class InspectTopology(Record):
    links: list[InspectLink]
    affinities: list[Affinity]
    domains: list[InspectDomain]


class InspectOutput(Record):
    """What ``rayaccel inspect --json`` prints: one node's inventory, families flattened."""

    host: str
    simulated: bool
    families: list[InspectFamily]
    devices: list[InspectDevice]
    topology: InspectTopology
    health: list[InspectHealth]
    metrics: list[InspectMetric]
    resources: dict[str, float]
    labels: dict[str, str]
    problems: list[Problem]
    health_policy: InspectPolicy | None = Field(
        None, description="The operator's health policy (RAYACCEL_HEALTH_POLICY) and what it did to each reason "
        "reported; null without one")

    @staticmethod
    def models() -> tuple[type[Record], ...]:
        """The records :meth:`of` makes (a caller may build their validators ahead: each is built at first use)."""
        return (InspectFamily, InspectDevice, InspectLink, InspectDomain, InspectHealth, InspectMetric, InspectTopology,
                InspectDecision, InspectPolicy, InspectOutput)

    @classmethod
    def of(cls, inventory: NodeInventory, policy_file: str | None = None) -> InspectOutput:
        """The output for one node's inventory: each device, link, domain, report and metric names its family.
        ``policy_file``: the health policy the inventory was built with."""
        families = inventory.families

        def tagged(kind: type[Record], family: str, record: Record) -> Any:
            return kind.model_validate({**dict(record), "family": family})

        return cls(
            host=inventory.host,
            simulated=inventory.simulated,
            families=[InspectFamily.model_validate({
                **dict(f.family), "plugin": f.plugin, "device_count": len(f.devices),
                "accelerator_type": f.accelerator_type, "sku_known": f.sku_known, "resources": f.resources,
                "schedulable_units": f.schedulable_units, "partition_units": f.partition_units})
                      for f in families],
            devices=[tagged(InspectDevice, f.family.name, d) for f in families for d in f.devices],
            topology=InspectTopology(
                links=[tagged(InspectLink, f.family.name, ln) for f in families for ln in f.topology.links],
                affinities=[a for f in families for a in f.topology.affinities],
                domains=[tagged(InspectDomain, f.family.name, d) for f in families for d in f.topology.domains]),
            health=[tagged(InspectHealth, f.family.name, h) for f in families for h in f.health],
            metrics=[tagged(InspectMetric, f.family.name, m) for f in families for m in f.metrics],
            resources=inventory.resources,
            labels=inventory.labels,
            problems=inventory.problems,
            health_policy=None if policy_file is None else InspectPolicy(file=policy_file, decisions=[
                tagged(InspectDecision, f.family.name, d) for f in families for d in f.decisions]),
        )

    def to_json(self) -> dict[str, Any]:
        return self.model_dump(mode="json")
