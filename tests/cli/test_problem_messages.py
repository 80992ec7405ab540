"""A problem says what went wrong in rayaccel's words, never by quoting an internal exception's text (issue 39:
pluggy's ValueError, with the module's repr, became a problem message)."""

from __future__ import annotations

import pytest

from rayaccel.plugins.configuration import PLUGINS_ENV
from rayaccel.plugins.manager import PluginManager


def test_one_module_listed_twice_is_one_problem_in_our_words(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(PLUGINS_ENV, "acme=rayaccel_testplugins.acme,acme2=rayaccel_testplugins.acme")
    manager = PluginManager(autoload=False)
    assert manager.plugin_names() == ["acme"]
    [problem] = manager.problems
    assert (problem.plugin, problem.code) == ("acme2", "duplicate-plugin")
    assert problem.message == "is the same module as plugin 'acme', already registered"
    assert "<module" not in problem.render() and "Plugin already registered" not in problem.render()
