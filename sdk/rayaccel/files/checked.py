"""Documents read from files and checked against a shipped JSON Schema, each content checked once.

A fixture or SKU catalog is read by every command that builds an inventory, and by each plugin's worker
process. Parsing its YAML and checking it against its JSON Schema (importing ``yaml`` and ``jsonschema`` for
it) costs ~0.15 s of CPU per process, although the files change rarely. So a document that passed is
remembered, as its parsed data, under a key made of everything the verdict depends on: the file's bytes, its
format, the schema (as loaded) and :data:`VERSION`. Any change to one of them is a new key, checked afresh;
nothing but a pass is remembered, so every failure is found and worded as before. The model's own checks
(:func:`rayaccel.schemas.validate_document`) run on every read.

Entries live in ``$XDG_CACHE_HOME/rayaccel/checked`` (default ``~/.cache/rayaccel/checked``), one file
each: the SHA-256 of the payload, a newline, the payload (``{"data": ...}`` as JSON). An entry that is
unreadable, or whose payload does not match its digest, is ignored (and replaced). A directory that cannot
be written only means nothing is remembered. At most :data:`MAX_ENTRIES` are kept, the oldest removed first.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from pathlib import Path
from typing import Any

from rayaccel.errors import RayaccelError
from rayaccel.files import reading
from rayaccel.files.atomic import write_atomically
from rayaccel.schemas import SCHEMA_DIR, load_schema, schema_errors

#: Part of every key: a change to what an entry holds, or to how a document is read, starts afresh.
VERSION = "1"
#: Entries kept (a fixture's is ~40 KB); writing one more removes the oldest.
MAX_ENTRIES = 256


def cache_dir() -> Path:
    """Where passed checks are remembered (XDG's cache directory, as other tools use it)."""
    base = os.environ.get("XDG_CACHE_HOME", "")
    if not os.path.isabs(base):  # unset, or relative: ignored, as the XDG specification says
        base = os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "rayaccel" / "checked"


def load_checked(path: str | Path, what: str, schema: str, error: type[RayaccelError] = RayaccelError,
                 directory: Path = SCHEMA_DIR) -> Any:
    """The document at ``path`` (JSON for ``.json``, else YAML), parsed within :mod:`reading`'s limits and
    checked against the shipped schema ``schema``; ``error`` with one line, ``<path>: invalid <what> at
    <where>: <message>``, naming its first problem. A content that passed before is not parsed or checked
    again (see the module's docstring)."""
    fmt = "json" if str(path).endswith(".json") else "yaml"
    shown = reading.shown(path)
    raw = reading.read_bytes(path, what, error)
    key = _key(raw, fmt, schema, directory)
    remembered = _recall(key)
    if remembered is not None:
        return remembered
    data = reading.parse(reading.decode(raw, shown, what, error), shown, what, fmt, error)
    errors = schema_errors(schema, data, directory)
    if errors:
        raise error(f"{shown}: invalid {what} {errors[0]}")
    _remember(key, data)
    return data


def _key(raw: bytes, fmt: str, schema: str, directory: Path) -> str:
    digest = hashlib.sha256()
    canonical_schema = json.dumps(load_schema(schema, directory), sort_keys=True, separators=(",", ":"))
    for part in (VERSION, fmt, schema, canonical_schema):
        digest.update(part.encode() + b"\0")
    digest.update(raw)
    return digest.hexdigest()


def _recall(key: str) -> Any:
    """The data remembered under ``key``; None when there is none or it is damaged."""
    try:
        entry = (cache_dir() / f"{key}.json").read_bytes()
        checksum, _, payload = entry.partition(b"\n")
        if hashlib.sha256(payload).hexdigest().encode() != checksum:
            return None
        document = json.loads(payload)
    except (OSError, ValueError):
        return None
    return document.get("data") if isinstance(document, dict) else None


def _remember(key: str, data: Any) -> None:
    """Remember ``data`` as passed, when JSON carries it exactly (YAML may give dates, or keys that are not
    strings: such a document is simply checked at every read)."""
    try:
        payload = json.dumps({"data": data}, allow_nan=False, separators=(",", ":")).encode()
        if json.loads(payload)["data"] != data:
            return
    except (TypeError, ValueError, RecursionError):
        return
    directory = cache_dir()
    with contextlib.suppress(OSError):  # no cache, no harm: the next read checks again
        directory.mkdir(parents=True, exist_ok=True)
        _prune(directory)
        write_atomically(directory / f"{key}.json", hashlib.sha256(payload).hexdigest().encode() + b"\n" + payload,
                         durable=False)


def _prune(directory: Path) -> None:
    entries = [e for e in os.scandir(directory) if e.name.endswith(".json")]
    if len(entries) < MAX_ENTRIES:
        return
    entries.sort(key=lambda e: e.stat().st_mtime)
    for entry in entries[:len(entries) - MAX_ENTRIES + 1]:
        with contextlib.suppress(OSError):
            os.unlink(entry.path)
