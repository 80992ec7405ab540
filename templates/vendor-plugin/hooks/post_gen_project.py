"""Finish the baked project: the chosen probe in place, the vendor label in the fixture's expectation, the
template record, git.

Each probe kind is a file of its own (``variants/<kind>/probe.py``, rendered like every other file); the one
answered moves to ``src/<module>/probe.py`` and the others are removed. The answer is only compared with the
variants' folder names, never used as a path of its own.

The record is a cruft state file (``.cruft.json``): the template's source, the commit it was baked
from and every answer, so ``rayaccel upgrade`` (or ``cruft update``) can bring in a newer template and
keep the project's own edits. When cruft itself bakes (it passes ``_commit``), cruft writes the file.
The record's keys are in the order cruft writes them, so an upgrade does not reorder the file.

Then the project becomes a git repository (``git init``), when git is installed: upgrades merge with git.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

CONTEXT = json.loads({{ cookiecutter | tojson | tojson }})
FIXTURE = Path("src") / CONTEXT["__module"] / "fixtures" / f"{CONTEXT['__family']}-4.yaml"
VENDOR_LABEL_MARKER = '"@VENDOR_LABEL@"'
VARIANTS = Path("variants")
PROBE = Path("src") / CONTEXT["__module"] / "probe.py"
#: Paths that describe this bake only and must not be replayed into another one (``_checkout`` is the
#: record's own ``checkout``; cruft leaves it out of the context too).
LOCAL_KEYS = ("_output_dir", "_repo_dir", "_checkout", "_template", "_commit")


def label_value(text: str) -> str:
    """rayaccel.labels.to_label_value, repeated here because the hook may run without rayaccel installed
    (the baked project's own tests compare this fixture with what the SDK computes, so a drift fails)."""
    value = re.sub(r"[^A-Za-z0-9_.-]+", "-", text.strip())
    value = re.sub(r"-{2,}", "-", value)[:63]
    return value.strip("-_.")


def place_probe() -> None:
    """The answered kind's probe.py into the package; the other variants are not part of the project."""
    variants = {path.name: path for path in VARIANTS.iterdir() if (path / "probe.py").is_file()}
    chosen = variants.get(str(CONTEXT["probe_kind"]))
    if chosen is None:  # the pre-generation hook already refused it; never bake a package without a probe
        sys.exit(f"probe_kind {CONTEXT['probe_kind']!r} is not one of {sorted(variants)}")
    (chosen / "probe.py").replace(PROBE)
    shutil.rmtree(VARIANTS)


def fill_vendor_label() -> None:
    text = FIXTURE.read_text(encoding="utf-8")
    label = label_value(CONTEXT["vendor_name"])
    lines = []
    for line in text.splitlines(keepends=True):
        if VENDOR_LABEL_MARKER in line:
            if not label:
                continue  # the SDK leaves out a label whose value would be empty
            line = line.replace(VENDOR_LABEL_MARKER, json.dumps(label))
        lines.append(line)
    FIXTURE.write_text("".join(lines), encoding="utf-8")


def git(repo_dir: str, *args: str) -> str | None:
    try:
        done = subprocess.run(["git", "-C", repo_dir, *args], capture_output=True, text=True, timeout=30,
                              check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def looks_remote(template: str) -> bool:
    return "://" in template or template.startswith(("git@", "gh:", "gl:", "bb:"))


def template_folder() -> str:
    """The template's folder as an absolute path. cookiecutter passes it as given (relative to the folder it
    was started in) while this hook runs inside the new project; cookiecutter itself runs hooks from inside
    the template folder, so its working directory is the answer (Linux: /proc); else the shell's $PWD."""
    repo_dir = str(CONTEXT.get("_repo_dir") or "")
    if not repo_dir or Path(repo_dir).is_absolute():
        return repo_dir
    try:
        parent = os.readlink(f"/proc/{os.getppid()}/cwd")
    except OSError:
        parent = ""
    if parent and (Path(parent) / "cookiecutter.json").is_file() and Path(parent).name == Path(repo_dir).name:
        return parent
    start = os.environ.get("PWD", "")
    if start and (Path(start) / repo_dir / "cookiecutter.json").is_file():
        return str((Path(start) / repo_dir).resolve())
    return repo_dir


def write_record() -> None:
    repo_dir = template_folder()
    top = git(repo_dir, "rev-parse", "--show-toplevel") if repo_dir else None
    commit = git(repo_dir, "rev-parse", "HEAD") if top else None
    directory = (git(repo_dir, "rev-parse", "--show-prefix") or "").rstrip("/") if top else ""
    template = str(CONTEXT.get("_template") or "")
    if not looks_remote(template):
        template = top or str(Path(repo_dir or template).resolve())
    if top and git(repo_dir, "status", "--porcelain", "--", ".") not in ("", None):
        print(f"note: the template in {repo_dir} has uncommitted changes; the project records commit "
              f"{commit}, so `rayaccel upgrade` will take that commit as its starting point", file=sys.stderr)
    if commit is None and not looks_remote(str(CONTEXT.get("_template") or "")):
        print(f"note: the template ({repo_dir}) is not in a git repository, so this project cannot be upgraded "
              "automatically; bake it from a git clone to get `rayaccel upgrade`", file=sys.stderr)
    context = {k: v for k, v in CONTEXT.items() if k not in LOCAL_KEYS}
    context["_template"] = template  # last two, in this order: where cruft puts them
    context["_commit"] = commit
    record = {"template": template, "commit": commit, "checkout": CONTEXT.get("_checkout"),
              "context": {"cookiecutter": context}, "directory": directory or None, "skip": []}
    Path(".cruft.json").write_text(json.dumps(record, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def git_init() -> None:
    """``git init`` the project (an upgrade merges with git); without git, say so and go on."""
    if Path(".git").exists():
        return
    try:
        done = subprocess.run(["git", "init", "-q"], capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired):
        print("note: git is not installed (or did not answer), so the project is not a git repository yet; "
              "`git init` it before the first commit (upgrades need git)", file=sys.stderr)
        return
    if done.returncode != 0:
        print(f"note: git init failed ({done.stderr.strip()[:200]}); run it yourself", file=sys.stderr)


def forget_rendered_copy() -> None:
    """Cookiecutter runs this hook from a copy rendered into the temp directory and leaves it there (cookiecutter
    issue 886), every answer in it: remove that copy, never the template's own file (pre_gen_project.py too)."""
    script = Path(__file__).resolve()
    if script.parent == Path(tempfile.gettempdir()).resolve() and script.name.startswith("tmp"):
        script.unlink(missing_ok=True)


def main() -> int:
    forget_rendered_copy()
    place_probe()
    fill_vendor_label()
    if "_commit" not in CONTEXT:
        write_record()
        git_init()
    return 0


if __name__ == "__main__":
    sys.exit(main())
