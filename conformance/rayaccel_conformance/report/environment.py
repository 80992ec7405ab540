"""The environment manifest of a conformance run: every version that can change a plugin's behaviour, explicitly.

The kernel, the OS, Python, Ray, torch, rayaccel; per plugin its release and the installed version of each
requirement of its distribution (``importlib.metadata``); per family the driver, runtime and firmware versions
its devices report, read from the inventory the checks built (the records carry ``driver_version`` and
``runtime_version``; firmware is any device attribute named ``*firmware*``, ``*vbios*``), so no new hook is
needed; and the hardware fingerprint: sha256 over the graded devices, each id hashed (the fixtures' devices on
a simulated run, this machine's on a real one).
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.metadata
import json
import platform
from collections.abc import Sequence
from typing import Any

#: Device attributes that carry firmware versions, by a part of their name.
FIRMWARE_KEYS = ("firmware", "vbios", "fw_version")


def _installed(distribution: str) -> str | None:
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return None


def os_name() -> str:
    try:
        release = platform.freedesktop_os_release()
        return release.get("PRETTY_NAME") or release.get("NAME") or platform.platform()
    except OSError:  # not Linux, or no os-release file
        return platform.platform()


def dependencies(distribution: str | None) -> dict[str, str]:
    """Each requirement of the distribution (extras' markers left out) -> the version installed here."""
    from packaging.requirements import InvalidRequirement, Requirement

    if not distribution:
        return {}
    try:
        wanted = importlib.metadata.requires(distribution) or []
    except importlib.metadata.PackageNotFoundError:
        return {}
    found: dict[str, str] = {}
    for line in wanted:
        try:
            requirement = Requirement(line)
        except InvalidRequirement:
            continue
        if requirement.marker is not None and "extra" in str(requirement.marker):
            continue  # an optional extra's requirement: installed or not, it is not the plugin's own need
        found[requirement.name] = _installed(requirement.name) or "not installed"
    return dict(sorted(found.items()))


def release_of(subject: Any) -> str | None:
    """The plugin's version: its distribution's, else its module's ``__version__``."""
    if subject.version:
        return str(subject.version)
    if not subject.loaded:
        return None
    module = getattr(subject.manager.plugin(subject.name), "module", None)
    version = getattr(module, "__version__", None)
    return str(version) if isinstance(version, str) and version else None


def _inventories(subject: Any, hardware: str) -> list[Any]:
    from rayaccel.hosts.seam import RealHost
    from rayaccel_conformance.registry import CheckFailed

    if not subject.loaded:
        return []
    found = []
    for ref in subject.fixture_paths():
        try:
            found.append(subject.inventory(ref))  # built once per run: the checks' own
        except (CheckFailed, Exception):
            continue
    if hardware == "real":
        with contextlib.suppress(CheckFailed, Exception):
            found.append(subject.build(RealHost(), with_metrics=False))
    return found


def _family_versions(inventories: Sequence[Any]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    by_family: dict[str, dict[str, set[str]]] = {}
    devices: list[dict[str, Any]] = []
    for inventory in inventories:
        for fam in inventory.families:
            seen = by_family.setdefault(fam.family.name, {"driver": set(), "runtime": set(), "firmware": set()})
            for d in fam.devices:
                if d.driver_version:
                    seen["driver"].add(str(d.driver_version))
                if d.runtime_version:
                    seen["runtime"].add(str(d.runtime_version))
                for key, value in d.attributes.items():
                    if any(part in key.lower() for part in FIRMWARE_KEYS) and value is not None:
                        seen["firmware"].add(f"{key}={value}")
                devices.append({"family": fam.family.name, "product": d.product_name,
                                "pci_device_id": d.pci_device_id,
                                "id_sha256": hashlib.sha256(f"{fam.family.name}:{d.id}".encode()).hexdigest()})
    families = [{"family": name, **{k: sorted(v) for k, v in seen.items()}} for name, seen in sorted(by_family.items())]
    return families, devices


def collect(subjects: Sequence[Any], hardware: str) -> dict[str, Any]:
    """The manifest of this run, as the report's ``environment`` field holds it."""
    import rayaccel

    plugins = []
    every_device: list[dict[str, Any]] = []
    for subject in subjects:
        families, devices = _family_versions(_inventories(subject, hardware))
        every_device += devices
        plugins.append({"plugin": subject.name, "release": release_of(subject),
                        "dependencies": dependencies(subject.distribution), "families": families})
    unique = sorted({json.dumps(d, sort_keys=True) for d in every_device})
    fingerprint = "sha256:" + hashlib.sha256("\n".join(unique).encode("utf-8")).hexdigest()
    return {"kernel": platform.release(), "os": os_name(), "python": platform.python_version(),
            "ray": _installed("ray") or "not installed", "torch": _installed("torch"),
            "rayaccel": rayaccel.__version__, "hardware_fingerprint": fingerprint, "devices": len(unique),
            "plugins": plugins}


def lines(environment: Any) -> list[str]:
    """The manifest in lines for people (``certify summary``); values as recorded (the caller escapes them)."""
    if environment is None:
        return ["environment: not recorded (a report made before rayaccel recorded it)"]
    e = environment
    out = [f"environment: {e.os}; kernel {e.kernel}; Python {e.python}; Ray {e.ray}; torch {e.torch or 'none'}; "
           f"rayaccel {e.rayaccel}",
           f"hardware: {e.devices} devices, fingerprint {e.hardware_fingerprint}"]
    for p in e.plugins:
        deps = ", ".join(f"{name} {version}" for name, version in p.dependencies.items()) or "none"
        out.append(f"plugin {p.plugin} {p.release or '(no release)'}: dependencies {deps}")
        for f in p.families:
            out.append(f"  family {f.family}: driver {', '.join(f.driver) or '-'}; runtime "
                       f"{', '.join(f.runtime) or '-'}; firmware {', '.join(f.firmware) or '-'}")
    return out
