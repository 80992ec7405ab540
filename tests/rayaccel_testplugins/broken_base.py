"""What the deliberately broken plugins share: ACME's probing, under a family of their own.

Each ``broken_*.py`` module is an ACME plugin with exactly one defect, and must fail the conformance
check that names it (tests/conformance/test_conformance_broken.py). ``declare`` gives each its own resource and env
var so they can all be loaded at once without colliding; ``fixture_dirs`` points at its own fixture,
a copy of ``acme-4`` whose expectations name that family (written by ``write_fixture``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from rayaccel import FamilyDeclaration, QuantityRule, SchedulerNames, SupportInfo, hookimpl
from rayaccel_testplugins.derived import copy_hooks

HERE = Path(__file__).parent
FIXTURES = HERE / "broken_fixtures"
GOOD_SCHEDULERS = SchedulerNames(kubernetes_resource="acme.example/acme", dra_driver="acme.acme.example",
                                 slurm_gres="acme", device_files=["/dev/acme{index}"])
GOOD_SUPPORT = SupportInfo(maintainers=["Wile E. Coyote", "Road Runner"], contact="https://acme.example/support",
                           license="Apache-2.0", tested_ray_versions=["2.60.0"])


def declare(plugin: str, resource: str | None = None, env_var: str | None = None,
            rule: QuantityRule | None = None, **changes: Any) -> FamilyDeclaration:
    token = plugin.replace("broken-", "brk").replace("-", "").upper()
    fields: dict[str, Any] = {
        "name": plugin, "vendor": "ACME Corp", "resource_name": resource or token,
        "visible_devices_env_var": env_var or f"{token}_VISIBLE_DEVICES",
        "quantity_rule": rule or QuantityRule(kind="whole"), "spec_version": "1.0", "support": GOOD_SUPPORT,
        "schedulers": GOOD_SCHEDULERS,
    }
    fields.update(changes)
    return FamilyDeclaration.model_validate(fields)


def fixture_dirs(plugin: str) -> list[str]:
    return [str(FIXTURES / plugin)]


def write_fixture(family: FamilyDeclaration, plugin: str, commands: dict[str, Any] | None = None) -> Path:
    """Derive the plugin's fixture from acme-4: same machine, expectations in the plugin's family."""
    data = yaml.safe_load((HERE / "acme_fixtures" / "acme-4.yaml").read_text(encoding="utf-8"))
    data["plugin"], data["description"] = plugin, f"acme-4 as seen by {plugin}"
    data["name"] = "acme-4"
    if commands:
        data["host"]["commands"] = commands

    def rename(resources: dict[str, float]) -> dict[str, float]:
        return {family.resource_name if k == "ACME" else k: v for k, v in resources.items()}

    data["expected"]["resources"] = rename(data["expected"]["resources"])
    data["expected"]["labels"]["rayaccel.io/family"] = family.name
    for fault in data["faults"]:
        if fault["expected"].get("resources"):
            fault["expected"]["resources"] = rename(fault["expected"]["resources"])
    path = FIXTURES / plugin / "acme-4.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path


def inherit(namespace: dict[str, Any], *, keep: tuple[str, ...] = ()) -> None:
    """Copy ACME's hooks into a broken module, except the ones it defines itself (``keep``) and the
    family and fixture-dir hooks every broken plugin has of its own."""
    from rayaccel_testplugins import acme

    copy_hooks(acme, namespace, own=("rayaccel_family", "rayaccel_fixture_dirs", *keep))


def broken_plugin(namespace: dict[str, Any], plugin: str, *, keep: tuple[str, ...] = (),
                  **defect: Any) -> FamilyDeclaration:
    """Make the module whose ``globals()`` this is the broken plugin ``plugin``: ACME's hooks except the ones it
    defines itself (``keep``), its own family (``defect``: the declaration's changes, where the declaration is
    what is broken; see :func:`declare`) and its own fixture directory. Returns the family."""
    family = declare(plugin, **defect)
    inherit(namespace, keep=keep)

    def rayaccel_family() -> FamilyDeclaration:
        return family

    def rayaccel_fixture_dirs() -> list[str]:
        return fixture_dirs(plugin)

    for hook in (rayaccel_family, rayaccel_fixture_dirs):
        hook.__module__ = namespace["__name__"]  # the broken module's own hooks, where a report names them
        namespace[hook.__name__] = hookimpl(hook)
    return family
