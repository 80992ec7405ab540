"""Documents read from files and checked against a shipped JSON Schema, each content checked once.

A fixture or SKU catalog is read by every command that builds an inventory, and by each plugin's worker
process. Parsing its YAML and checking it against its JSON Schema (importing ``yaml`` and ``jsonschema`` for
it) costs ~0.15 s of CPU per process, although the files change rarely. So a document that passed is
remembered, as its parsed data, under a key made of everything the verdict depends on: the file's bytes, its
format, the schema (as loaded) and :data:`VERSION`. Any change to one of them is a new key, checked afresh;
nothing but a pass is remembered, so every failure is found and worded as before. The model's own checks
(:func:`rayaccel.schemas.validate_document`) run on every read.

The cache may only save time, never change a result, so it trusts nothing it cannot prove it wrote:

- entries live in ``$XDG_CACHE_HOME/rayaccel/checked`` (default ``~/.cache/rayaccel/checked``), a folder
  used only when it is a real directory (never a symlink) this user owns and no one else may write; every
  file in it is opened relative to it, without following a symlink;
- each entry is ``checked-<key>.json``: an HMAC-SHA256 tag, a newline, the payload (``{"data": ...}`` as
  JSON). The tag is keyed by a per-user secret (32 random bytes in the folder's ``.secret``, mode 0600) over
  the key (the file's bytes, format, schema and :data:`VERSION`) and the payload, so an entry anyone could
  compute (a plain digest) or copy from another key is not one;
- an entry is read only when it is a regular file of this user's, opened non-blocking (a FIFO never
  hangs a read), at most :data:`MAX_ENTRY_BYTES` (a link to /dev/zero or a huge file is ignored);
- an entry that fails any of these is ignored and the document checked afresh; a folder that cannot be
  used only means nothing is remembered. At most :data:`MAX_ENTRIES` are kept, the oldest removed first,
  and only files named as entries whose tag proves this cache wrote them are ever removed.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import os
import re
import secrets
import stat
from pathlib import Path
from typing import Any

from rayaccel.errors import RayaccelError
from rayaccel.files import reading
from rayaccel.schemas import SCHEMA_DIR, load_schema, schema_errors

#: Part of every key: a change to what an entry holds, or to how a document is read, starts afresh.
VERSION = "2"
#: Entries kept (a fixture's is ~40 KB); writing one more removes the oldest.
MAX_ENTRIES = 256
#: The largest entry written or read; a document whose entry would be larger is checked at every read.
MAX_ENTRY_BYTES = 4 * 1024 * 1024
#: The per-user key of the entries' tags, in the cache folder.
SECRET_NAME = ".secret"
SECRET_BYTES = 32
ENTRY_PREFIX = "checked-"
_ENTRY_NAME_RE = re.compile(rf"{ENTRY_PREFIX}([A-Za-z0-9_-]{{1,128}})\.json")
_OPEN_FLAGS = os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOCTTY", 0)


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


def _entry_name(key: str) -> str:
    return f"{ENTRY_PREFIX}{key}.json"


def _tag(secret: bytes, key: str, payload: bytes) -> bytes:
    return hmac.new(secret, key.encode() + b"\0" + payload, hashlib.sha256).hexdigest().encode()


def _open_folder(create: bool) -> int | None:
    """A descriptor of the cache folder, when it is a directory (not a symlink) this user owns that no one
    else may write; else None (no cache)."""
    directory = cache_dir()
    if create:
        with contextlib.suppress(OSError):
            os.makedirs(directory, mode=0o700, exist_ok=True)
    try:
        fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | _OPEN_FLAGS)
    except OSError:
        return None
    info = os.fstat(fd)
    if info.st_uid != os.geteuid() or info.st_mode & 0o022:
        os.close(fd)
        return None
    return fd


def _read_own(folder: int, name: str, limit: int, private: bool = False) -> bytes | None:
    """The bytes of ``name`` in ``folder`` when it is a regular file of this user's of at most ``limit`` bytes
    (``private``: that only they may read), read without following a symlink or blocking on a FIFO; None
    otherwise."""
    try:
        fd = os.open(name, os.O_RDONLY | _OPEN_FLAGS, dir_fd=folder)
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_uid != os.geteuid() or info.st_size > limit:
            return None
        if private and info.st_mode & 0o077:
            return None
        data = os.read(fd, limit + 1)
        return data if len(data) <= limit else None
    finally:
        os.close(fd)


def _secret(folder: int, create: bool) -> bytes | None:
    """This user's key of the tags: the folder's ``.secret`` when it is theirs alone, else (``create``) a new
    one; None when there is none to trust."""
    found = _read_own(folder, SECRET_NAME, SECRET_BYTES, private=True)
    if found is None and create:
        with contextlib.suppress(FileExistsError):  # another process made it first: theirs is read below
            _write_new(folder, SECRET_NAME, secrets.token_bytes(SECRET_BYTES), replace=False)
        found = _read_own(folder, SECRET_NAME, SECRET_BYTES, private=True)
    return found if found is not None and len(found) == SECRET_BYTES else None


def _write_new(folder: int, name: str, data: bytes, replace: bool = True) -> None:
    """``data`` as ``name`` in ``folder``, whole or not at all: a fresh 0600 file renamed (or linked, when
    not ``replace``) into place. The rename replaces a symlink of that name instead of following it."""
    temporary = f".{name}.{os.getpid()}.{secrets.token_hex(4)}.tmp"
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _OPEN_FLAGS, 0o600, dir_fd=folder)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        if replace:
            os.replace(temporary, name, src_dir_fd=folder, dst_dir_fd=folder)
        else:
            os.link(temporary, name, src_dir_fd=folder, dst_dir_fd=folder, follow_symlinks=False)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary, dir_fd=folder)


def _verified(folder: int, secret: bytes, key: str) -> Any:
    """The payload of ``key``'s entry when its tag proves this cache wrote it; None otherwise."""
    raw = _read_own(folder, _entry_name(key), MAX_ENTRY_BYTES)
    if raw is None:
        return None
    tag, _, payload = raw.partition(b"\n")
    if not hmac.compare_digest(tag, _tag(secret, key, payload)):
        return None
    return payload


