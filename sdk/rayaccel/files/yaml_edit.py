"""A YAML file edited in place, as people wrote it: comments, key order and quoting of everything the edit
does not change stay (ruamel.yaml's round trip). ``rayaccel fixture expect --write`` rewrites a fixture's
``expected`` this way, so a fixture's comments survive recomputing its expectation."""

from __future__ import annotations

import io
from collections.abc import Mapping
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap


def _round_trip() -> YAML:
    yaml = YAML(typ="rt")
    yaml.preserve_quotes = True
    yaml.width = 120
    return yaml


def _update(target: CommentedMap, value: Mapping[str, Any]) -> None:
    """``target`` made equal to ``value``, changing only what differs (nested maps key by key, so a comment
    on an unchanged entry stays)."""
    for key in [k for k in target if k not in value]:
        del target[key]
    for key, new in value.items():
        old = target.get(key)
        if isinstance(new, Mapping) and isinstance(old, CommentedMap):
            _update(old, new)
        elif key not in target or old != new:
            target[key] = new


def with_key(text: str, key: str, value: Mapping[str, Any]) -> str:
    """The YAML document ``text`` with its top-level mapping's ``key`` set to ``value``, everything else as
    written."""
    yaml = _round_trip()
    document = yaml.load(text)
    if not isinstance(document, CommentedMap):
        raise ValueError("the document is not a mapping")
    current = document.get(key)
    if isinstance(current, CommentedMap):
        _update(current, value)
    else:
        document[key] = dict(value)
    out = io.StringIO()
    yaml.dump(document, out)
    return out.getvalue()
