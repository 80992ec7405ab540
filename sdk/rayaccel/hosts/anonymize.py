"""Anonymising a recording (``rayaccel record --anonymize``): host names, serials, UUIDs, MAC and IP
addresses replaced by keyed pseudonyms, the same everywhere in one recording, shapes and versions kept."""

from __future__ import annotations

import hashlib
import hmac
import os
import re
import secrets
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from rayaccel.errors import RayaccelError
from rayaccel.records import NodeInventory

_UUID = re.compile(r"\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b")
_MAC = re.compile(r"\b[0-9a-fA-F]{2}(?::[0-9a-fA-F]{2}){5}\b")
_IPV4 = re.compile(r"(?<![\w.])(?:\d{1,3}\.){3}\d{1,3}(?![\w.])")
_KEEP_IPS = {"127.0.0.1", "0.0.0.0", "169.254.169.254", "255.255.255.255"}


class Anonymizer:
    """Replaces serials, UUIDs, MACs, hostnames and IPs consistently: the same input gives the same token
    everywhere (keys and values, inside command output and file contents) and in every recording made
    with the same key, so a fault recorded later patches the same tokens. Tokens keep each string's shape
    (hex stays hex, digits stay digits), so a plugin parses them as it parses the originals."""

    def __init__(self, key: bytes, names: Sequence[str] = ()) -> None:
        self._key = key
        # A name holding a UUID or a MAC is covered by that pattern (and keeps its prefix, e.g. GPU-<uuid>).
        self._names = sorted({n for n in names if len(n) >= 4 and not _UUID.search(n) and not _MAC.search(n)},
                             key=len, reverse=True)
        self.replaced: dict[str, str] = {}

    def token(self, original: str) -> str:
        if original not in self.replaced:
            digest = hmac.new(self._key, original.encode(), hashlib.sha256).digest() * 8
            out = []
            for i, ch in enumerate(original):
                b = digest[i % len(digest)]
                if ch in "0123456789abcdef" and _looks_hex(original):
                    out.append("0123456789abcdef"[b % 16])
                elif ch in "0123456789ABCDEF" and _looks_hex(original):
                    out.append("0123456789ABCDEF"[b % 16])
                elif ch.isdigit():
                    out.append("0123456789"[b % 10])
                elif ch.isupper():
                    out.append("ABCDEFGHIJKLMNOPQRSTUVWXYZ"[b % 26])
                elif ch.islower():
                    out.append("abcdefghijklmnopqrstuvwxyz"[b % 26])
                else:
                    out.append(ch)
            self.replaced[original] = "".join(out)
        return self.replaced[original]

    def _ip(self, original: str) -> str:
        if original in _KEEP_IPS or original.startswith("127.") or any(int(p) > 255 for p in original.split(".")):
            return original
        if original not in self.replaced:
            digest = hmac.new(self._key, original.encode(), hashlib.sha256).digest()
            self.replaced[original] = f"10.{digest[0]}.{digest[1]}.{1 + digest[2] % 254}"
        return self.replaced[original]

    def text(self, value: str) -> str:
        for name in self._names:
            if name in value:
                value = re.sub(rf"(?<![A-Za-z0-9]){re.escape(name)}(?![A-Za-z0-9])",
                               lambda m: self.token(m.group(0)), value)
        value = _UUID.sub(lambda m: self.token(m.group(0)), value)
        value = _MAC.sub(lambda m: self.token(m.group(0)), value)
        return "\n".join(line if "version" in line.lower() else _IPV4.sub(lambda m: self._ip(m.group(0)), line)
                         for line in value.split("\n"))

    def data(self, value: Any) -> Any:
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, list):
            return [self.data(v) for v in value]
        if isinstance(value, dict):
            return {self.text(k): self.data(v) for k, v in value.items()}
        return value


def _looks_hex(value: str) -> bool:
    return bool(re.fullmatch(r"[0-9a-fA-F:.-]+", value))


def sensitive_names(inventory: NodeInventory, host_state: Mapping[str, Any]) -> list[str]:
    """Strings to anonymise besides the patterns: the hostname, device serials and ids (UUIDs or serials)."""
    names = [str(host_state.get("hostname") or "")]
    for family in inventory.families:
        for device in family.devices:
            names.append(device.id)
            for key, value in device.attributes.items():
                if "serial" in key.lower() or "uuid" in key.lower():
                    names.append(str(value))
    names += _serials_in(host_state)
    return [n for n in names if n]


def _serials_in(value: Any, key: str = "") -> list[str]:
    found: list[str] = []
    if isinstance(value, dict):
        for k, v in value.items():
            found += _serials_in(v, k)
            if "serial" in k.lower() and "(" in k:  # a library call such as nvmlDeviceGetSerial(...)
                found += [a for a in _strings(v)]
    elif isinstance(value, list):
        for v in value:
            found += _serials_in(v, key)
    elif isinstance(value, str) and ("serial" in key.lower() or key.lower().endswith("/serial_number")):
        found.append(value.strip())
    return found


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value.strip()]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


def anonymize_key(path: Path | None = None) -> bytes:
    """The secret that makes tokens consistent across recordings. The default one
    (``~/.config/rayaccel/anonymize.key``) is created on first use, mode 0600; one given by path must exist."""
    from rayaccel.files import reading

    if path is None:
        path = Path.home() / ".config" / "rayaccel" / "anonymize.key"
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            with open(path, "x", encoding="ascii", opener=lambda p, flags: os.open(p, flags, 0o600)) as f:
                f.write(secrets.token_hex(32) + "\n")
    key = reading.read_text(path, "anonymize key", RayaccelError).strip()
    if len(key) < 16:
        raise RayaccelError(f"{path}: an anonymize key is at least 16 characters of secret text; create one with "
                            "'head -c 32 /dev/urandom | base64 > FILE'")
    return key.encode()
