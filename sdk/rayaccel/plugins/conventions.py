"""Hooks a plugin need not write: answered from files laid out beside its module.

The template and the reference plugins keep their simulated hosts in ``fixtures/``, their SKU catalog in
``skus.yaml`` and their cloud instance types in ``instance-types.yaml`` (:mod:`rayaccel.plugins.instance_types`),
next to the plugin module. A plugin that follows that layout and does not implement ``rayaccel_fixture_dirs``,
``rayaccel_sku_catalog``, ``rayaccel_cloud_hints`` or ``rayaccel_cloud_instance_types`` gets them answered from
those files; one that implements the hook answers it itself. A conventional answer is called like the plugin's
own (bounded, contained, validated), so a broken ``skus.yaml`` is that plugin's problem, not a crash.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Convention:
    #: The file or directory beside the plugin's module.
    name: str
    is_dir: bool
    #: The hook's answer, from that path (and the hook's arguments).
    answer: Callable[..., Any]

    def describe(self) -> str:
        return f"`{self.name}{'/' if self.is_dir else ''}` beside the plugin's module"


def _fixture_dirs(path: Path) -> list[str]:
    return [str(path)]


def _catalog(path: Path) -> Any:
    from rayaccel.catalog import load_catalog  # with YAML: imported when a catalog is read, not with the manager

    return load_catalog(path)


def _cloud_hint(path: Path, provider: str, instance_type: str) -> Any:
    from rayaccel.plugins.instance_types import cloud_hint  # with YAML, as the catalog

    return cloud_hint(path, provider, instance_type)


def _instance_types(path: Path) -> Any:
    from rayaccel.plugins.instance_types import instance_type_hints

    return instance_type_hints(path)


#: The hooks a layout convention answers, by hook name.
CONVENTIONS: dict[str, Convention] = {
    "rayaccel_fixture_dirs": Convention("fixtures", is_dir=True, answer=_fixture_dirs),
    "rayaccel_sku_catalog": Convention("skus.yaml", is_dir=False, answer=_catalog),
    "rayaccel_cloud_hints": Convention("instance-types.yaml", is_dir=False, answer=_cloud_hint),
    "rayaccel_cloud_instance_types": Convention("instance-types.yaml", is_dir=False, answer=_instance_types),
}


def plugin_home(plugin: object) -> Path | None:
    """The directory of the plugin's module (of its class's module, for a plugin object); None when it has
    no file (a module made in memory)."""
    try:
        source = inspect.getfile(plugin if inspect.ismodule(plugin) else type(plugin))
    except (TypeError, OSError):
        return None
    return Path(source).resolve().parent


def conventional_hooks(plugin: object, implemented: Callable[[str], bool]) -> dict[str, Callable[[], Any]]:
    """For each conventional hook the plugin does not implement and whose file is there: its answer."""
    home = plugin_home(plugin)
    if home is None:
        return {}
    hooks: dict[str, Callable[[], Any]] = {}
    for hook, convention in CONVENTIONS.items():
        path = home / convention.name
        if implemented(hook) or not (path.is_dir() if convention.is_dir else path.is_file()):
            continue
        hooks[hook] = functools.partial(convention.answer, path)
    return hooks
