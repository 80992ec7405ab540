"""Maturity over time (issue 45): two releases of a test plugin graded into signed reports, diffed, and listed by
the tier registry, whose page is read in headless Chromium.

TWO real ``pytest --conformance --conformance-sign-key`` runs (module fixture): release 1.0
(``rayaccel_testplugins.acme_release_1``: ACME with its own ``ACME_FILE`` transport), then release 1.1
(``acme_release_2``: the transport's receive waits 0.25 s) held to release 1.0's report with
``--conformance-baseline``. The real ``rayaccel certify`` CLI runs as a subprocess on them.

Release 1.0 is ``acme_wired``'s hooks under a version, so its run is also where ``acme_wired``'s own ``ACME_FILE``
transport is read through RAC301 (one node, a killed peer), RAC311 (two nodes, a killed sender) and RAC312 (a fault
cordoned and recovered): test_conformance_collectives.py and test_conformance_recovery.py graded it once more each.
"""

from __future__ import annotations

import base64
import json
import shutil
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from test_conformance_attestation import conformance, env_for, rayaccel

from rayaccel_conformance.report.document import digest_of
from rayaccel_conformance.report.signing import load_private_key, sign
from rayaccel_conformance.report.tier_registry import RULE, held_levels

TESTS_DIR = Path(__file__).parents[1]  # tests/, where the test plugins are
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
HOSTILE = "<img src=x onerror=alert(1)>"

pytestmark = [pytest.mark.ray, pytest.mark.slow]


