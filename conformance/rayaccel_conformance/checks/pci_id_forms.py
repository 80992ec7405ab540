"""A PCI device id printed in another form (issue 46, mutation round 9): the forms, and the host with every place
that states a device's id rewritten in one of them. Pure helpers; RAC231 builds each host and grades it.

Tools print the same id in several forms: the kernel's sysfs ``device`` file ``0x2330``, ``nvidia-smi
--query-gpu=pci.device_id`` upper-case hex (``0x233010DE``), ``lspci -n`` no prefix (``10de:2330``). A plugin
whose parser meets another form than its fixture's must normalise it to the record's form (``0x`` and four
lower-case hex digits) or refuse it (the id unknown, the device kept): a parser that lets it through loses the
device to the record's validation, one that cuts it gives another card's id. A decimal form is not used: read as
hex without the prefix it is a valid other id, so no plugin can tell it apart.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

#: (what the form is, the canonical id ``0x0a01`` written in it).
FORMS: tuple[tuple[str, Callable[[str], str]], ...] = (
    ("upper-case hex", lambda pci: "0x" + pci[2:].upper()),
    ("hex without 0x", lambda pci: pci[2:]),
    ("five hex digits", lambda pci: "0x0" + pci[2:]),
)


def _token(pci: str) -> re.Pattern[str]:
    """The id as a whole token: not part of a longer hex run (``0x233010DE`` holds ``0x2330`` but never states
    it alone)."""
    return re.compile(rf"(?<![0-9A-Za-z]){re.escape(pci)}(?![0-9A-Za-z])", re.IGNORECASE)


def _rewritten(value: Any, token: re.Pattern[str], text: str) -> tuple[Any, int]:
    """A library's data with each string that is the id (and nothing else) written as ``text``."""
    if isinstance(value, str):
        return (text, 1) if token.fullmatch(value.strip()) else (value, 0)
    if isinstance(value, dict):
        pairs = {k: _rewritten(v, token, text) for k, v in value.items()}
        return {k: v for k, (v, _) in pairs.items()}, sum(n for _, n in pairs.values())
    if isinstance(value, list):
        items = [_rewritten(v, token, text) for v in value]
        return [v for v, _ in items], sum(n for _, n in items)
    return value, 0


def host_with_id_in_form(host: dict[str, Any], pci: str, text: str) -> tuple[dict[str, Any], int]:
    """``host`` (a fixture's host state, as JSON) with every place stating the PCI device id ``pci`` (a file's
    text, a command's or an HTTP answer's body, a string in a library's data) stating ``text`` instead; and how
    many places were rewritten."""
    token = _token(pci)
    count = 0

    def sub(value: str) -> str:
        nonlocal count
        new, n = token.subn(text, value)
        count += n
        return new

    files = {path: sub(content) if isinstance(content, str) else content
             for path, content in (host.get("files") or {}).items()}
    commands = {line: {**answer, "stdout": sub(answer.get("stdout") or "")}
                for line, answer in (host.get("commands") or {}).items()}
    http = {url: {**answer, "body": sub(answer.get("body") or "")} for url, answer in (host.get("http") or {}).items()}
    libraries, in_data = _rewritten(host.get("libraries") or {}, token, text)
    return {**host, "files": files, "commands": commands, "http": http, "libraries": libraries}, count + in_data
