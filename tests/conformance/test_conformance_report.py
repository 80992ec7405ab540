"""The report and the tier rule, in-process: digest, schema, verification, tier computation, and the checks
no broken plugin covers (RAC207 discovery time, RAC303 real hardware); the signing parts (DSSE PAE, keys,
build digests) and the ``rayaccel certify`` CLI on hand-made reports. The forgery tests, on a report a real
signed run wrote, are in ``test_conformance_attestation.py``."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

import rayaccel_nvidia
from rayaccel.plugins.manager import PluginManager
from rayaccel_conformance.checks import all_checks, supported
from rayaccel_conformance.harness.subject import Subject
from rayaccel_conformance.registry import CHECKS, CheckFailed, CheckSkipped
from rayaccel_conformance.report.attestation import _check_build as check_build
from rayaccel_conformance.report.builds import BuildError, compare, installed_build, module_build, wheel_build
from rayaccel_conformance.report.document import MAX_REPORT_BYTES, ReportError, digest_of, load_report, seal, write_json
from rayaccel_conformance.report.signing import (
    MAX_KEY_BYTES,
    SigningError,
    load_private_key,
    load_public_key,
    open_envelope,
    pae,
    sign,
    write_keypair,
)
from rayaccel_conformance.report.tiers import Result, reached_tier
from rayaccel_testplugins import acme

REQUIRED: dict[str, set[str]] = {}
for _c in all_checks():
    REQUIRED.setdefault(_c.tier, set()).add(_c.id)


def results(outcomes: dict[str, str] | None = None) -> list[Result]:
    outcomes = outcomes or {}
    return [Result(c.id, c.tier, outcomes.get(c.id, "passed"), None, ["evidence"]) for c in all_checks()]


def test_every_check_passing_is_certified() -> None:
    assert reached_tier(results(), REQUIRED) == ("certified", "every check of every tier passed")


def test_a_skipped_check_is_not_a_pass_and_the_reason_names_it() -> None:
    tier, why = reached_tier(results({"RAC303": "skipped"}), REQUIRED)
    assert tier == "supported" and why.startswith("certified not reached: RAC303 skipped")


def test_a_lower_tier_failure_caps_the_tier_even_when_higher_checks_pass() -> None:
    assert reached_tier(results({"RAC107": "failed"}), REQUIRED)[0] is None
    assert reached_tier(results({"RAC204": "error"}), REQUIRED)[0] == "experimental"


def test_a_tier_whose_checks_did_not_all_run_is_not_reached() -> None:
    partial = [r for r in results() if r.check_id != "RAC208"]
    tier, why = reached_tier(partial, REQUIRED)
    assert tier == "experimental" and "RAC208 not run" in why


def test_the_tier_limit_stops_there() -> None:
    tier, why = reached_tier(results(), REQUIRED, limit="experimental")
    assert tier == "experimental" and "--conformance-tier experimental" in why


def report_content(tier: str | None = "supported", outcome: str = "skipped") -> dict[str, Any]:
    checks = [{"id": c.id, "tier": c.tier, "title": c.title, "plugin": "acme", "fixture": None,
               "outcome": outcome if c.id == "RAC303" else "passed", "evidence": ["e"], "duration_s": 0.1,
               "docs": c.docs_url} for c in all_checks()]
    return {"schema": "rayaccel-conformance-report/2", "created": "2026-01-01T00:00:00+00:00",
            "versions": {"sdk": "0.1.0", "spec": "1.0", "ray": "2.60.0", "python": "3.11", "platform": "linux"},
            "hardware": "simulated", "tier_limit": None, "complete": True, "incomplete_reason": None, "checks": checks,
            "plugins": [{"name": "acme", "fixtures": ["acme/acme-4"], "tier": tier, "tier_reason": "r",
                         "passed": sum(c["outcome"] == "passed" for c in checks),
                         "failed": sum(c["outcome"] in ("failed", "error") for c in checks),
                         "skipped": sum(c["outcome"] == "skipped" for c in checks)}]}


def test_a_sealed_report_verifies(tmp_path: Path) -> None:
    path = tmp_path / "r.json"
    write_json(seal(report_content()), path)
    assert load_report(path).plugins[0].tier == "supported"
    # That the shipped schema is the one the model generates: tests/docs/test_schemas.py.


def test_the_digest_covers_every_field_but_itself() -> None:
    content = report_content()
    changed = json.loads(json.dumps(content))
    changed["checks"][0]["evidence"] = ["other"]
    assert digest_of(content) != digest_of(changed)
    assert digest_of(content) == digest_of({**content, "digest": "sha256:" + "0" * 64})


def test_a_report_claiming_more_than_its_checks_give_fails_even_with_a_fresh_digest(tmp_path: Path) -> None:
    path = tmp_path / "inflated.json"
    write_json(seal(report_content(tier="certified")), path)  # RAC303 skipped, yet certified claimed
    with pytest.raises(ReportError, match="claims tier certified, but its checks give supported"):
        load_report(path)


@pytest.mark.parametrize("text, message", [
    ("{not json", "not valid JSON"),
    (json.dumps({"schema": "rayaccel-conformance-report/1"}), "invalid conformance report at"),
])
def test_an_unreadable_report_is_one_clear_error(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "bad.json"
    path.write_text(text)
    with pytest.raises(ReportError, match=message):
        load_report(path)


class SlowAcme:
    """ACME whose discovery takes 0.1 s: over a (lowered) budget."""

    rayaccel_family = staticmethod(acme.rayaccel_family)
    rayaccel_fixture_dirs = staticmethod(acme.rayaccel_fixture_dirs)
    rayaccel_sku_catalog = staticmethod(acme.rayaccel_sku_catalog)

    @staticmethod
    def rayaccel_discover(host):  # type: ignore[no-untyped-def]
        time.sleep(0.1)
        return acme.rayaccel_discover(host)


def subject_for(plugin: object, hardware: str = "simulated") -> Subject:
    manager = PluginManager(autoload=False)
    assert manager.register(plugin, "acme")
    return Subject("acme", manager, hardware)  # type: ignore[arg-type]


def test_discovery_over_the_time_budget_fails_rac207(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(supported, "DISCOVERY_BUDGET_S", 0.08)
    with pytest.raises(CheckFailed, match=r"fastest of 3 inventories took \d+\.\d+s"):  # >= 0.1 s; more under load
        CHECKS["RAC207"].run(subject_for(SlowAcme()), "acme/acme-4")
    assert "ms (best of 3)" in CHECKS["RAC207"].run(subject_for(acme), "acme/acme-4")[0]


def test_real_hardware_evidence_rac303_is_skipped_when_simulated_and_fails_without_devices() -> None:
    with pytest.raises(CheckSkipped, match="simulated-only run"):
        CHECKS["RAC303"].run(subject_for(acme), None)
    with pytest.raises(CheckFailed, match="no acme device found"):  # this machine has no ACME cards
        CHECKS["RAC303"].run(subject_for(acme, hardware="real"), None)


# Signing: DSSE, keys, builds ----------------------------------------------------------------------


def test_pae_is_the_dsse_specs_encoding() -> None:
    # The example in the DSSE spec (protocol.md): PAE("http://example.com/HelloWorld", "hello world").
    expected = b"DSSEv1 29 http://example.com/HelloWorld 11 hello world"
    assert pae("http://example.com/HelloWorld", b"hello world") == expected
    assert pae("t", "ü".encode()) == b"DSSEv1 1 t 2 " + "ü".encode()  # lengths are in bytes, not characters


def test_an_envelope_opens_only_with_its_key_and_only_unchanged() -> None:
    key, other = Ed25519PrivateKey.generate(), Ed25519PrivateKey.generate()
    envelope = sign(b'{"a":1}', key)
    assert open_envelope(envelope, key.public_key()) == b'{"a":1}'
    changed = envelope.model_copy(update={"payload": base64.b64encode(b'{"a":2}').decode()})
    with pytest.raises(SigningError, match="does not verify"):
        open_envelope(changed, key.public_key())
    retyped = envelope.model_copy(update={"payloadType": "text/plain"})  # PAE binds the type too
    with pytest.raises(SigningError, match="does not verify"):
        open_envelope(retyped, key.public_key())
    with pytest.raises(SigningError, match="not by the key given"):
        open_envelope(envelope, other.public_key())
    with pytest.raises(SigningError, match="no signature"):
        open_envelope(envelope.model_copy(update={"signatures": []}), key.public_key())


@pytest.fixture
def key_files(tmp_path: Path) -> dict[str, Path]:
    private, public, _ = write_keypair(tmp_path / "k")
    rsa_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    rsa_pub = tmp_path / "rsa.pub"
    rsa_pub.write_bytes(rsa_key.public_key().public_bytes(serialization.Encoding.PEM,
                                                          serialization.PublicFormat.SubjectPublicKeyInfo))
    rsa_priv = tmp_path / "rsa.key"
    rsa_priv.write_bytes(rsa_key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                               serialization.NoEncryption()))
    huge = tmp_path / "huge.pub"
    with huge.open("wb") as f:
        f.truncate(MAX_KEY_BYTES + 1)
    return {"private": private, "public": public, "rsa.pub": rsa_pub, "rsa.key": rsa_priv, "huge": huge,
            "json": tmp_path / "r.json", "missing": tmp_path / "nope.pub"}


@pytest.mark.parametrize(("load", "name", "message"), [
    ("public", "private", "not a PEM public key (that is a private key"),
    ("public", "rsa.pub", "is not an ed25519 key"),
    ("public", "huge", f"more than the {MAX_KEY_BYTES} allowed"),
    ("public", "missing", "public key file"),
    ("private", "public", "not a PEM private key (that is a public key"),
    ("private", "rsa.key", "is not an ed25519 key"),
])
def test_a_wrong_key_file_is_one_clear_error(key_files: dict[str, Path], load: str, name: str, message: str) -> None:
    loader = load_public_key if load == "public" else load_private_key
    with pytest.raises(SigningError, match=re.escape(message)):
        loader(key_files[name])


def test_keygen_never_overwrites_either_half(tmp_path: Path) -> None:
    (tmp_path / "k.pub").write_text("someone's public key")
    with pytest.raises(SigningError, match=r"k\.pub exists: refusing to overwrite"):
        write_keypair(tmp_path / "k")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["k.pub"]  # no private key, no temp file
    private, public, kid = write_keypair(tmp_path / "k2")
    assert private.stat().st_mode & 0o777 == 0o600 and len(kid) == 64
    assert load_public_key(public).public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw) == \
        load_private_key(private).public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)


def test_an_editable_install_is_identified_by_its_source_files() -> None:
    build = installed_build("rayaccel-nvidia")  # installed editable (pip install -e) by make install
    assert build is not None and build.kind == "editable" and build.name == "pkg:pypi/rayaccel-nvidia@0.1.0"
    source = Path(rayaccel_nvidia.__file__).parent / "plugin.py"
    assert build.files["rayaccel_nvidia/plugin.py"] == hashlib.sha256(source.read_bytes()).hexdigest()
    assert not [p for p in build.files if "__pycache__" in p or p.endswith(".pyc")]
    assert installed_build("no-such-distribution") is None


def test_a_module_build_digest_changes_with_one_byte_and_not_with_bytecode(tmp_path: Path,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    package = tmp_path / "digest_probe_pkg"
    (package / "__pycache__").mkdir(parents=True)
    (package / "__init__.py").write_text("X = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    first = module_build("digest_probe_pkg.sub")
    assert first is not None and first.name == "module:digest_probe_pkg.sub"
    (package / "__pycache__" / "x.cpython-311.pyc").write_bytes(b"bytecode")
    assert module_build("digest_probe_pkg") is not None
    assert module_build("digest_probe_pkg").digest == first.digest  # type: ignore[union-attr]
    (package / "__init__.py").write_text("X = 2\n")
    second = module_build("digest_probe_pkg")
    assert second is not None and second.digest != first.digest
    assert compare(first.files, second.files) == "digest_probe_pkg/__init__.py differs"
    assert module_build("no_such_module_anywhere") is None


@pytest.mark.slow
def test_an_installed_wheel_is_identified_by_its_record_and_must_be_the_wheel_given(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    project = tmp_path / "project"
    (project / "tiny_plugin_probe").mkdir(parents=True)
    (project / "tiny_plugin_probe" / "__init__.py").write_text("VALUE = 1\n")
    (project / "pyproject.toml").write_text(
        '[build-system]\nrequires = ["setuptools"]\nbuild-backend = "setuptools.build_meta"\n'
        '[project]\nname = "tiny-plugin-probe"\nversion = "1.2.3"\n')
    pip = [sys.executable, "-m", "pip", "-q", "--disable-pip-version-check"]
    built = subprocess.run([*pip, "wheel", "--no-deps", "--no-build-isolation", "-w", str(tmp_path / "dist"),
                            str(project)], capture_output=True, text=True, timeout=300, check=False)
    assert built.returncode == 0, built.stderr[-2000:]
    wheel = next((tmp_path / "dist").glob("*.whl"))
    site = tmp_path / "site"
    done = subprocess.run([*pip, "install", "--no-deps", "--target", str(site), str(wheel)], capture_output=True,
                          text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    monkeypatch.syspath_prepend(str(site))
    installed = installed_build("tiny-plugin-probe")
    assert installed is not None and installed.kind == "installed"
    assert installed.name == "pkg:pypi/tiny-plugin-probe@1.2.3" and "tiny_plugin_probe/__init__.py" in installed.files
    assert not [p for p in installed.files if p.endswith(("/INSTALLER", "/RECORD", "/REQUESTED"))]
    as_wheel = wheel_build(wheel, installed)
    assert as_wheel.kind == "wheel" and as_wheel.name == wheel.name
    assert as_wheel.digest == "sha256:" + hashlib.sha256(wheel.read_bytes()).hexdigest()
    # What `certify verify --key` does with a build graded as this wheel: compare it with what is installed.
    record = {"plugin": "tiny", "kind": "wheel", "name": as_wheel.name, "digest": as_wheel.digest,
              "distribution": "tiny-plugin-probe", "version": "1.2.3", "module": None, "files": as_wheel.files}
    assert "= the build installed here (installed, " in check_build(record, tmp_path / "r.json")
    # An installed file edited after install: a different build (RECORD's stale hash is not trusted) ...
    (site / "tiny_plugin_probe" / "__init__.py").write_text("VALUE = 2\n")
    edited = installed_build("tiny-plugin-probe")
    assert edited is not None and edited.digest != installed.digest
    # ... and no longer the wheel: the run refuses to attest to a wheel that is not what runs.
    with pytest.raises(BuildError, match=r"is not this wheel \(tiny_plugin_probe/__init__.py differs\)"):
        wheel_build(wheel, edited)
    with pytest.raises(ReportError, match=r"installed build is not the graded build \(tiny_plugin_probe/__init__.py"):
        check_build(record, tmp_path / "r.json")


# The certify CLI on hand-made reports ------------------------------------------------------------


def rayaccel_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(Path(sys.executable).parent / "rayaccel"), *args], capture_output=True, text=True,
                          timeout=120, check=False)


def test_an_unsigned_report_verifies_only_as_self_assessed(tmp_path: Path, key_files: dict[str, Path]) -> None:
    path = tmp_path / "r.json"
    write_json(seal(report_content()), path)
    plain = rayaccel_cli("certify", "verify", str(path))
    assert plain.returncode == 0 and plain.stdout.startswith(f"ok: {path}: self-assessed, unsigned:"), plain.stderr
    assert "claimed tiers acme=supported" in plain.stdout
    # Even a report whose checks give certified is only a claim while unsigned.
    write_json(seal(report_content(tier="certified", outcome="passed")), tmp_path / "c.json")
    claimed = rayaccel_cli("certify", "verify", str(tmp_path / "c.json"))
    assert claimed.returncode == 0 and "self-assessed, unsigned: " in claimed.stdout
    assert "claimed tiers acme=certified" in claimed.stdout
    keyed = rayaccel_cli("certify", "verify", "--key", str(key_files["public"]), str(path))
    assert keyed.returncode == 2 and keyed.stderr.strip().splitlines() == [
        f"error: {path}: not signed: a self-assessed report cannot verify with --key (run the suite with "
        "--conformance-sign-key to sign it, or verify without --key to read it as self-assessed)"]


def test_an_incomplete_report_never_verifies(tmp_path: Path) -> None:
    path = tmp_path / "r.json"
    write_json(seal(dict(report_content(), complete=False, incomplete_reason="interrupted (KeyboardInterrupt)")), path)
    done = rayaccel_cli("certify", "verify", str(path))
    assert done.returncode == 2 and "the run did not finish (interrupted (KeyboardInterrupt))" in done.stderr
    summary = rayaccel_cli("certify", "summary", str(path))  # still readable, and says so
    assert summary.returncode == 0 and "INCOMPLETE run" in summary.stdout


@pytest.mark.parametrize(("args", "message"), [
    (["verify", "{dir}/missing.json"], "conformance report file {dir}/missing.json does not exist"),
    (["verify", "{dir}/notjson.json"], "not valid JSON"),
    (["verify", "{dir}/binary.json"], "is not UTF-8 text"),
    (["verify", "{dir}/huge.json"], f"more than the {MAX_REPORT_BYTES} allowed"),
    (["verify", "{dir}/fifo.json"], "is not a regular file"),
    (["verify", "{dir}"], "is a directory"),
    (["verify", "--key", "{dir}/nope.pub", "{dir}/r.json"], "public key file {dir}/nope.pub does not exist"),
    (["verify", "--key", "{dir}/k", "{dir}/r.json"], "not a PEM public key (that is a private key"),
    (["verify", "--key", "{dir}/rsa.pub", "{dir}/r.json"], "is not an ed25519 key"),
    (["verify", "--key", "{dir}/huge.pub", "{dir}/r.json"], f"more than the {MAX_KEY_BYTES} allowed"),
    (["keygen", "{dir}/k"], "exists: refusing to overwrite"),
    (["keygen", "{dir}/no/such/dir/k"], "does not exist"),
])
def test_bad_input_to_certify_is_one_line_and_exit_2(tmp_path: Path, key_files: dict[str, Path], args: list[str],
                                                     message: str) -> None:
    write_json(seal(report_content()), tmp_path / "r.json")
    (tmp_path / "notjson.json").write_text("{not json")
    (tmp_path / "binary.json").write_bytes(b"\xff\xfe\x00garbage")
    with (tmp_path / "huge.json").open("wb") as f:
        f.truncate(MAX_REPORT_BYTES + 1)
    os.mkfifo(tmp_path / "fifo.json")  # nobody writes to it: reading it would hang
    done = rayaccel_cli("certify", *(a.format(dir=tmp_path) for a in args))
    assert done.returncode == 2, done.stdout + done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and message.format(dir=tmp_path) in lines[0] and "Traceback" not in done.stderr, done.stderr


def test_a_bad_sign_key_stops_the_run_before_any_check(tmp_path: Path, key_files: dict[str, Path]) -> None:
    done = subprocess.run([str(Path(sys.executable).parent / "pytest"), "--conformance", "-p", "no:cacheprovider",
                           "--conformance-plugin", "nvidia", "--conformance-sign-key", str(key_files["public"])],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 4, done.stdout[-2000:]  # pytest's usage error, as for every bad option
    assert "--conformance-sign-key: " in done.stderr and "that is a public key" in done.stderr
    assert not (tmp_path / "conformance-report.json").exists()


def test_the_device_fingerprint_of_a_real_run_hashes_every_device_id() -> None:
    from rayaccel.hosts.fixtures import installed_fixtures
    from rayaccel.hosts.simulated import SimulatedHost
    from rayaccel_conformance.report.attestation import device_fingerprint

    subject = subject_for(acme)
    fixture = subject.fixture(next(iter(installed_fixtures(subject.manager))))
    # The simulated host stands in for this machine's vendor interface (what RealHost reads on a real run).
    found = device_fingerprint([subject], SimulatedHost(fixture))
    uuids = [d.id for d in subject.build(SimulatedHost(fixture)).families[0].devices]
    assert found["count"] == len(uuids) == 4
    assert {d["product"] for d in found["devices"]} == {"ACME Roadrunner R1"}
    text = json.dumps(found)
    assert not any(uuid in text for uuid in uuids)  # never a raw serial or UUID
    assert sorted(d["id_sha256"] for d in found["devices"]) == sorted(
        hashlib.sha256(f"acme:{uuid}".encode()).hexdigest() for uuid in uuids)
    assert device_fingerprint([subject], SimulatedHost(fixture)) == found  # stable: the same machine, the same print


def test_a_wheel_no_graded_plugin_comes_from_is_a_usage_error(tmp_path: Path, key_files: dict[str, Path]) -> None:
    wheel = tmp_path / "someone_else-1.0-py3-none-any.whl"
    wheel.write_bytes(b"")
    env = {**os.environ, "RAYACCEL_PLUGINS": "acme=rayaccel_testplugins.acme", "RAYACCEL_NO_AUTOLOAD": "1"}
    done = subprocess.run([str(Path(sys.executable).parent / "pytest"), "--conformance", "-p", "no:cacheprovider",
                           "--conformance-plugin", "acme", "--conformance-wheel", str(wheel)],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 4, done.stdout[-2000:]
    assert f"--conformance-wheel {wheel}: no graded plugin is installed from a distribution of that name" in done.stderr
    assert not (tmp_path / "conformance-report.json").exists()


@pytest.mark.parametrize(("body", "message"), [
    (b"\xff\xfe", "the signed payload is not UTF-8 JSON"),
    (b"{not json", "not valid JSON"),
    (b"[" * 200 + b"]" * 200, "nested more deeply than"),
    (b'{"_type": "https://in-toto.io/Statement/v1"}', "not a well-formed in-toto statement"),
    (b'{"_type": "x", "predicateType": "y", "predicate": {}}', "is not a rayaccel conformance statement"),
])
def test_a_signed_payload_that_is_no_statement_is_one_clear_error(tmp_path: Path, body: bytes, message: str) -> None:
    from rayaccel_conformance.report.attestation import verify

    key = Ed25519PrivateKey.generate()
    report = seal(report_content()).model_copy(update={"attestation": sign(body, key)})
    with pytest.raises(ReportError, match=re.escape(message)):
        verify(report, tmp_path / "r.json", key.public_key())


def test_the_registry_of_checks_loads_without_what_only_running_them_needs() -> None:
    """`rayaccel certify verify` recomputes tiers from every check's ID and tier, in a process of its own each time
    (a vendor's CI, the registry, the attestation tests call it dozens of times): importing the checks must not
    import hypothesis (0.15 s of CPU a call), which only the property checks use when they run."""
    code = ("import json, sys\nfrom rayaccel_conformance.checks import all_checks\n"
            "print(json.dumps([len(all_checks()), sorted(m for m in sys.modules if m.split('.')[0] == 'hypothesis')]))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    count, loaded = json.loads(done.stdout)
    assert count == len(all_checks()) and loaded == []
