"""Held-out grading, round 11 (issue 46, lane Yc): an extra resource counts the healthy devices
``rayaccel_resources`` is given, never every device the host lists (``invariant resources-count-the-devices-given``,
RAC203).

The sysfs bake ``s3`` offered CULVERDEN_MEMORY_GIB summed over the driver's listing, so under fatal-2 the node offered
the unhealthy device's memory; only the fixture's ``expected.resources`` caught it, and with the expectation edited
to the code's answer it passed. Two corpus shapes whose fixtures expect what the code answers: memory summed over a
discovery run again, and streams counted per card from the driver's state files.
"""

from __future__ import annotations

import pytest
from mutant_grading import evidence, failure, mutant

from rayaccel_testplugins.corpus_offered_resources import (
    MemoryOfDevicesGiven,
    MemoryOfEveryListedCard,
    StreamsOfEveryPresentCard,
)

INVARIANT = "invariant resources-count-the-devices-given"
CARD3 = "ACME-0003-5e1f-4c2a-9d3b-000000000003"


@pytest.mark.parametrize(("shape", "resource", "lost", "listed"), [
    (MemoryOfEveryListedCard, "MEMORY_GIB", 192.0, 256.0), (StreamsOfEveryPresentCard, "STREAMS", 48.0, 64.0)])
def test_a_resource_counting_the_listed_devices_is_named(shape: type[MemoryOfEveryListedCard], resource: str,
                                                         lost: float, listed: float) -> None:
    plugin = mutant(shape)
    said = failure(plugin, "RAC203", "acme-4")
    name = f"{plugin.family.resource_name}_{resource}"
    assert (f"fault lost-3: rayaccel_resources gives {name} {lost!r} with {CARD3} gone from the host, but "
            f"{listed!r} with it on the host and not among the devices given") in said, said
    assert INVARIANT in said and "expected" not in said, said  # the fixture expects what the code answers


def test_a_resource_counting_the_devices_given_passes() -> None:
    right = MemoryOfDevicesGiven("c-memory-of-devices-given")
    assert "lost-3" in evidence(right, "RAC203", "acme-4")
