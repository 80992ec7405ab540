"""The NVIDIA reference plugin with one more transport: a host copy declared for CUDA tensors and NVLink beside the
CPU's and PCIe, its class (the SDK's shared-memory class, renamed) in a module of its own
(:mod:`rayaccel_testplugins.host_copy_class`). Path selection must pass it over for NVLink pairs by what the class
says it moves, and the tests that ask see in which process the class's module is imported."""

from __future__ import annotations

from pathlib import Path

import rayaccel_nvidia.plugin
from rayaccel import TransportSpec, hookimpl
from rayaccel_testplugins.derived import copy_hooks

copy_hooks(rayaccel_nvidia.plugin, globals(), own=["rayaccel_transports"])


@hookimpl
def rayaccel_fixture_dirs() -> list[str]:
    return [str(Path(rayaccel_nvidia.plugin.__file__).parent / "fixtures")]


@hookimpl
def rayaccel_transports() -> list[TransportSpec]:
    return [TransportSpec(name="NV_HOST_COPY", devices=["cpu", "cuda"], link_kinds=["nvlink", "pcie"],
                          one_sided=True, reach="node", manager_class="rayaccel_testplugins.host_copy_class:HostCopy")]
