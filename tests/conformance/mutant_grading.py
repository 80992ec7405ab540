"""One corpus plugin graded by one check on one fixture, outside a conformance run: a test of an invariant (the
held-out rounds', _link_states, _one_reading, _moved_losses, _missing_keys, ...) calls a check's function directly
on a plugin beside the healthy control, to see the message it fails with or the evidence it passes with."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from rayaccel import hookimpl
from rayaccel.catalog import load_catalog
from rayaccel.plugins.instance_types import cloud_hint, instance_type_hints
from rayaccel.plugins.manager import PluginManager
from rayaccel_conformance.checks import all_checks
from rayaccel_conformance.harness.subject import Subject
from rayaccel_conformance.registry import CHECKS, CheckFailed
from rayaccel_testplugins import corpus


def graded(plugin: corpus.Healthy) -> Subject:
    """``plugin`` as the subject of a manager that holds it and the healthy control (checks compare the two)."""
    all_checks()
    manager = PluginManager(autoload=False, timeout=5.0)
    manager.register(plugin, plugin.name)
    if plugin.name != "c-healthy":
        manager.register(corpus.PLUGINS["c-healthy"], "c-healthy")
    return Subject(plugin.name, manager)


def mutant(cls: type[corpus.Healthy]) -> corpus.Healthy:
    """The corpus's registered plugin of class ``cls`` (its fixtures were written when the corpus loaded)."""
    return next(p for p in corpus.PLUGINS.values() if type(p) is cls)


def replaced(module: object, name: str, timeout: float | None = None, **hooks: object) -> Subject:
    """Plugin ``module`` (its ``rayaccel_*`` hooks) with ``hooks`` in place of its own (None: left out), registered
    alone under ``name``: a reference or test plugin given one defect, or one fixture directory, by a test;
    ``timeout``: each hook's bound (the SDK's default where None)."""
    answers = {attr: getattr(module, attr) for attr in dir(module) if attr.startswith("rayaccel_")} | hooks
    manager = PluginManager(autoload=False, timeout=timeout)
    assert manager.register(SimpleNamespace(**{k: v for k, v in answers.items() if v is not None}), name), \
        manager.problems
    return Subject(name, manager)


def wrapped(module: object, name: str, package: str, **hooks: Any) -> Subject:
    """The reference plugin ``module`` with ``hooks`` in place of its own, under its own name and with what its
    ``package`` keeps beside its module (a namespace has no module the SDK finds them beside): its fixtures, its
    SKU catalog and its cloud instance types, as the SDK's conventions answer them for the installed plugin;
    each hook bounded at 10 s."""
    all_checks()
    home = Path(package)
    catalog, instance_types = home / "skus.yaml", home / "instance-types.yaml"
    beside: dict[str, Any] = {}
    if catalog.is_file():
        beside["rayaccel_sku_catalog"] = lambda: load_catalog(catalog)
    if instance_types.is_file():
        beside["rayaccel_cloud_hints"] = lambda provider, instance_type: cloud_hint(instance_types, provider,
                                                                                     instance_type)
        beside["rayaccel_cloud_instance_types"] = lambda: instance_type_hints(instance_types)
    beside = {key: value for key, value in beside.items() if not hasattr(module, key)}  # its own answers first
    beside["rayaccel_fixture_dirs"] = lambda: [str(home / "fixtures")]
    return replaced(module, name, timeout=10.0,
                    **{key: None if value is None else hookimpl(value) for key, value in (beside | hooks).items()})


def failure(plugin: corpus.Healthy, check_id: str, machine: str) -> str:
    """The message ``check_id`` fails ``plugin`` with on its fixture ``machine``; the test fails if it passes."""
    subject = graded(plugin)  # first: it registers the checks that CHECKS holds
    with pytest.raises(CheckFailed) as failed:
        CHECKS[check_id].function(subject, f"{plugin.name}/{machine}")
    return str(failed.value)


def evidence(plugin: corpus.Healthy, check_id: str, machine: str) -> str:
    """The evidence ``check_id`` passes ``plugin`` with on its fixture ``machine``."""
    subject = graded(plugin)
    return str(CHECKS[check_id].function(subject, f"{plugin.name}/{machine}"))
