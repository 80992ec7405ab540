"""Signed reports cannot be forged: every edit a forger could make, with the plain digest recomputed and the
tiers re-derived (so the report is otherwise self-consistent), fails ``rayaccel certify verify --key``.

ONE real ``pytest --conformance --conformance-sign-key`` run (module fixture) grades a copy of the ACME test
plugin, importable as its own package ``acme_signed``; the tests mutate copies of its signed report and run
the real ``rayaccel`` CLI as a subprocess on them. The same run is where the good ACME plugin is shown reaching
``supported`` on simulated hardware, its Ray checks run (test_conformance_broken.py grades only the broken
plugins, beside each other). A second, Ray-free run shows that a run stopped early (``-x``) is signed as
incomplete and never verifies.
"""

from __future__ import annotations

import base64
import contextlib
import copy
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from rayaccel.support.polling import wait_for
from rayaccel_conformance.checks import all_checks
from rayaccel_conformance.report.attestation import PREDICATE_TYPE, STATEMENT_TYPE
from rayaccel_conformance.report.builds import module_build
from rayaccel_conformance.report.document import digest_of
from rayaccel_conformance.report.signing import Envelope, load_private_key, load_public_key, sign
from rayaccel_conformance.report.tiers import Result, reached_tier

TESTS_DIR = Path(__file__).parents[1]  # tests/, where the test plugins are
BIN = Path(sys.executable).parent
ACME = TESTS_DIR / "rayaccel_testplugins"
REQUIRED: dict[str, set[str]] = {}
for _c in all_checks():
    REQUIRED.setdefault(_c.tier, set()).add(_c.id)

pytestmark = [pytest.mark.ray, pytest.mark.slow]


def copy_plugin(root: Path) -> Path:
    """The ACME test plugin as its own top-level package ``acme_signed`` under root (its build)."""
    package = root / "acme_signed"
    (package / "acme_fixtures").mkdir(parents=True)
    shutil.copy(ACME / "acme.py", package / "__init__.py")
    shutil.copy(ACME / "acme-skus.yaml", package / "acme-skus.yaml")
    shutil.copy(ACME / "acme_fixtures" / "acme-4.yaml", package / "acme_fixtures" / "acme-4.yaml")
    return root


def env_for(*paths: Path, plugins: str = "acme=acme_signed", **extra: str) -> dict[str, str]:
    drop = ("RAYACCEL_DISABLE", "RAYACCEL_SIMULATE", "RAYACCEL_SIMULATE_FAULT_FILE", "RAY_ADDRESS", "PYTHONPATH")
    env = {k: v for k, v in os.environ.items() if k not in drop}
    env.update({"RAYACCEL_PLUGINS": plugins, "RAYACCEL_NO_AUTOLOAD": "1",
                "PYTHONPATH": os.pathsep.join(str(p) for p in paths), **extra})
    return env


def rayaccel(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(BIN / "rayaccel"), *args], capture_output=True, text=True, env=env, timeout=120,
                          check=False)


def conformance(cwd: Path, env: dict[str, str], *args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(BIN / "pytest"), "--conformance", "-p", "no:cacheprovider", "-q", "-W", "ignore",
                           *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False)


