"""YAML documents read with libyaml where that is safe, and refused for depth before any parser recurses."""

from __future__ import annotations

import pytest
import yaml

from rayaccel.errors import RayaccelError
from rayaccel.files.reading import C_PARSER_MAX_BRACKETS, MAX_DEPTH, parse


def test_a_wide_shallow_document_past_the_bracket_count_reads_as_the_pure_parser_reads_it() -> None:
    entries = C_PARSER_MAX_BRACKETS // 2 + 1  # two brackets each
    text = "devices: [" + ", ".join(f"{{id: d{i}, links: [{i}, {i + 1}]}}" for i in range(entries)) + "]"
    assert parse(text, "f.yaml", "fixture", "yaml") == yaml.load(text, Loader=yaml.CSafeLoader)


@pytest.mark.parametrize("levels", [MAX_DEPTH + 1, 999, 100_000])  # below, at and past libyaml's own 1,000
def test_flow_collections_nested_past_the_limit_are_refused_naming_the_depth(levels: int) -> None:
    text = "a: " + "[" * levels + "]" * levels + "\n" + "b: [" + "{}, " * C_PARSER_MAX_BRACKETS + "{}]"
    with pytest.raises(RayaccelError, match=f"f.yaml: the fixture is nested more deeply than {MAX_DEPTH} levels"):
        parse(text, "f.yaml", "fixture", "yaml")


def test_brackets_inside_quoted_text_are_no_nesting() -> None:
    text = "a: '" + "[" * (C_PARSER_MAX_BRACKETS + 1) + "'\n"
    assert parse(text, "f.yaml", "fixture", "yaml") == {"a": "[" * (C_PARSER_MAX_BRACKETS + 1)}
