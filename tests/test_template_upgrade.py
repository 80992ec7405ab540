"""A project baked from template v1 is upgraded to v2: the template's change arrives, the vendor's edit stays.

The template is a copy in a temporary git repository, so the test can change it without touching ours.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
GIT_ENV = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@example.com"}


def run(argv: list[str], cwd: Path | None = None, home: Path | None = None) -> subprocess.CompletedProcess[str]:
    # HOME in tmp: cookiecutter writes replay files there, and git reads no user config.
    env = {**os.environ, **GIT_ENV, **({"HOME": str(home)} if home else {})}
    return subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=120, env=env)


def commit_all(repo: Path, message: str) -> str:
    for argv in (["git", "add", "-A"], ["git", "commit", "-q", "-m", message]):
        done = run(argv, cwd=repo)
        assert done.returncode == 0, done.stderr
    return run(["git", "rev-parse", "HEAD"], cwd=repo).stdout.strip()


@pytest.fixture
def template_repo(tmp_path: Path) -> Path:
    repo = tmp_path / "template-repo"
    shutil.copytree(REPO / "templates" / "vendor-plugin", repo / "templates" / "vendor-plugin")
    assert run(["git", "init", "-q", str(repo)]).returncode == 0
    commit_all(repo, "template v1")
    return repo


def bake(template_repo: Path, out: Path) -> Path:
    out.mkdir()
    done = run([sys.executable, "-m", "rayaccel", "new", "--no-input", "--template",
                str(template_repo / "templates" / "vendor-plugin"), "-o", str(out), "vendor_name=ACME Corp"],
               home=out.parent / "home")
    assert done.returncode == 0, done.stderr[-3000:]
    project = out / "rayaccel-acme"
    assert run(["git", "init", "-q", str(project)]).returncode == 0
    commit_all(project, "baked from template v1")
    return project


def test_upgrade_brings_the_template_change_and_keeps_the_vendors_edit(template_repo: Path, tmp_path: Path) -> None:
    project = bake(template_repo, tmp_path / "out")
    v1 = json.loads((project / ".cruft.json").read_text())["commit"]
    # The vendor's own edit, committed.
    readme = project / "README.md"
    readme.write_text(readme.read_text() + "\n## Our lab notes\n\nBoard rev C needs firmware 2.1.\n")
    commit_all(project, "our notes")
    # Template v2: a changed line in a file the vendor also edited, and a new file.
    tree = template_repo / "templates" / "vendor-plugin"
    inner = tree / "{{cookiecutter.__project_slug}}"
    template_readme = inner / "README.md"
    text = template_readme.read_text()
    template_readme.write_text(text.replace("## Onboarding steps", "## Onboarding steps (template v2)", 1))
    (inner / "CONTRIBUTING.md").write_text("# Contributing to {{ cookiecutter.__project_slug }}\n")
    context = json.loads((tree / "cookiecutter.json").read_text())
    context["__template_version"] = "2"
    (tree / "cookiecutter.json").write_text(json.dumps(context, indent=2, ensure_ascii=False) + "\n")
    v2 = commit_all(template_repo, "template v2")

    done = run([sys.executable, "-m", "rayaccel", "upgrade", str(project)])
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"to {v2[:12]}" in done.stdout
    upgraded = readme.read_text()
    assert "## Onboarding steps (template v2)" in upgraded  # the template's change arrived
    assert "Board rev C needs firmware 2.1." in upgraded  # the vendor's edit is kept
    assert (project / "CONTRIBUTING.md").read_text() == "# Contributing to rayaccel-acme\n"
    record = json.loads((project / ".cruft.json").read_text())
    assert record["commit"] == v2 != v1
    assert record["context"]["cookiecutter"]["__template_version"] == "2"
    assert list(project.rglob("*.rej")) == []

    commit_all(project, "upgraded to template v2")
    again = run([sys.executable, "-m", "rayaccel", "upgrade", str(project)])
    assert again.returncode == 0 and "already at the template's latest commit" in again.stdout


def test_upgrade_refuses_an_unclean_tree_and_a_project_without_a_record(template_repo: Path, tmp_path: Path) -> None:
    project = bake(template_repo, tmp_path / "out")
    (project / "README.md").write_text("uncommitted\n")
    dirty = run([sys.executable, "-m", "rayaccel", "upgrade", str(project)])
    assert dirty.returncode == 2 and "commit your changes first" in dirty.stderr
    bare = tmp_path / "bare"
    bare.mkdir()
    missing = run([sys.executable, "-m", "rayaccel", "upgrade", str(bare)])
    assert missing.returncode == 2 and len(missing.stderr.strip().splitlines()) == 1
    assert "has no .cruft.json" in missing.stderr
