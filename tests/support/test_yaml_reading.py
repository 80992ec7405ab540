"""YAML documents read with libyaml where that is safe, refused for depth before any parser recurses, and
refused for what they hold written out (aliases counted each time they appear)."""

from __future__ import annotations

import itertools

import pytest
import yaml

from rayaccel.errors import RayaccelError
from rayaccel.files import reading
from rayaccel.files.reading import C_PARSER_MAX_BRACKETS, MAX_DEPTH, MAX_NODES, parse


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


# What a document holds is counted as it reads written out, whichever walk counts it: the one that walks each
# value (WALKED_VALUES past any document here) or the one that measures each list or mapping once (0).
@pytest.fixture(params=[10**9, 0], ids=["walked", "measured"])
def walk(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(reading, "WALKED_VALUES", request.param)


def aliased(copies: int) -> str:
    """A list of 1,000 strings and a list holding it ``copies`` times, by alias: 1,001 + copies * 1,001 values."""
    return "a: &a [" + ", ".join(["x"] * 1000) + "]\nb: [" + ", ".join(["*a"] * copies) + "]\n"


@pytest.mark.usefixtures("walk")
def test_an_alias_bomb_is_refused_naming_the_value_count() -> None:
    levels = ["a: &a [" + ", ".join(['"lol"'] * 9) + "]"]
    for prev, name in itertools.pairwise("abcdefghi"):  # 9**9 values written out
        levels.append(f"{name}: &{name} [" + ", ".join([f"*{prev}"] * 9) + "]")
    with pytest.raises(RayaccelError, match=f"f.yaml: the fixture holds more than {MAX_NODES} values"):
        parse("\n".join(levels) + "\n", "f.yaml", "fixture", "yaml")


@pytest.mark.usefixtures("walk")
def test_aliases_count_each_time_they_appear() -> None:
    within = (MAX_NODES - 1001) // 1001 - 1  # the document, a, b and b's copies of a's 1,001 values
    assert len(parse(aliased(within), "f.yaml", "fixture", "yaml")["b"]) == within
    with pytest.raises(RayaccelError, match=f"holds more than {MAX_NODES} values"):
        parse(aliased(within + 2), "f.yaml", "fixture", "yaml")


@pytest.mark.usefixtures("walk")
@pytest.mark.parametrize(("inner", "outer", "refused"), [(30, MAX_DEPTH - 31, False), (30, MAX_DEPTH - 30, True)])
def test_nesting_counts_through_an_alias(inner: int, outer: int, refused: bool) -> None:
    """``a`` is ``inner`` lists deep; ``b`` holds it under ``outer`` lists: as deep, written out, as both."""
    text = f"a: &a {'[' * inner}{']' * inner}\nb: {'[' * outer}*a{']' * outer}\n"
    if refused:
        with pytest.raises(RayaccelError, match=f"nested more deeply than {MAX_DEPTH} levels"):
            parse(text, "f.yaml", "fixture", "yaml")
    else:
        assert parse(text, "f.yaml", "fixture", "yaml") == yaml.safe_load(text)


@pytest.mark.usefixtures("walk")
def test_a_list_holding_itself_is_nested_without_end() -> None:
    with pytest.raises(RayaccelError, match=f"nested more deeply than {MAX_DEPTH} levels"):
        parse("a: &a [1, *a]\n", "f.yaml", "fixture", "yaml")
