"""A conformance report as a signed attestation: an in-toto Statement v1 in a DSSE envelope, ed25519-signed.

The statement's subjects are the graded builds (see :mod:`rayaccel_conformance.report.builds`); its predicate
(type :data:`PREDICATE_TYPE`) holds the whole report, whether the run completed, the SDK, Ray and Python
versions, each build's file manifest, and for a real-hardware run a fingerprint of the devices (ids
hashed, never raw). The envelope is stored in the report's ``attestation`` field; :func:`verify`
checks it against a public key, the report beside it, and the builds installed where it runs.
"""

from __future__ import annotations

import hashlib
import json
import os
import types
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from rayaccel.hosts.seam import Host
from rayaccel_conformance.report import builds
from rayaccel_conformance.report.builds import Build, BuildError
from rayaccel_conformance.report.document import ConformanceReport, ReportError, report_content
from rayaccel_conformance.report.signing import INTOTO_PAYLOAD_TYPE, SigningError, key_id, open_envelope, sign

STATEMENT_TYPE = "https://in-toto.io/Statement/v1"
PREDICATE_TYPE = "https://rayaccel.io/attestation/conformance/v1"


# Building ----------------------------------------------------------------------------------------


def _origin(subject: Any) -> tuple[str | None, str | None, str | None]:
    """(distribution, version, module) of the plugin a Subject grades, loaded or not."""
    import importlib.metadata

    from rayaccel.plugins.configuration import PLUGINS_ENV

    if subject.loaded:
        loaded = subject.manager.plugin(subject.name)
        obj = loaded.module
        module = obj.__name__ if isinstance(obj, types.ModuleType) else type(obj).__module__
        return loaded.distribution, loaded.version, module
    # Refused at load (RAC101-RAC104 fail): still the code that was graded, found where the manager looked.
    dist = next((p.distribution for p in subject.manager.problems if p.plugin == subject.name and p.distribution),
                None)
    if dist:
        try:
            return dist, importlib.metadata.version(dist), None
        except importlib.metadata.PackageNotFoundError:
            return dist, None, None
    for item in os.environ.get(PLUGINS_ENV, "").split(","):
        name, _, target = item.strip().partition("=")
        if name == subject.name and target:
            return None, None, target.partition(":")[0]
    return None, None, None


def graded_build(subject: Any, wheels: Sequence[Path] = ()) -> dict[str, Any] | None:
    """The build a :class:`~rayaccel_conformance.harness.subject.Subject` grades, as the predicate records it;
    None when it cannot be found (a plugin name nothing provides)."""
    distribution, version, module = _origin(subject)
    build: Build | None = None
    if distribution:
        build = builds.installed_build(distribution)
        mine = [w for w in wheels if builds.wheel_distribution(w) == builds.normal_name(distribution)]
        if build is not None and mine:
            build = builds.wheel_build(mine[0], build)
    elif module:
        build = builds.module_build(module)
    if build is None:
        return None
    return {"plugin": subject.name, "kind": build.kind, "name": build.name, "digest": build.digest,
            "distribution": distribution, "version": version, "module": module, "files": build.files}


def device_fingerprint(subjects: Sequence[Any], host: Host | None = None) -> dict[str, Any]:
    """This machine's devices of the graded families, each id hashed: which hardware a real run saw.

    ``host`` is this machine (:class:`~rayaccel.hosts.seam.RealHost`) unless given (tests pass a simulated one).
    """
    from rayaccel.hosts.seam import RealHost
    from rayaccel_conformance.registry import CheckFailed

    machine = host if host is not None else RealHost()
    devices: list[dict[str, Any]] = []
    for subject in subjects:
        if not subject.loaded:
            continue
        try:
            inventory = subject.build(machine, with_metrics=False)
        except CheckFailed:
            continue
        for fam in inventory.families:
            for d in fam.devices:
                devices.append({"family": fam.family.name, "product": d.product_name, "pci_device_id": d.pci_device_id,
                                "id_sha256": hashlib.sha256(f"{fam.family.name}:{d.id}".encode()).hexdigest()})
    devices.sort(key=lambda d: (d["family"], d["id_sha256"]))
    canonical = json.dumps(devices, sort_keys=True, separators=(",", ":")).encode("utf-8")
    return {"count": len(devices), "fingerprint": "sha256:" + hashlib.sha256(canonical).hexdigest(),
            "devices": devices}


def statement(report: ConformanceReport, build_records: Sequence[Mapping[str, Any]],
              devices: Mapping[str, Any] | None) -> dict[str, Any]:
    content = report_content(report)
    return {
        "_type": STATEMENT_TYPE,
        "subject": [{"name": b["name"], "digest": {"sha256": b["digest"].removeprefix("sha256:")}}
                    for b in build_records],
        "predicateType": PREDICATE_TYPE,
        "predicate": {
            "complete": report.complete,
            "incomplete_reason": report.incomplete_reason,
            "sdk": report.versions.sdk, "ray": report.versions.ray, "python": report.versions.python,
            "hardware": report.hardware,
            "devices": dict(devices) if devices is not None else None,
            "builds": [dict(b) for b in build_records],
            "report": content,
        },
    }


def sign_report(report: ConformanceReport, key: Ed25519PrivateKey, build_records: Sequence[Mapping[str, Any]],
                devices: Mapping[str, Any] | None = None) -> ConformanceReport:
    """The report with its ``attestation``: the statement about it, in a DSSE envelope signed by ``key``."""
    if not build_records:
        raise SigningError("no graded build could be identified (no plugin loaded), so there is nothing to attest")
    body = json.dumps(statement(report, build_records, devices), sort_keys=True, separators=(",", ":"),
                      ensure_ascii=False).encode("utf-8")
    return report.model_copy(update={"attestation": sign(body, key)})