def _recall(key: str) -> Any:
    """The data remembered under ``key``; None when there is none, or none this cache can prove it wrote."""
    folder = _open_folder(create=False)
    if folder is None:
        return None
    try:
        secret = _secret(folder, create=False)
        payload = _verified(folder, secret, key) if secret is not None else None
        document = json.loads(payload) if payload is not None else None
    except (OSError, ValueError, RecursionError):
        return None
    finally:
        os.close(folder)
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
    if len(payload) + 65 > MAX_ENTRY_BYTES:
        return
    folder = _open_folder(create=True)
    if folder is None:
        return
    with contextlib.suppress(OSError):  # no cache, no harm: the next read checks again
        try:
            secret = _secret(folder, create=True)
            if secret is not None:
                _prune(folder, secret)
                _write_new(folder, _entry_name(key), _tag(secret, key, payload) + b"\n" + payload)
        finally:
            os.close(folder)


def _prune(folder: int, secret: bytes) -> None:
    """Make room for one entry: the oldest entries go, and only those whose tag proves this cache wrote them."""
    entries = []
    for entry in os.scandir(folder):
        match = _ENTRY_NAME_RE.fullmatch(entry.name)
        if match and entry.is_file(follow_symlinks=False):
            entries.append((entry.stat(follow_symlinks=False).st_mtime, entry.name, match.group(1)))
    if len(entries) < MAX_ENTRIES:
        return
    entries.sort()
    for _, name, key in entries[:len(entries) - MAX_ENTRIES + 1]:
        if _verified(folder, secret, key) is not None:
            with contextlib.suppress(OSError):
                os.unlink(name, dir_fd=folder)