@pytest.fixture(scope="module")
def releases(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    work = tmp_path_factory.mktemp("releases")
    assert rayaccel("certify", "keygen", str(work / "vendor.key")).returncode == 0
    reports: dict[str, Path] = {}
    procs = {}
    for release, module, extra in (("1.0", "acme_release_1", ()),
                                   ("1.1", "acme_release_2", ("--conformance-baseline", "1.0.json"))):
        run = work / "reports" / "acme"
        run.mkdir(parents=True, exist_ok=True)
        env = env_for(TESTS_DIR, plugins=f"acme=rayaccel_testplugins.{module}")
        procs[release] = conformance(run, env, "--conformance-plugin", "acme", "--conformance-sign-key",
                                     str(work / "vendor.key"), "--conformance-report", f"{release}.json", *extra)
        reports[release] = run / f"{release}.json"
        assert reports[release].exists(), procs[release].stdout[-3000:] + procs[release].stderr[-3000:]
    return {"work": work, "reports": reports, "procs": procs, "pub": work / "vendor.key.pub",
            "data": {r: json.loads(p.read_text()) for r, p in reports.items()}}


def check(data: dict[str, Any], check_id: str) -> dict[str, Any]:
    found: list[dict[str, Any]] = [c for c in data["checks"] if c["id"] == check_id]
    assert len(found) == 1, check_id
    return found[0]


def figure(data: dict[str, Any], name: str) -> dict[str, Any]:
    found: list[dict[str, Any]] = [f for f in data["figures"] if f["name"] == name]
    assert len(found) == 1, name
    return found[0]


def test_each_report_records_its_environment_and_figures_and_summary_shows_them(releases: dict[str, Any]) -> None:
    first, second = releases["data"]["1.0"], releases["data"]["1.1"]
    for data, release in ((first, "1.0"), (second, "1.1")):
        env = data["environment"]
        assert env["ray"] == data["versions"]["ray"] and env["python"] == data["versions"]["python"]
        assert env["kernel"] and env["os"] and env["torch"] and env["hardware_fingerprint"].startswith("sha256:")
        [plugin] = env["plugins"]
        assert plugin["release"] == release
        assert plugin["families"] == [{"family": "acme", "driver": ["3.1.4"], "runtime": [], "firmware": []}]
        names = {f["name"] for f in data["figures"]}
        assert {"inventory build", "monitor poll", "transport RAYACCEL_SHM latency",
                "transport RAYACCEL_SHM bandwidth", "transport ACME_FILE latency",
                "transport ACME_FILE bandwidth"} <= names
    assert check(first, "RAC310")["outcome"] == "passed"
    assert figure(first, "transport ACME_FILE latency")["baseline"] is None
    shown = rayaccel("certify", "summary", str(releases["reports"]["1.0"]))
    assert shown.returncode == 0, shown.stderr
    assert "plugin acme 1.0" in shown.stdout and "family acme: driver 3.1.4" in shown.stdout
    assert "figure acme transport ACME_FILE bandwidth" in shown.stdout


def test_a_slower_transport_fails_rac310_naming_the_figure(releases: dict[str, Any]) -> None:
    second = releases["data"]["1.1"]
    rac310 = check(second, "RAC310")
    assert rac310["outcome"] == "failed", rac310
    evidence = "\n".join(rac310["evidence"])
    assert "transport ACME_FILE latency regressed" in evidence
    assert "transport ACME_FILE bandwidth regressed" in evidence
    latency = figure(second, "transport ACME_FILE latency")
    assert latency["regressed"] and latency["value"] > 250  # every receive waits 0.25 s
    assert latency["baseline"] == figure(releases["data"]["1.0"], "transport ACME_FILE latency")["value"]
    assert [c["id"] for c in second["checks"] if c["outcome"] == "failed"] == ["RAC310"]
    page = releases["reports"]["1.1"].with_suffix(".html").read_text()  # the run's own HTML view shows it too
    assert '<tr class="regressed"><td>acme</td><td>transport ACME_FILE latency</td>' in page


def test_certify_diff_names_every_changed_version_check_and_figure(releases: dict[str, Any]) -> None:
    a, b = releases["reports"]["1.0"], releases["reports"]["1.1"]
    done = rayaccel("certify", "diff", str(a), str(b))
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert "plugin acme release: 1.0 -> 1.1" in lines
    assert "check RAC310 acme: passed -> failed (REGRESSION)" in lines
    first, second = releases["data"]["1.0"], releases["data"]["1.1"]
    for f in second["figures"]:
        before = figure(first, f["name"])["value"]
        mine = [line for line in lines if line.startswith(f"figure acme {f['name']}:")]
        assert len(mine) == (before != f["value"]), (f, mine)
    assert any(line.startswith("figure acme transport ACME_FILE latency:") and "REGRESSION, checked by RAC310" in line
               for line in lines)
    changed = {(c["id"], c["fixture"]) for c in second["checks"]} ^ {(c["id"], c["fixture"]) for c in first["checks"]}
    outcomes = [c for c in second["checks"] if c["outcome"] != next(
        (o["outcome"] for o in first["checks"] if (o["id"], o["fixture"]) == (c["id"], c["fixture"])), None)]
    assert not changed and len([line for line in lines if line.startswith("check ")]) == len(outcomes)
    assert lines[-1].endswith(f"{len(lines) - 1} changes, {sum('(REGRESSION' in x for x in lines)} regressions")
    missing = rayaccel("certify", "diff", str(a), str(a.parent / "nope.json"))
    assert missing.returncode == 2 and len(missing.stderr.strip().splitlines()) == 1
    assert "nope.json" in missing.stderr and "Traceback" not in missing.stderr


# acme_wired's transport and recovery, as release 1.0's run graded them -----------------------------------------


def test_rac301_runs_the_plugins_own_transport_through_a_killed_peer(releases: dict[str, Any]) -> None:
    rac301 = check(releases["data"]["1.0"], "RAC301")
    assert rac301["outcome"] == "passed", rac301
    assert rac301["evidence"] == [
        "ACME_FILE: transfer 1: 4 tensors, bytes identical, ref freed; aborted transfer: the receive failed, the "
        "receiver holds no more descriptors or threads than before; transfer 2: 4 tensors, bytes "
        "identical, ref freed; 6 more transfers: the receiver holds no descriptor or thread per transfer; killed "
        "sender: the receive failed naming the transport, the receiver holds no more descriptors or threads than "
        "before; transfer 3: 4 tensors, bytes identical, ref freed"]


def test_a_transport_moves_tensors_between_two_nodes_and_recovers_from_a_killed_sender(
        releases: dict[str, Any]) -> None:
    rac311 = check(releases["data"]["1.0"], "RAC311")
    evidence = "\n".join(rac311["evidence"])
    assert rac311["outcome"] == "passed", evidence
    assert "two nodes of acme/acme-4, each a simulated host of its own" in evidence
    assert ("ACME_FILE: tensors moved between the nodes, bytes identical; a sender killed mid-transfer: the receive "
            "failed naming the transport, the 1 file(s) it had put on the machine freed, the next transfer worked"
            ) in evidence


def test_acme_recovers_a_fault_through_its_nodes_monitor(releases: dict[str, Any]) -> None:
    """RAC312 for acme (test_conformance_recovery.py grades the five reference plugins)."""
    rac312 = check(releases["data"]["1.0"], "RAC312")
    evidence = "\n".join(rac312["evidence"])
    assert rac312["outcome"] == "passed", evidence
    assert evidence.startswith("acme/acme-4: monitor up and polling in "), evidence
    assert "cordoned" in evidence and "recovered in" in evidence and "a task asking for 1 " in evidence


class Dom(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.rows: list[tuple[str, list[str]]] = []
        self.text: list[str] = []
        self._row: tuple[str, list[str]] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        if tag == "tr":
            self._row = (dict(attrs).get("class") or "", [])
            self.rows.append(self._row)

    def handle_data(self, data: str) -> None:
        self.text.append(data)
        if self._row is not None:
            self._row[1].append(data)


def test_the_registry_shows_the_level_held_the_regression_and_a_forged_report_rejected(
        releases: dict[str, Any], tmp_path: Path) -> None:
    folder = tmp_path / "reports"
    shutil.copytree(releases["work"] / "reports", folder)
    for extra in folder.rglob("*"):
        if extra.is_file() and extra.suffix != ".json":
            extra.unlink()  # the HTML and XML beside each report are not reports
    forged = json.loads(json.dumps(releases["data"]["1.1"]))
    rac310 = next(c for c in forged["checks"] if c["id"] == "RAC310")
    rac310["outcome"], rac310["evidence"] = "passed", ["as fast as ever"]
    plugin = forged["plugins"][0]
    plugin["passed"], plugin["failed"] = plugin["passed"] + 1, plugin["failed"] - 1
    forged["digest"] = digest_of(forged)  # self-consistent: only the signature can tell
    (folder / "forged").mkdir()
    (folder / "forged" / f"{HOSTILE}.json").write_text(json.dumps(forged))
    site = tmp_path / "site"
    done = rayaccel("certify", "registry", str(folder), "-o", str(site), "--key", str(releases["pub"]))
    assert done.returncode == 0, done.stderr
    index = json.loads((site / "registry.json").read_text())
    [acme] = index["plugins"]
    first, second = (p["tier"] for p in (releases["data"]["1.0"]["plugins"][0], releases["data"]["1.1"]["plugins"][0]))
    assert [r["release"] for r in acme["releases"]] == ["1.0", "1.1"]
    assert first == second and acme["held"] == first  # two consecutive releases at it: held, the regression or not
    [one_zero, one_one] = acme["releases"]
    assert one_zero["regressions"] == [] and one_zero["held"] is None  # one release holds nothing yet
    regressions = "\n".join(one_one["regressions"])
    assert "check RAC310 passed -> failed" in regressions
    assert "figure transport ACME_FILE latency" in regressions and "checked by RAC310" in regressions
    [rejected] = index["rejected"]
    assert rejected["report"] == f"forged/{HOSTILE}.json" and "edited after the run" in rejected["reason"]
    profile = tmp_path / "chromium-profile"
    shown = subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                            f"--user-data-dir={profile}", "--dump-dom", (site / "index.html").as_uri()],
                           capture_output=True, text=True, timeout=120, check=False)
    assert shown.returncode == 0, shown.stderr[-2000:]
    dom = Dom()
    dom.feed(shown.stdout)
    text = " ".join(dom.text)
    assert "img" not in dom.tags and "script" not in dom.tags  # the hostile file name stayed text
    assert f"forged/{HOSTILE}.json" in text and " ".join(RULE.split()) in " ".join(text.split())
    highlighted = [" ".join(cells) for cls, cells in dom.rows if cls == "regression"]
    assert len(highlighted) == 1 and highlighted[0].startswith("1.1")
    assert "transport ACME_FILE latency" in highlighted[0] and "RAC310" in highlighted[0]
    assert [cls for cls, _ in dom.rows].count("rejected") == 1


