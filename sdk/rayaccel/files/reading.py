"""Reading the data files a user or a plugin hands to rayaccel (fixtures, SKU catalogs, reports), safely.

A path given on the command line may name anything: a directory, a FIFO that never answers, ``/dev/zero``,
a binary, a file in another encoding, a JSON or YAML document nested 100,000 levels deep. Each of those ends
here as one :class:`~rayaccel.errors.RayaccelError` line (the caller picks the subclass) instead of a hang,
a MemoryError, a UnicodeDecodeError or a RecursionError:

- only regular files are read, and the check comes before the read (opened non-blocking, then ``fstat``);
- at most :data:`MAX_BYTES` are read;
- the text must be UTF-8 without NUL bytes;
- a parsed document may be nested at most :data:`MAX_DEPTH` levels and hold at most :data:`MAX_NODES`
  values (YAML aliases count once per use, so an alias bomb is refused too).
"""

from __future__ import annotations

import errno
import json
import os
import stat
from pathlib import Path
from typing import Any

from rayaccel.errors import RayaccelError

#: Largest input file read, in bytes. The biggest shipped fixture is a few hundred KiB.
MAX_BYTES = 16 * 1024 * 1024
#: Deepest nesting of lists/mappings accepted in a parsed document.
MAX_DEPTH = 64
#: Most values (scalars, lists, mappings) in a parsed document.
MAX_NODES = 1_000_000


def read_text(path: str | Path, what: str, error: type[RayaccelError] = RayaccelError,
              max_bytes: int = MAX_BYTES, follow_symlinks: bool = True) -> str:
    """The UTF-8 text of a regular file, or ``error`` with one line naming the file and the fix."""
    return decode(read_bytes(path, what, error, max_bytes, follow_symlinks), shown(path), what, error)


