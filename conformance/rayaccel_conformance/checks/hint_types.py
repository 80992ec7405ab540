"""A cloud hint names the accelerator type its node publishes (``invariant a-hint-names-the-type-its-node-publishes``,
RAC209; issue 46, held-out round 12's ``s1``).

A hint is the autoscaler's node type before the node exists: its resources are the family's count and, where the hint
gives one, ``accelerator_type:<type>`` (rayaccel.inventory.cloud). Ray's own AWS node types carry that resource beside
the count wherever its accelerator manager knows the instance's type (ray/autoscaler/_private/aws/node_provider.py,
``fillout_available_node_types_resources``), because a task asking ``accelerator_type="X"`` asks for it: a node type
without it is never started for that task, while the node, once up, publishes it. So where every fixture's discovery
gives the family an accelerator type (every node of the family publishes one), a hint without one offers a node type
that differs from every node it starts.
"""

from __future__ import annotations

from collections.abc import Mapping

from rayaccel.records import CloudHint


def untyped_hint_problem(hint: CloudHint, resource_name: str, published: Mapping[str, str | None],
                         catalog_types: set[str], where: str) -> str | None:
    """What a hint without an accelerator type leaves out, where every fixture (``published``: fixture ref -> the
    accelerator type discovery gives the family there) publishes one; None when the hint names one, or some fixture
    publishes none (a family whose nodes may carry no type)."""
    if hint.accelerator_type is not None or not published or not all(published.values()):
        return None
    seen = sorted({str(t) for t in published.values()})
    # One type the family can be: the catalog's only SKU type, or the one every fixture publishes.
    only = seen if len(seen) == 1 else sorted(catalog_types) if len(catalog_types) == 1 else []
    missing = f"accelerator_type:{only[0]}" if only else "accelerator_type:<type>"
    fixtures = "its one fixture" if len(published) == 1 else f"each of its {len(published)} fixtures"
    return (f"invariant a-hint-names-the-type-its-node-publishes: {where} gives {hint.count:g} {resource_name} and no "
            f"accelerator type, but every node of the family publishes one (discovery gives one on {fixtures}: "
            f"{', '.join(seen)}): the autoscaler's node type lacks {missing}, which a task asking for "
            "that accelerator type needs, so it is never started from zero for that task, while the node, once up, "
            "publishes it (Ray's own AWS node types carry accelerator_type:<type> beside the count). Fix: give each "
            "instance type's hint the accelerator type discovery gives on it")
