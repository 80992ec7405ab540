"""Held-out grading, round 15 (issue 46, lane J3): every entry of a visible-devices value is kept or refused, never
dropped while the rest is kept (``invariant an-entry-is-kept-or-refused``, RAC114).

The command-csv bake ``c1`` kept only the entries of FADA_VISIBLE_DEVICES that are numbers, so a device named by its
own id (its UUID, as CUDA_VISIBLE_DEVICES and HIP_VISIBLE_DEVICES take it) was dropped and ``rayaccel start`` offered
the rest without a word; RAC107 and RAC114 handed the parser only the plugin's own numeric unit ids, so it survived
``supported``. RAC114 now hands it the device's own id (alone and beside another device's unit) and garbage: both
corpus shapes and c1's edit on the NVIDIA and AMD plugins are named; the plugins as shipped pass, and so does a
parser that normalises the id to its unit or refuses the value with a problem.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from mutant_grading import evidence, failure, mutant, wrapped

import rayaccel_amd.plugin
import rayaccel_nvidia.plugin
from rayaccel import Device, Host, report_problem
from rayaccel_conformance.registry import CHECKS, CheckFailed
from rayaccel_testplugins.corpus import Healthy
from rayaccel_testplugins.corpus_kept_entries import VisibleSkipsUnreadEntries, VisibleStopsAtUnreadEntry

INVARIANT = "invariant an-entry-is-kept-or-refused"


@pytest.mark.parametrize("shape", [VisibleSkipsUnreadEntries, VisibleStopsAtUnreadEntry])
def test_an_entry_dropped_while_the_rest_is_kept_is_named(shape: type[Healthy]) -> None:
    message = failure(mutant(shape), "RAC114", "acme-4")
    assert INVARIANT in message and ",ACME-0000-" in message and "parses as ['1']" in message, message
    assert "is dropped without a word" in message, message


def numbers_only(value: str) -> list[str]:
    """c1's edit: "the runtime numbers the devices 0..N-1: anything else in the variable is no device of ours"."""
    return [part.strip() for part in value.split(",") if part.strip().isdigit()]


REFERENCE = [(rayaccel_nvidia.plugin, "nvidia", "dgx-h100"), (rayaccel_amd.plugin, "amd", "mi300x-8")]


@pytest.mark.parametrize(("module", "family", "fixture"), REFERENCE)
def test_c1s_edit_on_a_reference_plugin_is_named(module: Any, family: str, fixture: str) -> None:
    subject = wrapped(module, family, str(Path(module.__file__).parent), rayaccel_parse_visible=numbers_only)
    with pytest.raises(CheckFailed) as failed:
        CHECKS["RAC114"].function(subject, f"{family}/{fixture}")
    said = str(failed.value)
    assert INVARIANT in said and "the device's own id" in said, said


@pytest.mark.parametrize(("module", "family", "fixture"), REFERENCE)
def test_the_reference_plugins_as_shipped_keep_every_entry(module: Any, family: str, fixture: str) -> None:
    subject = wrapped(module, family, str(Path(module.__file__).parent))
    assert "round trip" in str(CHECKS["RAC114"].function(subject, f"{family}/{fixture}"))


def test_a_parser_refusing_with_a_problem_or_normalising_to_the_unit_passes() -> None:
    module, family, fixture = REFERENCE[0]
    package = Path(module.__file__).parent
    unit_of: dict[str, str] = {}  # the node's own devices, as its latest discovery found them (RAC114 moves ids)

    def discovering(host: Host) -> list[Device]:
        devices: list[Device] = module.rayaccel_discover(host)
        unit_of.clear()
        unit_of.update({d.id: str(d.index) for d in devices})
        return devices

    def refusing(value: str) -> list[str]:
        kept = numbers_only(value)
        left = [p.strip() for p in value.split(",") if p.strip() and p.strip() not in kept]
        if left:
            report_problem("unread-visible-entry", f"CUDA_VISIBLE_DEVICES entries {left} name no unit; ignored")
        return kept

    def normalising(value: str) -> list[str]:
        return [unit_of.get(p.strip(), p.strip()) for p in value.split(",") if p.strip()]

    for parser in (refusing, normalising):
        subject = wrapped(module, family, str(package), rayaccel_parse_visible=parser, rayaccel_discover=discovering)
        assert "round trip" in str(CHECKS["RAC114"].function(subject, f"{family}/{fixture}")), parser


def test_the_corpus_control_passes() -> None:
    from rayaccel_testplugins import corpus

    assert "round trip" in evidence(corpus.PLUGINS["c-healthy"], "RAC114", "acme-4")