def older_suite_release(data: dict[str, Any], key: Path) -> dict[str, Any]:
    """Release 1.0's report as an older suite (without RAC306) would have made it for release 0.9, signed by the
    vendor's key the way a run signs (the in-toto statement of the report, in a DSSE envelope)."""
    old: dict[str, Any] = json.loads(json.dumps(data))
    old["checks"] = [c for c in old["checks"] if c["id"] != "RAC306"]
    old["plugins"][0]["passed"] -= 1
    old["environment"]["plugins"][0]["release"] = "0.9"
    old["created"] = "2026-01-01T00:00:00+00:00"
    old["attestation"] = None
    old["digest"] = digest_of(old)
    stmt = json.loads(base64.b64decode(data["attestation"]["payload"]))
    stmt["predicate"]["report"] = {k: v for k, v in old.items() if k not in ("digest", "attestation")}
    body = json.dumps(stmt, sort_keys=True, separators=(",", ":")).encode()
    old["attestation"] = sign(body, load_private_key(key)).model_dump(mode="json")
    return old


def test_a_release_graded_by_an_older_suite_counts_toward_the_level(releases: dict[str, Any],
                                                                     tmp_path: Path) -> None:
    """Three releases: 0.9 (an older suite, one check fewer), 1.0, 1.1: the level is held from 1.0 on."""
    folder = tmp_path / "reports"
    folder.mkdir()
    for release in ("1.0", "1.1"):
        shutil.copy(releases["reports"][release], folder / f"{release}.json")
    (folder / "0.9.json").write_text(json.dumps(older_suite_release(releases["data"]["1.0"],
                                                                    releases["work"] / "vendor.key")))
    done = rayaccel("certify", "registry", str(folder), "-o", str(tmp_path / "site"), "--key", str(releases["pub"]))
    assert done.returncode == 0, done.stderr
    index = json.loads((tmp_path / "site" / "registry.json").read_text())
    assert index["rejected"] == []
    [acme] = index["plugins"]
    tier = releases["data"]["1.0"]["plugins"][0]["tier"]
    assert [(r["release"], r["tier"], r["held"]) for r in acme["releases"]] == [
        ("0.9", tier, None), ("1.0", tier, tier), ("1.1", tier, tier)]
    assert f"acme (acme): holds {tier}" in done.stdout


