"""Held-out grading, round 15 (issue 46, lane J3): a cloud hint answers for one provider's instance type (``invariant
a-hint-is-its-providers``, RAC222).

The command-csv bake ``c3`` looked its AWS instance-type table up by name whatever the provider asked, so
``gcp:hop1.12xlarge`` got the AWS machine's 4 accelerators; RAC222 killed it only for an exact-case lookup, and
``c3f``, that lookup made case-free, graded ``supported``: every check asked a hinted name under the provider it was
hinted for. RAC222 now asks each hinted name under the providers that neither list it nor were asked it: both
corpus shapes and c3's edit on the NVIDIA and TPU plugins are named; the plugins as shipped pass.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from mutant_grading import graded, wrapped

import rayaccel_nvidia.plugin
import rayaccel_tpu.plugin
from rayaccel import CloudHint
from rayaccel.plugins.instance_types import instance_type_hints
from rayaccel_conformance.registry import CHECKS, CheckFailed
from rayaccel_testplugins.corpus import PLUGINS, Healthy
from rayaccel_testplugins.corpus_provider_hints import HintsByNameAlone, HintsFromAnotherProvider

INVARIANT = "invariant a-hint-is-its-providers"


@pytest.mark.parametrize(("shape", "said"), [
    (HintsByNameAlone, "gcp:acme1.4xlarge gets a hint of 4 "),
    (HintsFromAnotherProvider, "gcp:acme1.4xlarge gets a hint of 4 ")])
def test_a_hint_given_under_a_provider_that_does_not_list_the_name_is_named(shape: type[Healthy], said: str) -> None:
    subject = graded(next(p for p in PLUGINS.values() if type(p) is shape))  # first: it registers the checks
    with pytest.raises(CheckFailed) as failed:
        CHECKS["RAC222"].function(subject)
    message = str(failed.value)
    assert INVARIANT in message and said in message and "under aws only" in message, message


def by_name_alone(package: Path) -> Any:
    """c3's edit on a plugin's own table: the entry of that name under any provider, answered for the one asked."""
    table = instance_type_hints(package / "instance-types.yaml")

    def hint(provider: str, instance_type: str) -> CloudHint | None:
        name = instance_type.strip().lower()
        found = next((h for h in table if h.instance_type.lower() == name), None)
        return found.model_copy(update={"provider": provider, "instance_type": instance_type}) if found else None
    return hint


MODULES = [(rayaccel_nvidia.plugin, "nvidia"), (rayaccel_tpu.plugin, "tpu")]


@pytest.mark.parametrize(("module", "family"), MODULES)
def test_c3s_edit_on_a_reference_plugin_is_named(module: Any, family: str) -> None:
    package = Path(module.__file__).parent
    subject = wrapped(module, family, str(package), rayaccel_cloud_hints=by_name_alone(package))
    with pytest.raises(CheckFailed) as failed:
        CHECKS["RAC222"].function(subject)
    assert INVARIANT in str(failed.value), str(failed.value)


@pytest.mark.parametrize(("module", "family"), MODULES)
def test_the_reference_plugins_as_shipped_hint_each_name_under_its_provider(module: Any, family: str) -> None:
    subject = wrapped(module, family, str(Path(module.__file__).parent))
    said = str(CHECKS["RAC222"].function(subject))
    assert "no name hinted under a provider that does not list it" in said, said
