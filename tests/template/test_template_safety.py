"""Answers are data: a payload in an answer is never executed and nothing is written outside the output folder.

Each payload would ``touch`` a marker file if it ran. It is tried through plain ``cookiecutter`` (the
template's sandboxing extension and its pre-generation hook are all that stand in the way), through
``rayaccel new`` (which refuses it before cookiecutter starts), at the interactive prompt (stored in
``.cruft.json`` and replayed by cruft on an upgrade), and as a tampered ``.cruft.json``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
TEMPLATE = REPO / "templates" / "vendor-plugin"
GIT_ENV = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@example.com"}


def payload(marker: Path) -> str:
    return "{{ cycler.__init__.__globals__.os.popen('touch " + str(marker) + "').read() }}"


def run(argv: list[str], cwd: Path, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, **GIT_ENV, "HOME": str(cwd / "home")}  # cookiecutter's replay files stay here
    return subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=180, env=env, input=stdin)


def files_under(root: Path) -> set[Path]:
    return {p for p in root.rglob("*") if "home" not in p.relative_to(root).parts[:1]}


@pytest.fixture
def sandbox(tmp_path: Path) -> Path:
    """A work folder with an output folder inside it: anything outside ``out`` is an escape."""
    (tmp_path / "work" / "out").mkdir(parents=True)
    return tmp_path / "work"


def assert_nothing_happened(work: Path, before: set[Path], marker: Path) -> None:
    assert not marker.exists(), "the payload ran"
    escaped = {p for p in files_under(work) - before if "out" not in p.relative_to(work).parts[:1]}
    assert escaped == set(), escaped
    assert not (work.parent / "escaped").exists()


@pytest.mark.parametrize("answer", [
    "vendor_name=Evil {payload} Corp",
    "maintainers=Ann, {payload}",
    "support_contact={payload}",
    "vendor_name={{% set x = cycler.__init__ %}}ACME",
    "__project_slug=../escaped",
    "__family=../../escaped",
    "__module={payload}",
])
def test_plain_cookiecutter_runs_no_payload_and_writes_nothing_outside(answer: str, sandbox: Path) -> None:
    marker = sandbox / "PWNED"
    before = files_under(sandbox)
    done = run([sys.executable, "-m", "cookiecutter", "--no-input", str(TEMPLATE), "-o", "out",
                answer.format(payload=payload(marker))], cwd=sandbox)
    assert done.returncode != 0, done.stdout[-2000:]
    assert "template syntax" in done.stdout + done.stderr or "out of the output folder" in done.stdout + done.stderr \
        or "hidden variable" in done.stdout + done.stderr, done.stdout[-2000:] + done.stderr[-2000:]
    assert_nothing_happened(sandbox, before, marker)
    assert list((sandbox / "out").iterdir()) == []


@pytest.mark.parametrize("answer", [
    "vendor_name=Evil {payload} Corp",
    "family_name={{#",
    "__project_slug=../escaped",
    "_extensions=x",
    "vendor_name=ACME/../../escaped",
])
def test_rayaccel_new_refuses_before_cookiecutter_starts(answer: str, sandbox: Path) -> None:
    marker = sandbox / "PWNED"
    before = files_under(sandbox)
    done = run([sys.executable, "-m", "rayaccel", "new", "--no-input", "-o", "out",
                answer.format(payload=payload(marker))], cwd=sandbox)
    assert done.returncode == 2, done.stdout + done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and done.stderr.startswith("error: "), done.stderr
    assert_nothing_happened(sandbox, before, marker)
    assert list((sandbox / "out").iterdir()) == []


def questions() -> int:
    """How many questions the template asks (its keys without a leading underscore)."""
    return len([k for k in json.loads((TEMPLATE / "cookiecutter.json").read_text()) if not k.startswith("_")])


def test_a_payload_at_the_prompt_is_refused_at_that_prompt(sandbox: Path) -> None:
    marker = sandbox / "PWNED"
    # vendor_name: payload (refused, asked again), then ACME Corp; every other question: its default.
    total = questions()
    answers = [f"Evil {payload(marker)}", "ACME Corp", *[""] * (total - 1)]
    done = run([sys.executable, "-m", "rayaccel", "new", "-o", "out"], cwd=sandbox, stdin="\n".join(answers) + "\n")
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "vendor_name contains template syntax" in done.stderr
    # Reported at the first prompt: the second question was asked only after the refusal.
    assert done.stdout.count(f"[1/{total}]") == 2, done.stdout
    assert done.stdout.index(f"[2/{total}]") > done.stdout.rindex(f"[1/{total}]"), done.stdout
    record = json.loads((sandbox / "out" / "rayaccel-acme" / ".cruft.json").read_text())
    assert record["context"]["cookiecutter"]["vendor_name"] == "ACME Corp"
    assert not marker.exists()
    assert "next: cd out/rayaccel-acme && " in done.stdout  # relative to where `rayaccel new` ran


def test_plain_cookiecutter_refuses_a_payload_typed_at_its_prompt(sandbox: Path) -> None:
    """cookiecutter stores a typed answer without rendering it; the template's hook refuses it, so it is
    never baked (nor recorded in .cruft.json to be replayed by an upgrade)."""
    marker = sandbox / "PWNED"
    before = files_under(sandbox)
    answers = [f"Evil {payload(marker)}", *[""] * (questions() - 1)]
    done = run([sys.executable, "-m", "cookiecutter", str(TEMPLATE), "-o", "out"], cwd=sandbox,
               stdin="\n".join(answers) + "\n")
    assert done.returncode != 0
    assert "error: vendor_name contains template syntax" in done.stderr, done.stderr[-2000:]
    assert_nothing_happened(sandbox, before, marker)
    assert list((sandbox / "out").iterdir()) == []


def _template_repo(root: Path) -> Path:
    repo = root / "template-repo"
    shutil.copytree(TEMPLATE, repo / "templates" / "vendor-plugin", ignore=shutil.ignore_patterns("__pycache__"))
    for argv in (["git", "init", "-q"], ["git", "add", "-A"], ["git", "commit", "-q", "-m", "v1"]):
        assert run(argv, cwd=repo).returncode == 0
    return repo


def _tampered_bake(root: Path, context: dict[str, str]) -> Path:
    """A project baked from a template repository under ``root``, its record's answers then changed to
    ``context`` and committed, and a later template version to upgrade to (so cruft would really replay the
    answers); returns the project."""
    repo = _template_repo(root)
    out = root / "out"
    out.mkdir()
    baked = run([sys.executable, "-m", "rayaccel", "new", "--no-input", "--template",
                 str(repo / "templates" / "vendor-plugin"), "-o", str(out), "vendor_name=ACME Corp"], cwd=root)
    assert baked.returncode == 0, baked.stderr
    project = out / "rayaccel-acme"
    record_path = project / ".cruft.json"
    record = json.loads(record_path.read_text())
    record["context"]["cookiecutter"].update(context)
    record_path.write_text(json.dumps(record, indent=2))
    for argv in (["git", "add", "-A"], ["git", "commit", "-q", "-m", "baked, then tampered"]):
        assert run(argv, cwd=project).returncode == 0
    readme = repo / "templates" / "vendor-plugin" / "{{cookiecutter.__project_slug}}" / "README.md"
    readme.write_text(readme.read_text() + "\nv2\n")
    for argv in (["git", "add", "-A"], ["git", "commit", "-q", "-m", "v2"]):
        assert run(argv, cwd=repo).returncode == 0
    return project


def test_upgrade_refuses_a_tampered_record_and_runs_nothing(tmp_path: Path) -> None:
    marker = tmp_path / "PWNED"
    project = _tampered_bake(tmp_path, {"vendor_name": f"ACME {payload(marker)}"})
    refused = run([sys.executable, "-m", "rayaccel", "upgrade", str(project)], cwd=tmp_path)
    assert refused.returncode == 2 and "vendor_name contains template syntax" in refused.stderr, refused.stderr
    assert len(refused.stderr.strip().splitlines()) == 1
    assert not marker.exists()
    # Plain cruft replays it: the template's sandboxing extension stops it there too.
    replay = run([sys.executable, "-m", "cruft", "update", "-y"], cwd=project)
    assert replay.returncode != 0
    assert not marker.exists()


def test_a_tampered_hidden_variable_in_the_record_is_not_replayed(tmp_path: Path) -> None:
    project = _tampered_bake(tmp_path, {"__project_slug": "../escaped", "__module": "../../escaped_module"})
    out, record_path = project.parent, project / ".cruft.json"
    assert json.loads(record_path.read_text())["context"]["cookiecutter"]["__project_slug"] == "../escaped"
    before = files_under(tmp_path)
    done = run([sys.executable, "-m", "rayaccel", "upgrade", str(project)], cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "changed: README.md" in done.stdout
    new = {p for p in files_under(tmp_path) - before if project not in p.parents}
    assert new == set(), new
    assert not (out / "escaped").exists() and not (tmp_path / "escaped").exists()
    # The record's hidden variables are derived again, not kept.
    assert json.loads(record_path.read_text())["context"]["cookiecutter"]["__project_slug"] == "rayaccel-acme"


@pytest.mark.parametrize("answers", [[], ["support_contact=not a contact"]], ids=["baked", "refused-by-the-hook"])
def test_a_bake_leaves_no_rendered_hook_in_the_temp_directory(answers: list[str], sandbox: Path) -> None:
    """Cookiecutter renders each hook, answers and all, into a temp file it never removes (cookiecutter issue
    886); the hooks remove their own copy, so a bake, even a refused one, leaves the temp directory as it was."""
    temp = sandbox.parent / "temp"
    temp.mkdir()
    env = {**os.environ, **GIT_ENV, "HOME": str(sandbox / "home"), "TMPDIR": str(temp)}
    done = subprocess.run([sys.executable, "-m", "cookiecutter", "--no-input", str(TEMPLATE), "-o", "out", *answers],
                          cwd=sandbox, capture_output=True, text=True, timeout=180, env=env)
    assert (done.returncode == 0) == (not answers), done.stderr[-2000:]
    if answers:
        assert "support contact" in done.stderr, done.stderr[-2000:]
    assert sorted(p.name for p in temp.iterdir()) == []
