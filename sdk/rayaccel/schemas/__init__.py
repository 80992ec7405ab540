"""The shipped JSON Schemas, and the one loader that validates a document against its schema and its model.

A leaf: this module imports nothing from rayaccel, so every layer may use it. The ``*.schema.json`` files
beside it are generated from the records by ``scripts/gen_schemas.py`` (a development script; a test fails
while a shipped schema is stale). A package that ships its own schemas (the conformance suite ships the
report's) passes its directory.

Every document error reads the same way: ``<origin>: invalid <what> at <path>: <message>``, the path
``/``-separated (``(top level)`` for the document itself), whether the schema or the model caught it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from functools import cache
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

SCHEMA_DIR = Path(__file__).parent
BASE_URI = "https://rayaccel.io/schemas/"

ModelT = TypeVar("ModelT", bound=BaseModel)


def where(path: Iterable[str | int]) -> str:
    """A location in a document as people read it: ``devices/0/id``, or ``(top level)``."""
    return "/".join(str(p) for p in path) or "(top level)"


def first_difference(a: object, b: object, at: tuple[int | str, ...] = ()) -> tuple[int | str, ...] | None:
    """Where two documents (dicts, lists, values) first differ, as a path; None where they agree (lists of
    different lengths are not compared item by item). ``'65536'`` differs from ``65536``; ``1`` from ``1.0`` not."""
    if isinstance(a, dict) and isinstance(b, dict):
        for key in a:
            found = first_difference(a[key], b.get(key), (*at, key))
            if found is not None:
                return found
        return None
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            found = first_difference(x, y, (*at, i))
            if found is not None:
                return found
        return None
    return None if a == b else at


def value_at(data: object, path: tuple[int | str, ...]) -> object:
    """The value at ``path`` (as :func:`first_difference` gives it) in ``data``."""
    for key in path:
        data = data[key]  # type: ignore[index]
    return data


def shown_value(value: Any, width: int = 60) -> str:
    """A refused value as a message shows it: its repr cut to ``width``; an integer too long for Python to
    print (over 4300 digits) by its size, since printing it raises."""
    try:
        return repr(value)[:width]
    except ValueError:
        return f"an integer of {value.bit_length()} bits" if isinstance(value, int) else type(value).__name__


def describe_validation_error(e: ValidationError, limit: int = 3, with_input: bool = False) -> str:
    """The first ``limit`` errors of a model, as 'at <path>: <message>', '; '-joined (the one pydantic formatter).
    ``with_input``: each names the value it refused too (cut to 60 characters), for a vendor's answer."""
    def shown_input(err: Any) -> str:
        if not with_input or isinstance(err.get("input"), dict | list):
            return ""
        return f" (got {shown_value(err.get('input'))})"

    parts = [f"at {where(err['loc'])}: {err['msg']}{shown_input(err)}" for err in e.errors()[:limit]]
    more = f" (and {e.error_count() - limit} more)" if e.error_count() > limit else ""
    return "; ".join(parts) + more


@cache
def load_schema(name: str, directory: Path = SCHEMA_DIR) -> dict[str, Any]:
    """The shipped schema ``<directory>/<name>.schema.json``."""
    path = directory / f"{name}.schema.json"
    return json.loads(path.read_text(encoding="utf-8"))  # type: ignore[no-any-return]


def schema_errors(name: str, data: Any, directory: Path = SCHEMA_DIR) -> list[str]:
    """Where data breaks the shipped schema ``name``, as 'at <path>: <message>', in document order."""
    import jsonschema  # only documents read from files need it: imported on first use

    validator = jsonschema.Draft202012Validator(load_schema(name, directory))
    errors = sorted(validator.iter_errors(data), key=lambda err: [str(p) for p in err.absolute_path])
    return [f"at {where(err.absolute_path)}: {_message(err)}" for err in errors]


_NAME_LIKE = re.compile(r"[A-Za-z0-9_.-]{1,40}")


def _message(err: Any) -> str:
    """jsonschema's message, which quotes the refused value (its first words, or the unexpected keys): a file
    of another kind named by mistake (even /etc/shadow) is said by the value's type and the keys' sizes, never
    quoted; a short value and a name-like key are quoted, escaped."""
    message, instance, top_level = err.message, err.instance, not err.absolute_path
    if err.validator == "additionalProperties" and isinstance(instance, dict):
        allowed = set(err.schema.get("properties", {}))
        extra = [k for k in instance if k not in allowed]
        if extra and not all(isinstance(k, str) and _NAME_LIKE.fullmatch(k) for k in extra):
            named = [repr(k) if isinstance(k, str) and _NAME_LIKE.fullmatch(k) else f"a key of {len(str(k))} characters"
                     for k in extra[:5]]
            return f"{len(extra)} unexpected keys: {', '.join(named)}"
        return _excerpt(message)
    try:
        quoted = repr(instance)
    except ValueError:  # an integer too long to print
        quoted = ""
    if quoted and message.startswith(quoted) and (top_level or len(quoted) > 40):
        return f"a {type(instance).__name__} value{_excerpt(message[len(quoted):])}"
    return _excerpt(message)


#: Characters of a schema message kept: jsonschema quotes the whole offending value (a document, a line of
#: whatever file was named), and a message is one line that shows only an excerpt of it.
MAX_MESSAGE = 200


def _excerpt(message: str) -> str:
    text = message if message.isprintable() else ascii(message)[1:-1]
    return text if len(text) <= MAX_MESSAGE else f"{text[:MAX_MESSAGE]}... ({len(text)} characters)"


def validate_document(data: Any, model: type[ModelT], *, schema: str, what: str, origin: str,
                      error: type[Exception], directory: Path = SCHEMA_DIR, schema_checked: bool = False) -> ModelT:
    """data (already parsed) checked against the shipped schema, then built as the model.

    Raises ``error`` with one line, ``<origin>: invalid <what> at <path>: <message>``, naming the first
    problem: the schema speaks first (its messages name the document's own keys), the model's own checks
    (cross-field rules) second. ``schema_checked``: the data has passed the schema already (a document read
    by :func:`rayaccel.files.checked.load_checked`): only the model checks it.
    """
    errors = [] if schema_checked else schema_errors(schema, data, directory)
    if errors:
        raise error(f"{origin}: invalid {what} {errors[0]}")
    try:
        return model.model_validate(data)
    except ValidationError as e:
        raise error(f"{origin}: invalid {what} {describe_validation_error(e, limit=1)}") from None
