"""Fixture files are validated by the shipped JSON Schema, and bad ones get one clear message."""

from __future__ import annotations

import pytest
import yaml

from rayaccel.errors import FixtureError
from rayaccel.hosts.fixtures import installed_fixtures, load_fixture, resolve_fixture
from rayaccel.plugins.manager import PluginManager
from rayaccel_testplugins import acme


def test_schema_error_names_the_place_and_problem(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump({"schema": "rayaccel-fixture/1", "plugin": "acme", "name": "bad",
                                    "description": "x", "host": {"files": {"/a": 3}}, "expected": {"devices": 1}}))
    with pytest.raises(FixtureError, match=r"bad.yaml: invalid fixture at host/files//a: 3 is not of type 'string'"):
        load_fixture(path)


def test_yaml_syntax_error_is_one_line(tmp_path):
    path = tmp_path / "broken.yaml"
    path.write_text("schema: [unclosed\n")
    with pytest.raises(FixtureError) as info:
        load_fixture(path)
    assert "not valid YAML" in str(info.value) and "\n" not in str(info.value)


def test_name_must_match_file_name(tmp_path):
    data = yaml.safe_load((acme.HERE / "acme_fixtures" / "acme-4.yaml").read_text())
    path = tmp_path / "other.yaml"
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(FixtureError, match="named 'other' but declares name 'acme-4'"):
        load_fixture(path)


def test_fixture_refs_resolve_through_the_plugins():
    manager = PluginManager(autoload=False)
    manager.register(acme, "acme")
    assert resolve_fixture("acme/acme-4", manager).ref == "acme/acme-4"
    with pytest.raises(FixtureError, match=r"unknown fixture 'acme/nope'.*acme/acme-4"):
        resolve_fixture("acme/nope", manager)
    with pytest.raises(FixtureError, match="does not exist"):
        resolve_fixture("/tmp/definitely-missing.yaml", manager)


def test_every_shipped_fixture_states_its_expected_labels():
    # RAC201 compares the node's labels with expected.labels; a fixture without them cannot reach supported.
    shipped = installed_fixtures(PluginManager())
    assert {ref.split("/", 1)[0] for ref in shipped} >= {"nvidia", "amd", "tpu", "neuron", "gaudi"}
    missing = [ref for ref, path in shipped.items() if not load_fixture(path).expected.labels]
    assert missing == [], f"fixtures without expected.labels: {missing}"


REFERENCE_PLUGINS = ("nvidia", "amd", "tpu", "neuron", "gaudi")


def test_every_shipped_fixture_names_its_tool_version_and_where_the_format_is_documented():
    """A simulated machine is only as right as the tool output it copies: its `source` says which tool (and
    version) its answers follow and where that format is documented, so a reviewer can check it field by
    field and the next tool version's changes can be found."""
    import re

    manager = PluginManager()
    shipped = {ref: path for ref, path in installed_fixtures(manager).items() if ref.split("/")[0] in REFERENCE_PLUGINS}
    assert {ref.split("/")[0] for ref in shipped} == set(REFERENCE_PLUGINS)
    lacking = {}
    for ref, path in sorted(shipped.items()):
        source = load_fixture(path).source or ""
        missing = [what for what, pattern in (("a tool version", r"\d+\.\d+|\b\d+\.x\b"),
                                              ("a documentation URL", r"https?://\S+"))
                   if not re.search(pattern, source)]
        if missing:
            lacking[ref] = missing
    assert lacking == {}
