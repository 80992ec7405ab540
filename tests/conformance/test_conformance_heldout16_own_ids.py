"""Held-out grading, round 16 (issue 46, lane J5): a device's own id in the visible-devices variable names that
device (``invariant an-id-names-its-device``, RAC114).

The python-library bake ``l2`` read a UUID entry's last group as hex (``WESTER-...-0002`` -> ``'2'``); its fixture's
ids end in their index, so RAC114's ``an-entry-is-kept-or-refused``, handing the parser each device's own id, got the
right unit and it survived ``supported``. A UUID is assigned to the device, not its place: RAC114 now moves the
devices' ids among them at the host seam and asks each device's own id again. Both corpus shapes and l2's edit on the
NVIDIA and AMD plugins are named; the plugins as shipped pass, and so does a parser placing the id by the node's own
devices as its latest discovery found them.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from mutant_grading import evidence, failure, mutant, wrapped

import rayaccel_amd.plugin
import rayaccel_nvidia.plugin
from rayaccel_conformance.checks.own_ids import moved_ids_host
from rayaccel_conformance.registry import CHECKS, CheckFailed
from rayaccel_testplugins.corpus import Healthy
from rayaccel_testplugins.corpus_own_ids import VisibleIdsFromFirstNode, VisibleUnitFromIdDigits

INVARIANT = "invariant an-id-names-its-device"


@pytest.mark.parametrize("shape", [VisibleUnitFromIdDigits, VisibleIdsFromFirstNode])
def test_an_id_placed_by_anything_but_its_device_is_named(shape: type[Healthy]) -> None:
    message = failure(mutant(shape), "RAC114", "acme-4")
    assert INVARIANT in message and "ids moved to the next device at the host seam" in message, message
    assert "device 0's own id, parses as ['1']" in message and "000000000002's" in message, message


def last_group_as_hex(value: str) -> list[str]:
    """l2's edit: "the runtime takes a device's index or its UUID, whose last group is the index in hex"."""
    entries = [e.strip() for e in value.split(",") if e.strip()]
    return [str(int(e.rsplit("-", 1)[1], 16)) if re.fullmatch(r".+-[0-9a-fA-F]+", e) else e for e in entries]


REFERENCE = [(rayaccel_nvidia.plugin, "nvidia", "dgx-h100"), (rayaccel_amd.plugin, "amd", "mi300x-8")]


@pytest.mark.parametrize(("module", "family", "fixture"), REFERENCE)
def test_l2s_edit_on_a_reference_plugin_is_named(module: Any, family: str, fixture: str) -> None:
    subject = wrapped(module, family, str(Path(module.__file__).parent), rayaccel_parse_visible=last_group_as_hex)
    with pytest.raises(CheckFailed) as failed:
        CHECKS["RAC114"].function(subject, f"{family}/{fixture}")
    said = str(failed.value)
    assert INVARIANT in said and "own id, parses as" in said, said


@pytest.mark.parametrize(("module", "family", "fixture"), REFERENCE)
def test_the_reference_plugins_as_shipped_pass_with_their_ids_moved(module: Any, family: str, fixture: str) -> None:
    subject = wrapped(module, family, str(Path(module.__file__).parent))
    ref = f"{family}/{fixture}"
    shipped = subject.inventory(ref).family(family)
    assert shipped is not None
    moved = moved_ids_host(subject.fixture(ref), shipped.devices)
    assert moved is not None  # the host states the ids, so the check moves them
    assert "round trip" in str(CHECKS["RAC114"].function(subject, ref))


def test_the_corpus_control_passes() -> None:
    from rayaccel_testplugins import corpus

    assert "round trip" in evidence(corpus.PLUGINS["c-healthy"], "RAC114", "acme-4")
