"""The instance types a plugin lists are read (RAC222, ``invariant the-listing-is-readable``; issue 46, held-out
round 16's ``c3``).

``rayaccel export`` writes an autoscaler node type for each hint ``rayaccel_cloud_instance_types`` lists, and RAC222
round-trips each of them through ``rayaccel_cloud_hints``. A listing that raises, or whose records the SDK refuses
(a ``CloudHint`` under a provider the SDK does not know, such as the vendor's ``ec2`` for AWS), reads as no listing
at all: the SDK answers the hook's default, nothing is left to round-trip, and the plugin graded as if it listed
nothing, while ``rayaccel export`` leaves out every node type the vendor meant to write. The problems the SDK reports
for the call are the finding: each is named with the hook.
"""

from __future__ import annotations

from rayaccel.records import Problem

INVARIANT = "the-listing-is-readable"


def unread_listing_failures(problems: list[Problem]) -> list[str]:
    """The errors the SDK reported calling ``rayaccel_cloud_instance_types`` (it raised, or a record was refused),
    each as a failure; warnings are not the listing failing."""
    return [f"invariant {INVARIANT}: rayaccel_cloud_instance_types could not be read ({p.code}): {p.message}; "
            "rayaccel export writes no node type from what it cannot read, and no listed hint is checked against "
            "rayaccel_cloud_hints: build every hint as a valid CloudHint (its provider one the SDK knows, "
            "rayaccel.plugins.instance_types.Provider, whatever the vendor calls the cloud) and let the hook raise "
            "nothing"
            for p in problems if p.severity == "error"][:4]
