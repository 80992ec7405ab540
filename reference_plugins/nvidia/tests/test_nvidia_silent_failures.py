"""A node never offers 0 GPUs in silence where NVML is broken (issue 39: garbage or missing NVML data gave 0
devices and no problem)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from rayaccel.testing import SimulatedHost, build_inventory, load_fixture, plugin_manager
from rayaccel_nvidia import plugin

DGX = Path(plugin.__file__).parent / "fixtures" / "dgx-h100.yaml"


def inventory_with_nvml(data: Any, files: dict[str, str] | None = None):  # type: ignore[no-untyped-def]
    fixture = load_fixture(DGX)
    libraries = dict(fixture.host.libraries)
    if data is None:
        libraries.pop("nvml")
    else:
        libraries["nvml"] = data
    host = fixture.host.model_copy(update={"libraries": libraries, "files": {**fixture.host.files, **(files or {})}})
    return build_inventory(plugin_manager(plugin, "nvidia"), SimulatedHost(fixture.model_copy(update={"host": host})),
                           plugins=["nvidia"])


@pytest.mark.parametrize("data", ["garbage", [1, 2, 3], 42, {}, {"devices": {}}],
                         ids=["a-string", "a-list", "a-number", "empty", "no-devices"])
def test_garbage_or_empty_nvml_data_is_a_problem_not_a_silent_zero(data: Any) -> None:
    inventory = inventory_with_nvml(data)
    assert inventory.resources.get("GPU", 0) == 0
    [problem] = [p for p in inventory.problems if p.code == "gpus-not-enumerated"]
    assert problem.plugin == "nvidia" and "no GPU is offered" in problem.message


def test_missing_nvml_with_the_drivers_device_nodes_is_a_problem() -> None:
    inventory = inventory_with_nvml(None, files={f"/dev/nvidia{i}": "" for i in range(8)})
    [problem] = [p for p in inventory.problems if p.code == "gpus-not-enumerated"]
    assert "8 GPU device nodes" in problem.message


def test_a_host_without_nvidia_gpus_says_nothing() -> None:
    inventory = inventory_with_nvml(None)
    assert inventory.families == [] and not [p for p in inventory.problems if p.plugin == "nvidia"]



def _garbled(field: str) -> Any:
    """DGX H100's NVML data with one field of GPU 3 answered as text where numbers belong."""
    import copy

    data = copy.deepcopy(load_fixture(DGX).host.libraries["nvml"])
    value = data["devices"]["3"][field]
    data["devices"]["3"][field] = {key: "abc" for key in value} if isinstance(value, dict) else {"x": "abc"}
    return data


@pytest.mark.parametrize("field", ["pci", "memory", "numa_node", "cpu_affinity", "compute_capability",
                                   "architecture", "ecc", "remapped_rows", "utilization", "power_usage",
                                   "temperature", "mig_mode", "field_values", "nvlink"])
def test_a_malformed_nvml_answer_is_said_for_an_operator_not_in_pythons_words(field: str) -> None:
    """Issue 39: internal exception texts ("invalid literal for int() with base 10", "'str' object has no
    attribute 'get'") became problem messages; each names the NVML call and what it answered instead."""
    inventory = inventory_with_nvml(_garbled(field))
    problems = [p for p in inventory.problems if p.code == "nvml-malformed-answer"]
    assert problems, field
    for problem in problems:
        assert "nvmlDevice" in problem.message and "NVML answered" in problem.message, problem.message
        for python_words in ("invalid literal", "object has no attribute", "argument must be", "failed with",
                             "ValueError:", "TypeError:", "AttributeError:"):
            assert python_words not in problem.message, problem.message