def read_bytes(path: str | Path, what: str, error: type[RayaccelError] = RayaccelError,
               max_bytes: int = MAX_BYTES, follow_symlinks: bool = True) -> bytes:
    """The bytes of a regular file (at most ``max_bytes``), or ``error`` with one line naming the file and the fix.
    ``follow_symlinks=False``: a symlink is refused too (a file rayaccel made and others may replace)."""
    name = shown(path)
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags if follow_symlinks else flags | os.O_NOFOLLOW)
    except OSError as e:
        if e.errno == errno.ELOOP and not follow_symlinks:
            raise error(f"{what} {name} is a symlink; give the path of the file itself") from None
        if e.errno == errno.ENOENT:
            raise error(f"{what} file {name} does not exist") from None
        raise error(f"cannot read {what} {name}: {e.strerror or e}") from None
    except ValueError:  # a NUL byte in the name
        raise error(f"{what} path {name!r} contains a NUL byte") from None
    try:
        info = os.fstat(fd)
        if stat.S_ISDIR(info.st_mode):
            raise error(f"{what} {name} is a directory; give the path of a file")
        if not stat.S_ISREG(info.st_mode):
            raise error(f"{what} {name} is not a regular file (a FIFO, device or socket); give the path of a file")
        if info.st_size > max_bytes:
            raise error(f"{what} {name} is {info.st_size} bytes, more than the {max_bytes} allowed")
        chunks: list[bytes] = []
        size = 0
        while size <= max_bytes:  # a file can grow after the fstat: the limit holds for what is read
            chunk = os.read(fd, min(1 << 20, max_bytes + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        if size > max_bytes:
            raise error(f"{what} {name} is more than the {max_bytes} bytes allowed")
    except OSError as e:
        raise error(f"cannot read {what} {name}: {e.strerror or e}") from None
    finally:
        os.close(fd)
    return b"".join(chunks)


def decode(data: bytes, shown: str, what: str, error: type[RayaccelError] = RayaccelError) -> str:
    """A file's bytes as UTF-8 text without NUL bytes (``shown``: the file as a message names it)."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise error(f"{what} {shown} is not UTF-8 text (byte 0x{data[e.start]:02x} at offset {e.start}); "
                    "save it as UTF-8") from None
    if "\x00" in text:
        raise error(f"{what} {shown} is binary (it contains NUL bytes), not a text file")
    return text


#: Most flow brackets (``[``/``{``) in a document read with libyaml's C parser straight away: it recurses without
#: a depth check, so beyond this many its scanner first shows that no flow collection nests past MAX_DEPTH (or
#: refuses the document at once); without libyaml, the pure-Python parser, which stops at Python's recursion limit.
C_PARSER_MAX_BRACKETS = 10_000


def safe_load_yaml(text: str) -> Any:
    """``yaml.safe_load``, ~15x faster with libyaml where the document cannot nest deeply enough to matter
    (block nesting needs indentation: ~5,000 levels fit in MAX_BYTES). Errors come from the pure-Python
    parser, so messages do not depend on whether libyaml is installed."""
    import yaml  # only YAML documents need it (~20 ms of imports)

    loader = getattr(yaml, "CSafeLoader", None)
    if loader is not None:
        many = text.count("[") + text.count("{") > C_PARSER_MAX_BRACKETS
        if not many or _flow_nesting_within(text, MAX_DEPTH, yaml):
            try:
                return yaml.load(text, Loader=loader)  # CSafeLoader: the safe loader, in C
            except yaml.YAMLError:
                pass
    return yaml.safe_load(text)


def _flow_nesting_within(text: str, limit: int, yaml: Any) -> bool:
    """Whether no flow collection of ``text`` nests deeper than ``limit`` (libyaml's scanner, which counts
    levels in a loop: then its parser's recursion is bounded). Too deep raises RecursionError at once, as the
    pure-Python parser would after ~1 s of recursing; text libyaml cannot scan is left to the pure parser."""
    opening = (yaml.FlowSequenceStartToken, yaml.FlowMappingStartToken)
    closing = (yaml.FlowSequenceEndToken, yaml.FlowMappingEndToken)
    scanner = yaml.CBaseLoader(text)
    depth = 0
    try:
        while (token := scanner.get_token()) is not None:
            if isinstance(token, opening):
                depth += 1
                if depth > limit:
                    raise RecursionError(f"flow collections nested deeper than {limit} levels")
            elif isinstance(token, closing):
                depth -= 1
    except yaml.YAMLError as e:
        if "maximum nesting depth" in str(e):  # libyaml >= 0.2.5 stops at 1,000 levels itself
            raise RecursionError(f"flow collections nested deeper than {limit} levels") from None
        return False
    finally:
        scanner.dispose()
    return True


def _yaml_error() -> type[Exception]:
    import yaml

    return yaml.YAMLError


def parse(text: str, origin: str, what: str, fmt: str, error: type[RayaccelError] = RayaccelError) -> Any:
    """Parse JSON (``fmt="json"``) or YAML text, within the depth and size limits."""
    kind = "JSON" if fmt == "json" else "YAML"
    try:
        data = json.loads(text) if fmt == "json" else safe_load_yaml(text)
    except RecursionError:
        raise error(f"{origin}: the {what} is nested more deeply than {MAX_DEPTH} levels") from None
    except Exception as e:  # json's ValueError, or yaml's YAMLError (yaml imported only for YAML)
        if not isinstance(e, ValueError) and not (fmt != "json" and isinstance(e, _yaml_error())):
            raise
        lines = str(e).strip().splitlines()
        first = lines[0] if lines else type(e).__name__  # a parser may quote the text: an excerpt at most
        first = (first if first.isprintable() else ascii(first)[1:-1])[:160]
        raise error(f"{origin}: not valid {kind}: {first}") from None
    check_shape(data, origin, what, error)
    return data


def load(path: str | Path, what: str, error: type[RayaccelError] = RayaccelError) -> Any:
    """A JSON (``.json``) or YAML (anything else) file, read and parsed within every limit."""
    fmt = "json" if str(path).endswith(".json") else "yaml"
    return parse(read_text(path, what, error), shown(path), what, fmt, error)


#: Values walked one by one before the rest is measured (:func:`check_shape`): more than most files hold.
WALKED_VALUES = 100_000


def check_shape(data: Any, origin: str, what: str, error: type[RayaccelError] = RayaccelError) -> None:
    """Refuse data nested deeper than MAX_DEPTH or holding more than MAX_NODES values, counted as the data reads
    written out: a list or mapping met twice (a YAML alias) counts each time, one holding itself never ends."""
    verdict = _walked(data)
    if verdict == "unfinished":  # a large document, or aliases repeating a part: each part measured once
        verdict = _measured(data)
    if verdict == "deep":
        raise error(f"{origin}: the {what} is nested more deeply than {MAX_DEPTH} levels")
    if verdict == "many":
        raise error(f"{origin}: the {what} holds more than {MAX_NODES} values")


def _walked(data: Any) -> str | None:
    """The data walked iteratively, a container's values counted together and its containers walked: "deep",
    "many", None (within both limits), or "unfinished" past WALKED_VALUES (a YAML alias bomb of 9**9 strings
    would take a million steps here)."""
    nodes = 1
    stack: list[tuple[Any, int]] = [(data, 0)] if isinstance(data, dict | list) else []
    while stack:
        value, depth = stack.pop()
        if depth >= MAX_DEPTH:
            return "deep"
        children = value.values() if isinstance(value, dict) else value
        nodes += len(children)
        if nodes > MAX_NODES:
            return "many"
        if nodes > WALKED_VALUES:
            return "unfinished"
        stack.extend((child, depth + 1) for child in children if isinstance(child, dict | list))
    return None


def _measured(data: Any) -> str | None:
    """What :func:`_walked` would say without the step limit, each list or mapping measured once (its values
    written out, its levels) and added up wherever it appears again: "deep", "many" or None."""
    if not isinstance(data, dict | list):
        return None

    def frame(value: dict[Any, Any] | list[Any]) -> list[Any]:
        """[container, the containers in it, the next one's index, values so far (itself and its scalars), levels]"""
        children = value.values() if isinstance(value, dict) else value
        containers = [c for c in children if isinstance(c, dict | list)]
        return [value, containers, 0, 1 + len(children) - len(containers), 1]

    measured: dict[int, tuple[int, int]] = {}  # id -> (values in it, written out; levels of lists and mappings)
    frames = [frame(data)]
    while frames:
        top = frames[-1]
        if top[3] > MAX_NODES:
            return "many"
        if top[2] < len(top[1]):
            child = top[1][top[2]]
            top[2] += 1
            known = measured.get(id(child))
            if known is None:  # len(frames) is the child's depth (the data's own is 0); one holding itself
                if len(frames) >= MAX_DEPTH:  # is met again unmeasured, deeper each time
                    return "deep"
                frames.append(frame(child))
                continue
            size, levels = known
        else:
            frames.pop()
            size, levels = measured[id(top[0])] = (top[3], top[4])
            if not frames:
                return "many" if size > MAX_NODES else None
            top = frames[-1]
        if len(frames) + levels > MAX_DEPTH:
            return "deep"
        top[3] += size
        top[4] = max(top[4], levels + 1)
    return None


def shown(path: str | Path) -> str:
    """A path as a message names it: cut in the middle when it is long, control characters escaped."""
    text = str(path)
    if any(not c.isprintable() for c in text):
        text = ascii(text)[1:-1]
    return text if len(text) <= 120 else f"{text[:60]}...{text[-40:]} ({len(text)} characters)"
