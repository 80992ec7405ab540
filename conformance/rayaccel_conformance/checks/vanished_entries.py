"""A device entry listed by one call and gone when the next reads it: no crash, and the other devices kept
(RAC211's ``an-entry-gone-when-read-is-no-crash``).

A plugin lists a directory (``/dev/vfio``, ``/sys/class/accel``, an IOMMU group's ``devices``) and then reads
each entry's files. Between the two calls a device can go: a chip unbound from its driver or removed mid-probe
takes its sysfs directory and its group with it, and the read that follows answers ENOENT (the kernel removes
a device's kobject directory on unbind/remove, docs.kernel.org/filesystems/sysfs.html, "the directory is removed
when the kobject is unregistered"). Every fixture is one instant, so a read that raises FileNotFoundError out of
the hook passed every check. The suite takes one device's own entries, every directory of the fixture holding
that device's files alone (its PCI address in the path, or a segment numbering it), keeps them in the listings
that name them, and answers every read under them (a file, ``exists``, ``is_dir``, a listing of their own) as
the kernel does once the device is gone. Held as RAC211's one-device damage: no hook raises, every other device
keeps its health and facts, and the device is left out, reported, or kept with what it cannot read unknown.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import PurePosixPath
from typing import Any

from rayaccel.hosts.seam import (
    DEFAULT_COMMAND_TIMEOUT,
    DEFAULT_HTTP_TIMEOUT,
    CommandResult,
    Host,
    HttpResponse,
    LibraryAdapter,
)
from rayaccel.records import Device, FamilyInventory
from rayaccel_conformance.checks.perturbations import device_files


def _norm(path: str) -> str:
    return str(PurePosixPath("/" + path.strip("/")))


def vanished_entries(files: Iterable[str], device: Device) -> list[str]:
    """The topmost directories of the fixture that hold ``device``'s own files and nothing else (a sysfs entry
    named by its PCI address, an IOMMU group of its functions alone); empty when its files sit among others'."""
    every = sorted({_norm(f) for f in files})
    own = set(device_files(every, device))
    if not own:
        return []
    holding: dict[str, set[str]] = {}
    for path in every:
        for parent in PurePosixPath(path).parents:
            holding.setdefault(str(parent), set()).add(path)
    roots = set()
    for path in own:
        top = None
        for parent in PurePosixPath(path).parents:
            if str(parent) == "/" or not holding[str(parent)] <= own:
                break
            top = str(parent)
        if top is not None:
            roots.add(top)
    return sorted(r for r in roots if not any(r != o and r.startswith(o + "/") for o in roots))


class VanishedEntryHost:
    """A host where the ``gone`` entries are still named by the listings of their parents (listed before the
    device went) while every read under them answers as the kernel does after: FileNotFoundError, absent.

    ``before`` answers the listings outside the entries; ``after`` (the same machine without the entries' files)
    answers everything else, so commands, libraries and the environment are the machine's own."""

    def __init__(self, before: Host, after: Host, gone: Iterable[str]) -> None:
        self._before, self._after = before, after
        self._gone = tuple(_norm(g) for g in gone)

    def _inside(self, path: str) -> bool:
        path = _norm(path)
        return any(path == g or path.startswith(g + "/") for g in self._gone)

    @property
    def name(self) -> str:
        return self._after.name

    @property
    def simulated(self) -> bool:
        return self._after.simulated

    def environ(self) -> Mapping[str, str]:
        return self._after.environ()

    def getenv(self, key: str, default: str | None = None) -> str | None:
        return self._after.getenv(key, default)

    def read_text(self, path: str) -> str:
        return self._after.read_text(path)

    def exists(self, path: str) -> bool:
        return self._after.exists(path)

    def is_dir(self, path: str) -> bool:
        return self._after.is_dir(path)

    def list_dir(self, path: str) -> list[str]:
        if self._inside(path):
            raise FileNotFoundError(path)
        return self._before.list_dir(path)

    def glob(self, pattern: str) -> list[str]:
        parent = pattern.rpartition("/")[0] or "/"
        return [] if self._inside(parent) else self._before.glob(pattern)

    def which(self, program: str) -> str | None:
        return self._after.which(program)

    def run(self, argv: Sequence[str], timeout: float = DEFAULT_COMMAND_TIMEOUT) -> CommandResult:
        return self._after.run(argv, timeout)

    def http_get(self, url: str, headers: Mapping[str, str] | None = None,
                 timeout: float = DEFAULT_HTTP_TIMEOUT) -> HttpResponse:
        return self._after.http_get(url, headers, timeout)

    def library(self, adapter: LibraryAdapter) -> Any:
        return self._after.library(adapter)


def entry_files_removed(files: Mapping[str, Any], gone: Iterable[str]) -> dict[str, None]:
    """A merge patch removing every fixture file (and directory key) under the ``gone`` entries."""
    roots = tuple(_norm(g) for g in gone)
    return {key: None for key in files
            if any(_norm(key) == r or _norm(key).startswith(r + "/") for r in roots)}


def others_dropped(healthy: FamilyInventory, built: FamilyInventory | None, gone: Device) -> list[str]:
    """The other devices a build with ``gone``'s entry vanished left out: one card unbound is no reason to drop
    the rest, said or not (the machine still has them, and a node offering none loses every task for a race)."""
    kept = {d.id for d in built.devices} if built is not None else set()
    dropped = [d.id for d in healthy.devices if d.id != gone.id and d.id not in kept]
    if not dropped:
        return []
    return [f"{len(dropped)} other devices went with it ({', '.join(dropped[:3])}{', ...' if len(dropped) > 3 else ''}"
            f"): only {gone.id}'s entry is gone; keep every device whose own entry still reads"]
