"""The JSON ``rayaccel inspect --json`` prints (:meth:`NodeInventory.to_json_dict`), as records.

The shipped ``inventory.schema.json`` is generated from :class:`InspectOutput`: it describes what tools
read, a node's inventory flattened across families (each device, link, domain, health report and metric
names its family), not the in-memory :class:`~rayaccel.records.NodeInventory`. A test validates the
output for every shipped fixture against the schema.
"""

from __future__ import annotations

from pydantic import Field

from rayaccel.records import (
    Affinity,
    Device,
    Domain,
    FamilyDeclaration,
    HealthReport,
    Link,
    MetricSample,
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
