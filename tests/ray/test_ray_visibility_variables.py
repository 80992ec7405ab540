"""A day-zero family's visible env reaches a task's process only through its visibility variables (held-out round
13's ``c1``): a key the plugin's ``rayaccel_visible_env`` returns beside them (a library path) is dropped, said once in
the node's inventory, and the node's own value is what a task sees, as under Ray's managers, which write their own
variable alone."""

from __future__ import annotations

import os

import pytest
import ray

import rayaccel.ray
from rayaccel.ray.registry import uninstall
from rayaccel_testplugins import corpus
from rayaccel_testplugins.corpus_visibility_variables import VisibleEnvSetsLibraryPath

pytestmark = pytest.mark.ray

NODE_LIBRARIES = "/srv/node/lib"


def seen(var: str) -> tuple[str | None, str | None]:
    return os.environ.get(var), os.environ.get("LD_LIBRARY_PATH")


def test_a_library_path_the_visible_env_returns_never_reaches_a_task(monkeypatch: pytest.MonkeyPatch) -> None:
    plugin = next(p for p in corpus.PLUGINS.values() if type(p) is VisibleEnvSetsLibraryPath)
    resource, var = plugin.family.resource_name, plugin.family.visible_devices_env_var
    monkeypatch.setenv("RAYACCEL_PLUGINS", corpus.plugins_env([plugin.name]))
    monkeypatch.setenv("LD_LIBRARY_PATH", NODE_LIBRARIES)  # the node's own, which its processes inherit
    rayaccel.ray.init(simulate=f"{plugin.name}/acme-4", plugins=[plugin.name], num_cpus=2, include_dashboard=False,
                      log_to_driver=False)
    try:
        (config,) = rayaccel.ray.node_configs().values()
        assert "LD_LIBRARY_PATH" not in config.env and config.env[var] == "0,1,2,3"
        (said,) = [p for p in config.inventory.problems if p.code == "foreign-visible-env"]
        assert said.severity == "warning" and said.message.startswith("sets LD_LIBRARY_PATH, which is no visibility "
                                                                     f"variable of family {plugin.family.name}")
        units, libraries = ray.get(ray.remote(resources={resource: 2})(seen).remote(var), timeout=120)
        assert units is not None and len(units.split(",")) == 2 and libraries == NODE_LIBRARIES
        assert ray.get(ray.remote(seen).remote(var), timeout=120)[1] == NODE_LIBRARIES  # a task given none of them
    finally:
        rayaccel.ray.shutdown()
        uninstall()
