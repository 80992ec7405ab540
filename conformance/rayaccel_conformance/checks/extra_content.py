"""Vendor answers carrying more than the plugin reads: RAC261's perturbations and verdict.

A tool's next version adds fields to the records it prints, and every Prometheus exporter serves its own process
and runtime series beside the devices' (``process_cpu_seconds_total``, ``go_goroutines``: no device labels). The
SDK cannot know a vendor's format, but it knows these two shapes of "more": a plugin that reads what it needs
gives the same inventory with them.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

from rayaccel.records import FamilyInventory

#: What every Prometheus client library serves beside an exporter's own series (no labels at all).
EXPORTER_SERIES = (
    "# HELP process_cpu_seconds_total Total user and system CPU time spent in seconds.\n"
    "# TYPE process_cpu_seconds_total counter\n"
    "process_cpu_seconds_total 12.47\n"
    "# HELP go_goroutines Number of goroutines that currently exist.\n"
    "# TYPE go_goroutines gauge\n"
    "go_goroutines 31\n")
#: The field a newer tool version adds to each record (a name no tool uses yet, a value tools print for "none").
ADDED_FIELD = ("rayaccel_added_field", "N/A")
_PROMETHEUS = re.compile(r"^# TYPE \S+ \S+", re.MULTILINE)
_MODULE_VERSION = re.compile(r"/sys/module/([^/]+)/version")


def _with_field(data: Any) -> tuple[Any, int]:
    """``data`` with the added field in every record (an object none of whose keys holds a digit: a map keyed by
    device index or id is not a record), and how many records got it."""
    if isinstance(data, list):
        done = [_with_field(item) for item in data]
        return [item for item, _ in done], sum(n for _, n in done)
    if not isinstance(data, dict):
        return data, 0
    done_items = {key: _with_field(value) for key, value in data.items()}
    out = {key: value for key, (value, _) in done_items.items()}
    count = sum(n for _, n in done_items.values())
    if data and not any(ch.isdigit() for key in data for ch in str(key)):
        out[ADDED_FIELD[0]] = ADDED_FIELD[1]
        count += 1
    return out, count


def with_added_fields(host: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """The host state with the added field in every record of each command's JSON output; the commands changed."""
    state: dict[str, Any] = json.loads(json.dumps(host))
    changed = []
    for line, answer in (state.get("commands") or {}).items():
        try:
            data = json.loads((answer or {}).get("stdout") or "")
        except (ValueError, TypeError):
            continue
        data, count = _with_field(data)
        if count:
            answer["stdout"] = json.dumps(data)
            changed.append(f"`{line}` ({count} records)")
    return state, changed


def with_exporter_series(host: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """The host state with the exporter's own series after every Prometheus text it serves (an HTTP body or a
    command's output); the answers changed."""
    state: dict[str, Any] = json.loads(json.dumps(host))
    changed = []
    for url, answer in (state.get("http") or {}).items():
        body = (answer or {}).get("body")
        if isinstance(body, str) and _PROMETHEUS.search(body):
            answer["body"] = body.rstrip("\n") + "\n" + EXPORTER_SERIES
            changed.append(f"GET {url}")
    for line, answer in (state.get("commands") or {}).items():
        stdout = (answer or {}).get("stdout")
        if isinstance(stdout, str) and _PROMETHEUS.search(stdout):
            answer["stdout"] = stdout.rstrip("\n") + "\n" + EXPORTER_SERIES
            changed.append(f"`{line}`")
    return state, changed


def srcversion(module: str, version: str) -> str:
    """A module's source checksum as the kernel shows it: 23 upper-case hex digits (modpost's MD4 of the sources,
    cut), here made from the module's name and version so each fixture's is its own and the same every run."""
    return hashlib.sha256(f"{module}/{version}".encode()).hexdigest()[:23].upper()


def with_module_checksums(host: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """The host state with ``/sys/module/<name>/srcversion`` beside every loaded module's ``version`` that lacks
    it: "If the module source has MODULE_VERSION", the kernel writes both, the version and the checksum of the
    source code, for a module loaded at run time (Documentation/ABI/stable/sysfs-module; one built into the kernel
    shows the version alone); the files added."""
    state: dict[str, Any] = json.loads(json.dumps(host))
    files = state.get("files") or {}
    changed = []
    for path, text in list(files.items()):
        module = _MODULE_VERSION.fullmatch(path)
        added = f"/sys/module/{module.group(1)}/srcversion" if module else ""
        if module and isinstance(text, str) and text.strip() and added not in files:
            files[added] = srcversion(module.group(1), text.strip()) + "\n"
            changed.append(f"file {added}")
    return state, changed


def checksum_taken_for_a_version(host: dict[str, Any], differences: list[str]) -> list[str]:
    """The added checksums that now show up in the plugin's answers, each named as what it is."""
    files = host.get("files") or {}
    return [f"{path} holds {files[path].strip()!r}, the checksum of the module's source the kernel writes beside its "
            f"version, and the plugin now answers it: a version is read from srcversion, which is no version; read "
            f"{path.rsplit('/', 1)[0]}/version" for path in files
            if path.endswith("/srcversion") and any(files[path].strip() in d for d in differences)]


def answers(family: FamilyInventory | None) -> dict[str, Any]:
    """What the plugin answered about its devices: records, links, health and metrics, each by what it is about."""
    if family is None:
        return {}
    found: dict[str, Any] = {f"device {d.id}": d.model_dump(mode="json") for d in family.devices}
    found.update({f"health of {h.device}": h.model_dump(mode="json") for h in family.health})
    found.update({f"metric {s.name} of {s.device}": s.value for s in family.metrics})
    found["topology"] = family.topology.model_dump(mode="json")
    found["resources"] = dict(family.resources)
    found["labels"] = dict(family.labels)
    return found


def answer_differences(before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    wrong = [f"{where} is gone" for where in before if where not in after]
    wrong += [f"{where} is new" for where in after if where not in before]
    wrong += [f"{where} changed ({_first_change(before[where], after[where])})" for where in before
              if where in after and before[where] != after[where]]
    return wrong


def _first_change(a: Any, b: Any, at: str = "") -> str:
    if isinstance(a, dict) and isinstance(b, dict):
        for key in sorted(set(a) | set(b), key=str):
            if a.get(key) != b.get(key):
                return _first_change(a.get(key), b.get(key), f"{at}.{key}" if at else str(key))
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            if x != y:
                return _first_change(x, y, f"{at}[{i}]")
    return f"{at or 'value'}: {str(a)[:80]} -> {str(b)[:80]}"
