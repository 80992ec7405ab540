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

REPO = Path(__file__).resolve().parents[2]
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
    # `rayaccel new` made the first commit: upgrade needs committed work, and there is nothing left to commit.
    assert run(["git", "status", "--porcelain"], cwd=project).stdout == ""
    assert run(["git", "rev-list", "--count", "HEAD"], cwd=project).stdout.strip() == "1"
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


def template_change(template_repo: Path, marker: str, extra: dict[str, str] | None = None) -> str:
    """A new template commit: a line added to the baked README (and any extra files), committed."""
    inner = template_repo / "templates" / "vendor-plugin" / "{{cookiecutter.__project_slug}}"
    readme = inner / "README.md"
    readme.write_text(readme.read_text() + f"\n{marker}\n")
    for name, text in (extra or {}).items():
        (inner / name).write_text(text)
    return commit_all(template_repo, marker)


def keys_of(record: dict[str, object]) -> list[object]:
    context = record["context"]["cookiecutter"]  # type: ignore[index]
    return [list(record), list(context)]  # type: ignore[arg-type]


@pytest.mark.parametrize("how", ["relative path", "clone URL"])
def test_upgrades_from_how_the_vendor_baked_succeed_twice(how: str, template_repo: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    if how == "relative path":  # plain cookiecutter, as the docs show it, from the folder above the template
        argv = [sys.executable, "-m", "cookiecutter", "--no-input", "templates/vendor-plugin", "-o",
                os.path.relpath(out, template_repo), "vendor_name=ACME Corp"]
        baked = run(argv, cwd=template_repo, home=tmp_path / "home")
    else:  # a clone URL (cookiecutter knows a git URL by its .git ending)
        url_repo = tmp_path / "template.git"
        assert run(["git", "clone", "-q", str(template_repo), str(url_repo)]).returncode == 0
        template_repo = url_repo
        argv = [sys.executable, "-m", "rayaccel", "new", "--no-input", "--template", f"file://{template_repo}",
                "--directory", "templates/vendor-plugin", "-o", str(out), "vendor_name=ACME Corp"]
        baked = run(argv, cwd=tmp_path, home=tmp_path / "home")
    assert baked.returncode == 0, baked.stderr[-3000:]
    assert "not in a git repository" not in baked.stderr
    project = out / "rayaccel-acme"
    record = json.loads((project / ".cruft.json").read_text())
    v1 = run(["git", "rev-parse", "HEAD"], cwd=template_repo).stdout.strip()
    assert record["commit"] == v1 and record["directory"] == "templates/vendor-plugin"
    assert record["template"] == (str(template_repo) if how == "relative path" else f"file://{template_repo}")
    assert (project / ".git").is_dir()  # the template's post-generation hook ran git init
    if how == "relative path":  # plain cookiecutter leaves the first commit to the vendor
        commit_all(project, "baked")
    assert run(["git", "status", "--porcelain"], cwd=project).stdout == ""  # `rayaccel new` committed it itself
    first_keys = keys_of(record)
    for n in (2, 3):
        version = template_change(template_repo, f"template v{n}")
        done = run([sys.executable, "-m", "rayaccel", "upgrade", str(project)], cwd=tmp_path)
        assert done.returncode == 0, done.stdout + done.stderr
        assert f"to {version[:12]}" in done.stdout and "changed: README.md" in done.stdout
        assert f"template v{n}" in (project / "README.md").read_text()
        record = json.loads((project / ".cruft.json").read_text())
        assert record["commit"] == version and keys_of(record) == first_keys  # key order is stable
        commit_all(project, f"upgraded to v{n}")


def test_upgrade_from_a_moved_template_then_again_without_naming_it(template_repo: Path, tmp_path: Path) -> None:
    project = bake(template_repo, tmp_path / "out")
    moved = tmp_path / "moved-template"
    assert run(["git", "clone", "-q", str(template_repo), str(moved)]).returncode == 0
    shutil.rmtree(template_repo)  # the old location is gone
    v2 = template_change(moved, "template v2")
    relative = os.path.relpath(moved / "templates" / "vendor-plugin", tmp_path)
    done = run([sys.executable, "-m", "rayaccel", "upgrade", str(project), "--template", relative], cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"to {v2[:12]} (template now at {moved})" in done.stdout, done.stdout
    record = json.loads((project / ".cruft.json").read_text())
    assert (record["template"], record["commit"]) == (str(moved), v2)
    commit_all(project, "v2")
    v3 = template_change(moved, "template v3")
    again = run([sys.executable, "-m", "rayaccel", "upgrade", str(project)], cwd=tmp_path)
    assert again.returncode == 0 and f"to {v3[:12]}" in again.stdout, again.stdout + again.stderr


def test_a_template_that_lacks_the_baked_commit_is_one_clear_line(template_repo: Path, tmp_path: Path) -> None:
    project = bake(template_repo, tmp_path / "out")
    other = tmp_path / "other"
    shutil.copytree(template_repo / "templates", other / "templates")
    assert run(["git", "init", "-q", str(other)]).returncode == 0
    commit_all(other, "unrelated history")
    done = run([sys.executable, "-m", "rayaccel", "upgrade", str(project), "--template", str(other)])
    assert done.returncode == 2, done.stdout + done.stderr
    assert "does not have the commit this project was baked from" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr


def test_a_conflict_is_reported_without_success_and_deleted_files_are_named(template_repo: Path,
                                                                           tmp_path: Path) -> None:
    project = bake(template_repo, tmp_path / "out")
    # The vendor rewrites the README's first line and deletes the changelog.
    readme = project / "README.md"
    lines = readme.read_text().splitlines(keepends=True)
    readme.write_text("# our own title\n" + "".join(lines[1:]))
    (project / "CHANGELOG.md").unlink()
    commit_all(project, "our title; no changelog")
    inner = template_repo / "templates" / "vendor-plugin" / "{{cookiecutter.__project_slug}}"
    template_readme = inner / "README.md"
    text = template_readme.read_text().splitlines(keepends=True)
    template_readme.write_text("# the template's new title\n" + "".join(text[1:]))
    changelog = inner / "CHANGELOG.md"
    changelog.write_text(changelog.read_text() + "\n- template v2\n")
    commit_all(template_repo, "template v2")

    done = run([sys.executable, "-m", "rayaccel", "upgrade", str(project)])
    assert done.returncode == 2, done.stdout + done.stderr
    assert "Good work" not in done.stdout + done.stderr and "upgraded" not in done.stdout
    assert "conflicts with your edits in README.md" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


def test_after_a_conflict_the_record_names_the_moved_template_and_what_merged(template_repo: Path,
                                                                            tmp_path: Path) -> None:
    project = bake(template_repo, tmp_path / "out")
    # The baked project ignores signing keys: the certified steps write vendor.key into the project folder.
    (project / "vendor.key").write_text("secret")
    (project / "vendor.key.pub").write_text("public")
    assert run(["git", "status", "--porcelain"], cwd=project).stdout == "?? vendor.key.pub\n"
    (project / "vendor.key.pub").unlink()
    readme = project / "README.md"
    readme.write_text("# our own title\n" + "".join(readme.read_text().splitlines(keepends=True)[1:]))
    commit_all(project, "our title")
    first_keys = keys_of(json.loads((project / ".cruft.json").read_text()))
    moved = tmp_path / "moved-template"
    assert run(["git", "clone", "-q", str(template_repo), str(moved)]).returncode == 0
    shutil.rmtree(template_repo)
    inner = moved / "templates" / "vendor-plugin" / "{{cookiecutter.__project_slug}}"
    text = (inner / "README.md").read_text().splitlines(keepends=True)
    (inner / "README.md").write_text("# the template's new title\n" + "".join(text[1:]))
    (inner / "CHANGELOG.md").write_text((inner / "CHANGELOG.md").read_text() + "\n- template v2\n")
    v2 = commit_all(moved, "template v2")

    done = run([sys.executable, "-m", "rayaccel", "upgrade", str(project), "--template", str(moved)])
    assert done.returncode == 2, done.stdout + done.stderr
    [line] = done.stderr.strip().splitlines()
    assert "conflicts with your edits in README.md" in line and "merged cleanly: CHANGELOG.md" in line, line
    record = json.loads((project / ".cruft.json").read_text())
    assert (record["template"], record["commit"]) == (str(moved), v2)  # the next upgrade starts where v2 is
    assert record["context"]["cookiecutter"]["_template"] == str(moved)
    assert keys_of(record) == first_keys


def test_a_template_change_to_a_deleted_file_is_reported(template_repo: Path, tmp_path: Path) -> None:
    project = bake(template_repo, tmp_path / "out")
    (project / "CHANGELOG.md").unlink()
    commit_all(project, "no changelog")
    changelog = template_repo / "templates" / "vendor-plugin" / "{{cookiecutter.__project_slug}}" / "CHANGELOG.md"
    changelog.write_text(changelog.read_text() + "\n- template v2\n")
    template_change(template_repo, "template v2")
    done = run([sys.executable, "-m", "rayaccel", "upgrade", str(project)])
    assert done.returncode == 0, done.stdout + done.stderr
    assert "the template changed CHANGELOG.md, which this project deleted" in done.stdout
    assert not (project / "CHANGELOG.md").exists()
