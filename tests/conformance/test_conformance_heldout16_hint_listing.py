"""Held-out grading, round 16 (issue 46, lane J5): the instance types a plugin lists are read
(``invariant the-listing-is-readable``, RAC222).

The command-csv bake ``c3`` keyed its hints by ``ec2``, the vendor's name for AWS: ``rayaccel_cloud_instance_types``
raised building a ``CloudHint`` the SDK refuses, and ``aws`` got no hint. The SDK contained the failure and answered
no listing, so RAC222 had nothing to round-trip and it survived ``supported``, while ``rayaccel export`` wrote none of
its node types. RAC222 now names the SDK's problem for the listing: both corpus shapes and c3's edit on the NVIDIA
plugin's own table are named; the plugin as shipped, and the corpus control, pass.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from mutant_grading import graded, mutant, wrapped

import rayaccel_nvidia.plugin
from rayaccel import CloudHint
from rayaccel.plugins.instance_types import instance_type_hints
from rayaccel_conformance.registry import CHECKS, CheckFailed
from rayaccel_testplugins.corpus import Healthy
from rayaccel_testplugins.corpus_hint_listing import ListingRowsAsWritten, ListingVendorProvider

INVARIANT = "invariant the-listing-is-readable"


@pytest.mark.parametrize(("shape", "said"), [(ListingVendorProvider, "(hook-raised)"),
                                             (ListingRowsAsWritten, "(invalid-record)")])
def test_a_listing_that_cannot_be_read_is_named(shape: type[Healthy], said: str) -> None:
    subject = graded(mutant(shape))  # first: it registers the checks that CHECKS holds
    with pytest.raises(CheckFailed) as failed:
        CHECKS["RAC222"].function(subject)  # RAC222 grades the plugin, not a fixture
    message = str(failed.value)
    assert INVARIANT in message and f"rayaccel_cloud_instance_types could not be read {said}" in message, message


NVIDIA = Path(rayaccel_nvidia.plugin.__file__).parent


def as_the_vendor_names_aws() -> list[Any]:
    """c3's edit on the NVIDIA plugin's own table: every AWS entry listed under 'ec2', as the vendor calls it."""
    return [CloudHint(provider="ec2" if h.provider == "aws" else h.provider, instance_type=h.instance_type,
                      family=h.family, count=h.count, accelerator_type=h.accelerator_type)
            for h in instance_type_hints(NVIDIA / "instance-types.yaml")]


def test_c3s_edit_on_the_nvidia_plugin_is_named() -> None:
    subject = wrapped(rayaccel_nvidia.plugin, "nvidia", str(NVIDIA),
                      rayaccel_cloud_instance_types=as_the_vendor_names_aws)
    with pytest.raises(CheckFailed) as failed:
        CHECKS["RAC222"].function(subject)
    said = str(failed.value)
    assert INVARIANT in said and "'ec2'" in said, said


def test_the_nvidia_plugin_as_shipped_and_the_corpus_control_pass() -> None:
    from rayaccel_testplugins import corpus

    assert "rayaccel_cloud_instance_types" not in str(CHECKS["RAC222"].function(
        wrapped(rayaccel_nvidia.plugin, "nvidia", str(NVIDIA))))
    assert "rayaccel_cloud_instance_types" not in str(CHECKS["RAC222"].function(graded(corpus.PLUGINS["c-healthy"])))