# Verifying ---------------------------------------------------------------------------------------


def _first_difference(a: Any, b: Any, where: str = "") -> str | None:
    """Where two JSON values first differ, as a path like ``checks/3/outcome``; None when equal."""
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b)):
            if k not in a or k not in b:
                return f"{where}{k}"
            found = _first_difference(a[k], b[k], f"{where}{k}/")
            if found is not None:
                return found
        return None
    if isinstance(a, list) and isinstance(b, list):
        for i, (x, y) in enumerate(zip(a, b, strict=False)):
            found = _first_difference(x, y, f"{where}{i}/")
            if found is not None:
                return found
        return None if len(a) == len(b) else f"{where}(length {len(a)} signed, {len(b)} here)"
    return None if a == b and type(a) is type(b) else where.rstrip("/") or "(top level)"


def _installed_now(record: Mapping[str, Any]) -> Build | None:
    if record.get("distribution"):
        return builds.installed_build(str(record["distribution"]))
    return builds.module_build(str(record.get("module") or ""))


def _check_build(record: Mapping[str, Any], path: Path) -> str:
    """One line on how the graded build compares with what is installed here; ReportError on a mismatch."""
    plugin, graded_name = record["plugin"], record["name"]
    try:
        here = _installed_now(record)
    except BuildError as e:
        raise ReportError(f"{path}: plugin {plugin}: {e}") from None
    if here is None:
        return f"build {plugin}: {graded_name} {record['digest']} (not installed here: not compared)"
    graded: dict[str, str] = dict(record["files"])
    mine = here.files
    if record["kind"] != here.kind:  # e.g. graded as a wheel, installed from it: compare the package files
        graded = {p: h for p, h in graded.items() if builds.comparable(p)}
        mine = {p: h for p, h in mine.items() if builds.comparable(p)}
    same = (builds.wheel_distribution(Path(graded_name)) == here.name.removeprefix("pkg:pypi/").split("@")[0]
            if record["kind"] == "wheel" else here.name == graded_name)
    if not same:
        raise ReportError(f"{path}: plugin {plugin}: installed here is {here.name}, but {graded_name} was graded: "
                          "the report is not about this build")
    differs = builds.compare(graded, mine)
    if differs:
        raise ReportError(f"{path}: plugin {plugin}: the installed build is not the graded build ({differs}; "
                          f"graded {record['digest']}, installed {here.digest}): grade this build, or install "
                          "the one that was graded")
    return f"build {plugin}: {graded_name} {record['digest']} = the build installed here ({here.kind}, " \
           f"{len(here.files)} files)"


def verify(report: ConformanceReport, path: Path, key: Ed25519PublicKey, compare_builds: bool = True) -> list[str]:
    """Check the report's attestation with ``key``; the lines say what was verified. ReportError otherwise.

    ``compare_builds=False`` (the registry, which installs no plugin) leaves out the check that the graded
    builds are the ones installed here."""
    if report.attestation is None:
        raise ReportError(f"{path}: not signed: a self-assessed report cannot verify with --key (run the suite "
                          "with --conformance-sign-key to sign it, or verify without --key to read it as "
                          "self-assessed)")
    envelope = report.attestation
    if envelope.payloadType != INTOTO_PAYLOAD_TYPE:
        raise ReportError(f"{path}: the attestation's payloadType is {envelope.payloadType!r}, not "
                          f"{INTOTO_PAYLOAD_TYPE!r}")
    try:
        body = open_envelope(envelope, key)
    except SigningError as e:
        raise ReportError(f"{path}: {e}") from None
    from rayaccel.files.reading import parse

    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        raise ReportError(f"{path}: the signed payload is not UTF-8 JSON") from None
    stmt = parse(text, f"{path}: the signed payload", "in-toto statement", "json", ReportError)
    try:
        predicate = stmt["predicate"]
        if stmt.get("_type") != STATEMENT_TYPE or stmt.get("predicateType") != PREDICATE_TYPE:
            raise ReportError(f"{path}: the signed payload is not a rayaccel conformance statement "
                              f"({stmt.get('_type')}, {stmt.get('predicateType')})")
        signed_report, build_records = predicate["report"], predicate["builds"]
        subjects = {(s["name"], s["digest"]["sha256"]) for s in stmt["subject"]}
        recorded = {(b["name"], b["digest"].removeprefix("sha256:")) for b in build_records}
    except (ValueError, KeyError, TypeError, AttributeError):
        raise ReportError(f"{path}: the signed payload is not a well-formed in-toto statement") from None
    if not subjects or subjects != recorded:
        raise ReportError(f"{path}: the statement's subjects do not match its builds")
    where = _first_difference(signed_report, report_content(report))
    if where is not None:
        raise ReportError(f"{path}: the report differs from what was signed, at {where}: it was edited after "
                          "the run")
    if predicate.get("complete") is not True or not report.complete:
        raise ReportError(f"{path}: the run did not finish ({report.incomplete_reason}): an incomplete run never "
                          "verifies as complete; run the suite to the end")
    v = report.versions
    lines = [f"signature: ed25519 key {key_id(key)} signed this in-toto Statement v1 (DSSE, "
             f"{INTOTO_PAYLOAD_TYPE})",
             f"report: equals the signed predicate; {len(report.checks)} checks, {report.hardware} hardware, run "
             f"complete; rayaccel {v.sdk}, Ray {v.ray}, Python {v.python}"]
    if compare_builds:
        lines += [_check_build(record, path) for record in build_records]
    devices = predicate.get("devices")
    if devices:
        lines.append(f"devices: {devices['count']} on the machine that ran it, fingerprint {devices['fingerprint']}")
    else:
        lines.append("devices: none recorded (simulated hardware)")
    return lines