@pytest.fixture(scope="module")
def keys(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Two key pairs made by `rayaccel certify keygen`: the vendor's, and someone else's."""
    work = tmp_path_factory.mktemp("keys")
    made = {}
    for name in ("vendor", "other"):
        done = rayaccel("certify", "keygen", str(work / f"{name}.key"))
        assert done.returncode == 0, done.stderr
        assert "key id:      " in done.stdout
        made[name] = work / f"{name}.key"
    return made


@pytest.fixture(scope="module")
def signed(tmp_path_factory: pytest.TempPathFactory, keys: dict[str, Path]) -> dict[str, Any]:
    work = tmp_path_factory.mktemp("attested")
    build_a = copy_plugin(work / "build-a")
    run = work / "run"
    run.mkdir()
    report = run / "conformance-report.json"
    proc = conformance(run, env_for(build_a), "--conformance-plugin", "acme", "--conformance-sign-key",
                       str(keys["vendor"]))
    assert report.exists(), proc.stdout[-3000:] + proc.stderr[-3000:]
    return {"work": work, "build_a": build_a, "keys": keys, "path": report, "proc": proc,
            "data": json.loads(report.read_text())}


def verify(path: Path, key: Path | None, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return rayaccel("certify", "verify", *(["--key", f"{key}.pub"] if key else []), str(path), env=env)


def one_error_line(proc: subprocess.CompletedProcess[str], *needles: str) -> None:
    assert proc.returncode == 2, proc.stdout + proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "Traceback" not in proc.stderr, proc.stderr
    for needle in needles:
        assert needle in lines[0], lines[0]


def statement_of(data: dict[str, Any]) -> dict[str, Any]:
    return json.loads(base64.b64decode(data["attestation"]["payload"]))  # type: ignore[no-any-return]


# The genuine report --------------------------------------------------------------------------------


def test_keygen_writes_a_private_key_only_its_owner_reads_and_never_overwrites(keys: dict[str, Path]) -> None:
    key = keys["vendor"]
    assert key.stat().st_mode & 0o777 == 0o600
    assert "BEGIN PRIVATE KEY" in key.read_text() and "BEGIN PUBLIC KEY" in Path(f"{key}.pub").read_text()
    before = key.read_bytes()
    again = rayaccel("certify", "keygen", str(key))
    one_error_line(again, "exists: refusing to overwrite")
    assert key.read_bytes() == before
    assert not [p for p in key.parent.iterdir() if p.name.startswith(".")]  # no temp file left behind


def test_a_signed_report_verifies_and_says_what_it_verified(signed: dict[str, Any]) -> None:
    done = verify(signed["path"], signed["keys"]["vendor"], env_for(signed["build_a"]))
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert out.startswith(f"ok: {signed['path']}: signed attestation verified")
    public = load_public_key(f"{signed['keys']['vendor']}.pub")
    from rayaccel_conformance.report.signing import key_id

    assert f"ed25519 key {key_id(public)} signed this in-toto Statement v1" in out
    assert "report: equals the signed predicate" in out and "run complete" in out
    assert "build acme: module:acme_signed sha256:" in out and "= the build installed here (module, 3 files)" in out
    assert "devices: none recorded (simulated hardware)" in out


def test_the_attestation_is_an_in_toto_statement_in_a_dsse_envelope(signed: dict[str, Any],
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    data = signed["data"]
    envelope = data["attestation"]
    assert envelope["payloadType"] == "application/vnd.in-toto+json"
    body = base64.b64decode(envelope["payload"])
    stmt = json.loads(body)
    assert stmt["_type"] == STATEMENT_TYPE == "https://in-toto.io/Statement/v1"
    assert stmt["predicateType"] == PREDICATE_TYPE
    # The subject is the graded build: the digest of the copied package's files, as they were graded.
    monkeypatch.syspath_prepend(str(signed["build_a"]))
    build = module_build("acme_signed")
    assert build is not None and set(build.files) == {"acme_signed/__init__.py", "acme_signed/acme-skus.yaml",
                                                      "acme_signed/acme_fixtures/acme-4.yaml"}
    assert stmt["subject"] == [{"name": "module:acme_signed", "digest": {"sha256": build.digest[7:]}}]
    predicate = stmt["predicate"]
    assert predicate["complete"] is True and predicate["devices"] is None
    assert predicate["ray"] == "2.60.0" and predicate["sdk"] == data["versions"]["sdk"]
    assert predicate["python"] == data["versions"]["python"]
    assert predicate["report"] == {k: v for k, v in data.items() if k not in ("digest", "attestation")}
    # The signature is ed25519 over DSSE's PAE, spelled out here from the spec, not from the code under test.
    kind = envelope["payloadType"].encode()
    pae = b"DSSEv1 " + str(len(kind)).encode() + b" " + kind + b" " + str(len(body)).encode() + b" " + body
    public = load_public_key(f"{signed['keys']['vendor']}.pub")
    assert isinstance(public, Ed25519PublicKey)
    public.verify(base64.b64decode(envelope["signatures"][0]["sig"]), pae)  # raises if it does not verify


def test_the_good_plugin_reaches_supported_and_the_report_says_why_not_certified(signed: dict[str, Any]) -> None:
    data = signed["data"]
    assert [c["id"] for c in data["checks"] if c["outcome"] in ("failed", "error")] == []
    [record] = data["plugins"]
    assert record["name"] == "acme" and record["tier"] == "supported"
    assert "RAC303 skipped" in record["tier_reason"] and "simulated-only" in record["tier_reason"]
    acme = {c["id"]: c for c in data["checks"]}
    # The Ray checks really ran, on the fixture's node, with evidence.
    assert acme["RAC108"]["outcome"] == "passed" and "ACME_VISIBLE_DEVICES=" in acme["RAC108"]["evidence"][1]
    assert acme["RAC208"]["outcome"] == "passed" and "none on the" in acme["RAC208"]["evidence"][0]
    # ACME reads no vendor tool: RAC204 had nothing to test, so it is skipped (never passed), as not applicable.
    assert acme["RAC204"]["outcome"] == "skipped"
    assert acme["RAC204"]["evidence"][0].startswith("not applicable: acme/acme-4: the plugin reads no vendor tool")
    # The run's HTML page links the node picture of the fixture the checks built.
    html = signed["path"].with_suffix(".html").read_text()
    picture = signed["path"].parent / "conformance-report.nodes" / "acme-acme-4.html"
    assert picture.read_text().count('class="device') == 4
    assert 'href="conformance-report.nodes/acme-acme-4.html"' in html


# Forgeries -----------------------------------------------------------------------------------------


def _all_pass_on_real_hardware(data: dict[str, Any]) -> None:
    data["hardware"] = "real"
    for c in data["checks"]:
        c["outcome"], c["evidence"] = "passed", ["forged"]


def _flip_first_outcome(data: dict[str, Any]) -> None:
    first = data["checks"][0]
    first["outcome"] = "failed" if first["outcome"] == "passed" else "passed"


def _delete_a_check(data: dict[str, Any]) -> None:
    bad = [c for c in data["checks"] if c["outcome"] != "passed"]
    data["checks"].remove(bad[0] if bad else data["checks"][-1])


def _rename_plugin(data: dict[str, Any]) -> None:
    for record in data["plugins"] + data["checks"]:
        if record.get("name") == "acme":
            record["name"] = "acme-pro"
        if record.get("plugin") == "acme":
            record["plugin"] = "acme-pro"


EDITS: dict[str, Callable[[dict[str, Any]], None]] = {
    "tier": _all_pass_on_real_hardware,
    "outcome": _flip_first_outcome,
    "deleted check": _delete_a_check,
    "plugin name": _rename_plugin,
    "plugin version": lambda d: d["plugins"][0].update(version="9.9.9"),
    "hardware mode": lambda d: d.update(hardware="real"),
    "counts": lambda d: d["plugins"][0].update(passed=d["plugins"][0]["passed"] + 1,
                                               failed=max(0, d["plugins"][0]["failed"] - 1)),
}


def forge(data: dict[str, Any], edit: Callable[[dict[str, Any]], None], recount: bool = True) -> dict[str, Any]:
    """The edit, made by a forger who knows the rules: tiers re-derived from the checks, each plugin's counts
    recounted from them (unless ``recount`` is off: the counts edit itself), digest recomputed."""
    forged = copy.deepcopy(data)
    edit(forged)
    for plugin in forged["plugins"]:
        results = [Result(c["id"], c["tier"], c["outcome"], c["fixture"], c["evidence"])
                   for c in forged["checks"] if c["plugin"] == plugin["name"]]
        tier, reason = reached_tier(results, REQUIRED, forged["tier_limit"])
        plugin["tier"], plugin["tier_reason"] = tier, reason
        if recount:
            outcomes = [r.outcome for r in results]
            plugin.update(passed=outcomes.count("passed"), failed=outcomes.count("failed") + outcomes.count("error"),
                          skipped=outcomes.count("skipped"))
    forged["digest"] = digest_of(forged)
    return forged


@pytest.mark.parametrize("edit", sorted(EDITS))
def test_every_edit_with_the_digest_recomputed_fails_verify_with_the_key(signed: dict[str, Any], tmp_path: Path,
                                                                        edit: str) -> None:
    forged = forge(signed["data"], EDITS[edit], recount=edit != "counts")
    assert forged != signed["data"]
    path = tmp_path / "forged.json"
    path.write_text(json.dumps(forged))
    env = env_for(signed["build_a"])
    fooled = verify(path, None, env)
    if edit == "counts":  # counts that disagree with the checks fail even without a key (internal consistency)
        one_error_line(fooled, "counts passed/failed/skipped")
    else:  # a consistent forgery passes the plain digest, read as self-assessed (this is why reports are signed) ...
        assert fooled.returncode == 0 and "self-assessed" in fooled.stdout, fooled.stderr
    # ... the signature can (the counts edit is refused by the consistency check before the signature is read).
    refused = "counts passed/failed/skipped" if edit == "counts" else "the report differs from what was signed, at "
    one_error_line(verify(path, signed["keys"]["vendor"], env), refused)
    if edit == "tier":
        assert "=certified" in fooled.stdout  # the forgery claims certified; only the key-checked verify refuses it


def test_rewriting_the_signed_payload_too_breaks_the_signature(signed: dict[str, Any], tmp_path: Path) -> None:
    forged = forge(signed["data"], EDITS["tier"])
    stmt = statement_of(forged)
    stmt["predicate"]["report"] = {k: v for k, v in forged.items() if k not in ("digest", "attestation")}
    forged["attestation"]["payload"] = base64.b64encode(json.dumps(stmt).encode()).decode()
    path = tmp_path / "forged.json"
    path.write_text(json.dumps(forged))
    one_error_line(verify(path, signed["keys"]["vendor"], env_for(signed["build_a"])),
                   "the signature does not verify with key")


@pytest.mark.parametrize("keyid", ["its own", "the vendor's"])
def test_a_report_signed_with_another_key_fails(signed: dict[str, Any], tmp_path: Path, keyid: str) -> None:
    forged = forge(signed["data"], EDITS["tier"])
    stmt = statement_of(forged)
    stmt["predicate"]["report"] = {k: v for k, v in forged.items() if k not in ("digest", "attestation")}
    envelope = sign(json.dumps(stmt).encode(), load_private_key(signed["keys"]["other"]))
    if keyid == "the vendor's":  # claim the vendor's key id: the signature still has to verify with it
        vendor_id = signed["data"]["attestation"]["signatures"][0]["keyid"]
        envelope = Envelope(payload=envelope.payload, payloadType=envelope.payloadType,
                            signatures=[envelope.signatures[0].model_copy(update={"keyid": vendor_id})])
    forged["attestation"] = envelope.model_dump()
    path = tmp_path / "resigned.json"
    path.write_text(json.dumps(forged))
    env = env_for(signed["build_a"])
    message = "not by the key given" if keyid == "its own" else "the signature does not verify"
    one_error_line(verify(path, signed["keys"]["vendor"], env), message)
    # The genuine report, checked against another vendor's key, fails the same way.
    one_error_line(verify(signed["path"], signed["keys"]["other"], env), "not by the key given")


def test_stripping_the_signature_leaves_a_self_assessed_report_that_fails_with_the_key(signed: dict[str, Any],
                                                                                     tmp_path: Path) -> None:
    data = dict(signed["data"], attestation=None)
    path = tmp_path / "unsigned.json"
    path.write_text(json.dumps(data))
    env = env_for(signed["build_a"])
    plain = verify(path, None, env)
    assert plain.returncode == 0 and "self-assessed, unsigned" in plain.stdout
    one_error_line(verify(path, signed["keys"]["vendor"], env), "not signed: a self-assessed report")


def test_a_report_for_build_a_fails_against_installed_build_b(signed: dict[str, Any], tmp_path: Path) -> None:
    build_b = tmp_path / "build-b"
    shutil.copytree(signed["build_a"], build_b)
    source = build_b / "acme_signed" / "__init__.py"
    text = source.read_bytes()
    at = text.index(b"ACME Corp")
    source.write_bytes(text[:at] + b"ACME Corq" + text[at + len(b"ACME Corp"):])  # one byte
    one_error_line(verify(signed["path"], signed["keys"]["vendor"], env_for(build_b)),
                   "plugin acme: the installed build is not the graded build", "acme_signed/__init__.py differs")
    # Where the plugin is not installed at all, the signature still verifies and the build is not compared.
    elsewhere = verify(signed["path"], signed["keys"]["vendor"], env_for(tmp_path / "empty"))
    assert elsewhere.returncode == 0, elsewhere.stderr
    assert "module:acme_signed" in elsewhere.stdout and "not installed here: not compared" in elsewhere.stdout


# Runs that did not finish ------------------------------------------------------------------------------


def test_a_run_stopped_by_x_is_signed_incomplete_and_never_verifies(keys: dict[str, Path], tmp_path: Path) -> None:
    key = keys["vendor"]
    env = env_for(TESTS_DIR, plugins="broken-spec=rayaccel_testplugins.broken_spec")
    proc = conformance(tmp_path, env, "--conformance-plugin", "broken-spec", "--conformance-tier", "experimental",
                       "-x", "--conformance-sign-key", str(key), timeout=240)
    path = tmp_path / "conformance-report.json"
    assert path.exists(), proc.stdout[-3000:] + proc.stderr[-2000:]
    data = json.loads(path.read_text())
    assert data["complete"] is False and data["incomplete_reason"].startswith("stopped early")
    assert statement_of(data)["predicate"]["complete"] is False
    assert "INCOMPLETE run" in proc.stdout
    one_error_line(verify(path, key, env), "the run did not finish (stopped early")
    one_error_line(verify(path, None, env), "the run did not finish")
    # Marking it complete, digest recomputed, is one more edit the signature catches.
    forged = forge(data, lambda d: d.update(complete=True, incomplete_reason=None))
    path.write_text(json.dumps(forged))
    one_error_line(verify(path, key, env), "the report differs from what was signed, at complete")


HANGING_PLUGIN = '''
import os
import time
from pathlib import Path

from rayaccel_testplugins import acme

rayaccel_family = acme.rayaccel_family
rayaccel_fixture_dirs = acme.rayaccel_fixture_dirs


def rayaccel_discover(host):
    Path(os.environ["HANG_MARKER"]).touch()  # tells the test that discovery is running (not a fixed sleep)
    # Bounded: the interrupted process must not wait on it for long; the test lets it go once the interrupt has
    # reached the process (it takes effect when this call returns), not after the whole 20 s.
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and not Path(os.environ["HANG_RELEASE"]).exists():
        time.sleep(0.05)
    return []
'''


def sigint_pending(pid: int) -> bool:
    """SIGINT sent to the process and not yet delivered to any of its threads (/proc's pending-signal masks)."""
    bit = 1 << (signal.SIGINT - 1)
    masks = []
    with contextlib.suppress(FileNotFoundError, ProcessLookupError):  # the process ended: nothing is pending
        for task in Path(f"/proc/{pid}/task").iterdir():
            with contextlib.suppress(FileNotFoundError, ProcessLookupError):  # a thread that ended meanwhile
                masks += [line.split()[1] for line in (task / "status").read_text().splitlines()
                          if line.startswith(("SigPnd:", "ShdPnd:"))]
    return any(int(mask, 16) & bit for mask in masks)


def test_a_run_interrupted_by_ctrl_c_is_signed_incomplete(keys: dict[str, Path], tmp_path: Path) -> None:
    (tmp_path / "plugin").mkdir()
    (tmp_path / "plugin" / "hanging_plugin.py").write_text(HANGING_PLUGIN)
    marker, release = tmp_path / "discovering", tmp_path / "release"
    env = env_for(tmp_path / "plugin", TESTS_DIR, plugins="acme=hanging_plugin", RAYACCEL_HOOK_TIMEOUT="60",
                  HANG_MARKER=str(marker), HANG_RELEASE=str(release))
    run = tmp_path / "run"
    run.mkdir()
    report = run / "conformance-report.json"
    proc = subprocess.Popen([str(BIN / "pytest"), "--conformance", "-p", "no:cacheprovider", "-q", "-W", "ignore",
                             "--conformance-plugin", "acme", "--conformance-sign-key", str(keys["vendor"])],
                            cwd=run, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 120
    try:
        # RAC102 runs discovery on an empty host, where this plugin hangs: interrupt it there.
        while not marker.exists():
            assert proc.poll() is None and time.monotonic() < deadline, "the run ended before discovery started"
            time.sleep(0.05)
        proc.send_signal(signal.SIGINT)
        # The interrupt takes effect once the hung call returns: let it return as soon as the signal has been
        # delivered to the process (Python's handler has marked it), not after the plugin's own 20 s.
        wait_for(lambda: sigint_pending(proc.pid), lambda pending: not pending, timeout=60, interval=0.01,
                 what="the SIGINT to be delivered to the conformance run")
        release.touch()
        seen = proc.communicate(timeout=120)[0]
    finally:
        if proc.poll() is None:
            proc.kill()
    data = json.loads(report.read_text())
    assert proc.returncode == 2, seen.decode()[-3000:]  # pytest's "interrupted"
    assert data["complete"] is False and "KeyboardInterrupt" in data["incomplete_reason"]
    # The check that was interrupted did not pass: it is not recorded as passed (nor is any check after it).
    passed = [c["id"] for c in data["checks"] if c["outcome"] == "passed"]
    assert "RAC101" in passed and "RAC102" not in passed
    one_error_line(verify(report, keys["vendor"], env), "the run did not finish")


FAILING_SESSION_PLUGIN = '''
def pytest_runtest_logreport(report):
    if report.when == "call" and "RAC102" in report.nodeid:
        raise RuntimeError("a reporting plugin broke")  # pytest ends the session: INTERNALERROR
'''


def test_a_run_whose_session_failed_is_signed_incomplete(keys: dict[str, Path], tmp_path: Path) -> None:
    (tmp_path / "plugin").mkdir()
    (tmp_path / "plugin" / "failing_session.py").write_text(FAILING_SESSION_PLUGIN)
    env = env_for(tmp_path / "plugin", TESTS_DIR, plugins="acme=rayaccel_testplugins.acme")
    run = tmp_path / "run"
    run.mkdir()
    proc = conformance(run, env, "-p", "failing_session", "--conformance-plugin", "acme", "--conformance-tier",
                       "experimental", "--conformance-sign-key", str(keys["vendor"]), timeout=240)
    assert proc.returncode == 3, proc.stdout[-3000:]  # pytest's internal error
    data = json.loads((run / "conformance-report.json").read_text())
    assert data["complete"] is False and data["incomplete_reason"] == "the session failed (internal error)"
    assert statement_of(data)["predicate"]["complete"] is False
    one_error_line(verify(run / "conformance-report.json", keys["vendor"], env), "the run did not finish")
