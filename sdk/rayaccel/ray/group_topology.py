"""A placement group as the GCS holds it: its bundles, its ``topology_strategy`` and the domain Ray assigned it.

``ray.util.placement_group_table`` leaves the topology out (Ray 2.60 has it only in the GCS's table data and the
state API, which needs the dashboard), so this reads the table data itself: one GCS call. Light to import: a
worker reads it for the first task of each placement group it runs.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class GroupTable:
    """What the GCS says of one placement group."""

    #: Each bundle's resources, by bundle index.
    bundles: list[dict[str, float]] = field(default_factory=list)
    #: ``topology_strategy``: label -> strategy name (``{"ray.io/gpu-domain": "STRICT_PACK"}``); empty: none.
    strategy: dict[str, str] = field(default_factory=dict)
    #: The label values Ray chose for the group (``{"ray.io/gpu-domain": "<domain id>"}``); empty until placed.
    assignments: dict[str, str] = field(default_factory=dict)
    #: Each bundle's label selector as (key, operator, values) constraints, operator ``in`` or ``!in``.
    selectors: list[list[tuple[str, str, tuple[str, ...]]]] = field(default_factory=list)

    def selects(self, labels: Mapping[str, str]) -> bool:
        """Whether a node with these labels may hold some bundle of the group."""
        return not self.selectors or any(
            all((labels.get(key) in values) == (op == "in") for key, op, values in selector)
            for selector in self.selectors)


def group_table(group_id: Any) -> GroupTable:
    """The GCS's table data of a placement group (``ray.PlacementGroupID`` or ``PlacementGroup``); an empty
    one for a group the GCS does not know. Needs a connected Ray."""
    import importlib

    import ray._private.state

    common: Any = importlib.import_module("ray.core.generated.common_pb2")  # generated: no stubs
    gcs: Any = importlib.import_module("ray.core.generated.gcs_pb2")

    group_id = getattr(group_id, "id", group_id)  # a PlacementGroup holds its id
    accessor = ray._private.state.state._connect_and_get_accessor()
    raw = accessor.get_placement_group_info(group_id)
    if raw is None:
        return GroupTable()
    data = gcs.PlacementGroupTableData.FromString(raw)
    ordered = sorted(data.bundles, key=lambda b: b.bundle_id.bundle_index)
    bundles = [{str(k): float(v) for k, v in b.unit_resources.items()} for b in ordered]
    selectors = [[constraint(str(k), str(v)) for k, v in b.label_selector.items()] for b in ordered]
    strategy = {str(k): str(common.PlacementStrategy.Name(v)) for k, v in data.topology_strategy.items()}
    return GroupTable(bundles=bundles, strategy=strategy, selectors=selectors,
                      assignments={str(k): str(v) for k, v in data.topology_assignments.items()})


def constraint(key: str, value: str) -> tuple[str, str, tuple[str, ...]]:
    """One label selector entry in Ray's syntax (``v``, ``!v``, ``in(a,b)``, ``!in(a,b)``) as a constraint."""
    negated = value.startswith("!")
    body = value[1:] if negated else value
    if body.startswith("in(") and body.endswith(")"):
        values = tuple(v.strip() for v in body[3:-1].split(",") if v.strip())
    else:
        values = (body,)
    return key, "!in" if negated else "in", values