def test_registry_bad_input_is_one_line_and_exit_2(releases: dict[str, Any], tmp_path: Path) -> None:
    afile = tmp_path / "file"
    afile.write_text("x")
    for args, needle in (((str(tmp_path / "missing"), "-o", str(tmp_path / "s")), "not a folder of reports"),
                         ((str(tmp_path), "-o", str(afile)), "a file, not a folder"),
                         ((str(tmp_path), "-o", str(tmp_path / "s"), "--key", str(afile)), "not a PEM public key")):
        done = rayaccel("certify", "registry", *args, *(("--key", str(releases["pub"])) if "--key" not in args
                                                        else ()))
        assert done.returncode == 2, done.stdout + done.stderr
        assert len(done.stderr.strip().splitlines()) == 1 and needle in done.stderr, done.stderr
        assert not (tmp_path / "s" / "index.html").exists()


@pytest.mark.parametrize(("tiers", "held"), [
    (["supported"], [None]),
    (["supported", "supported"], [None, "supported"]),
    (["supported", "supported", "experimental"], [None, "supported", "supported"]),
    (["supported", "supported", "experimental", "experimental"], [None, "supported", "supported", "experimental"]),
    (["supported", "supported", "experimental", "supported", "experimental"],
     [None, "supported", "supported", "supported", "supported"]),
    (["certified", "supported", None, None], [None, "supported", "supported", None]),
])
def test_a_level_is_held_after_two_releases_at_it_and_lost_after_two_below(tiers: list[str | None],
                                                                           held: list[str | None]) -> None:
    assert held_levels(tiers) == held


if __name__ == "__main__":  # pragma: no cover
    sys.exit(pytest.main([__file__]))
