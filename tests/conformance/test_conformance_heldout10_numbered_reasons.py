"""Held-out grading, round 10 (issue 46, lane Ya): a reason whose code carries an event's number fires for every
number its table declares (``invariant a-numbered-reason-is-read-by-its-number``, RAC264).

The NVIDIA wrapper ``n1`` added XID 94 to the application XIDs it ignores while its table still declares ``xid-94``
unhealthy and fatal; only ``nvidia/dgx-h100``'s fault ``xid-94`` caught it, through its ``expected:``, which a vendor
edits with the code. The number a fault fires ``xid-79`` by, set to 94, must fire ``xid-94`` as declared. Two corpus
shapes (an ignore-list holding a declared code, a lookup keyed by the wrong number) and the NVIDIA plugin with n1's
one edit, its fixture's expectation edited to the defect's answer, are named; the right readers pass.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from mutant_grading import evidence, failure, mutant, wrapped

import rayaccel_nvidia.health
import rayaccel_nvidia.plugin
from rayaccel_conformance.registry import CHECKS, CheckFailed
from rayaccel_testplugins.corpus_numbered_reasons import (
    EventIgnoredThoughDeclared,
    EventLookupDigitsSwapped,
    EventsAsDeclared,
)

CARD2 = "ACME-0002-5e1f-4c2a-9d3b-000000000002"
NVIDIA = Path(rayaccel_nvidia.plugin.__file__).parent


@pytest.mark.parametrize(("shape", "where", "other", "state"), [
    (EventIgnoredThoughDeclared, "file /sys/class/acme/acme2/last_event", 23, "degraded"),
    (EventLookupDigitsSwapped, "`acme-smi events --json` output events.0.code", 31, "unhealthy")],
    ids=["sysfs-ignore-list", "json-lookup"])
def test_a_declared_event_number_the_plugin_does_not_read_as_declared_is_named(
        shape: type[EventIgnoredThoughDeclared], where: str, other: int, state: str) -> None:
    text = failure(mutant(shape), "RAC264", "acme-4")
    assert (f"invariant a-numbered-reason-is-read-by-its-number, {mutant(shape).name}/acme-4 under fault event-17 "
            f"with {where} set from 17 to {other} (the number 'event-17' fires on {CARD2} by): reason "
            f"'event-{other}' is declared ") in text, text
    assert f"({state}), and {CARD2} is healthy (no reason): the plugin does not read {other} as its table" in text


def test_a_plugin_reading_every_declared_event_passes() -> None:
    evidence(EventsAsDeclared("c-events-as-declared"), "RAC264", "acme-4")


@pytest.fixture
def xid_94_ignored(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """n1's one edit: XID 94 among the application XIDs, the table untouched."""
    monkeypatch.setattr(rayaccel_nvidia.health, "APPLICATION_XIDS", rayaccel_nvidia.health.APPLICATION_XIDS | {94})
    yield


def expectation_edited(tmp_path: Path) -> str:
    """A package directory whose fixtures/ holds nvidia/dgx-h100 with fault xid-94's expectation edited to what n1
    answers (GPU 4 healthy, nothing drained), as a vendor edits it with the code."""
    data = yaml.safe_load((NVIDIA / "fixtures" / "dgx-h100.yaml").read_text(encoding="utf-8"))
    fault = next(f for f in data["faults"] if f["name"] == "xid-94")
    fault["expected"] = {"health": {}, "resources": dict(data["expected"]["resources"]), "fatal": False}
    (tmp_path / "fixtures").mkdir()
    (tmp_path / "fixtures" / "dgx-h100.yaml").write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    for beside in ("skus.yaml", "instance-types.yaml"):  # what the fixtures' SKUs resolve against
        (tmp_path / beside).write_text((NVIDIA / beside).read_text(encoding="utf-8"), encoding="utf-8")
    return str(tmp_path)


def test_nvidia_with_xid_94_taken_for_an_application_error_is_named(xid_94_ignored: None, tmp_path: Path) -> None:
    subject = wrapped(rayaccel_nvidia.plugin, "nvidia", expectation_edited(tmp_path))
    with pytest.raises(CheckFailed) as failed:
        CHECKS["RAC264"].function(subject, "nvidia/dgx-h100")
    assert ("invariant a-numbered-reason-is-read-by-its-number, nvidia/dgx-h100 under fault xid-79 with library nvml "
            "events.0.xid set from 79 to 94") in str(failed.value), failed.value
    assert "reason 'xid-94' is declared 'XID 94: contained ECC error" in str(failed.value), failed.value


def test_the_nvidia_plugin_passes() -> None:
    subject = wrapped(rayaccel_nvidia.plugin, "nvidia", str(NVIDIA))
    assert "xid-" in str(CHECKS["RAC264"].function(subject, "nvidia/dgx-h100"))
