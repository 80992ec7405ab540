"""``rayaccel new`` (bake the vendor template) and ``rayaccel upgrade`` (bring a baked project up to date).

``new`` runs templates/vendor-plugin through cookiecutter's API, exactly as ``cookiecutter`` would; the
template's own hooks validate the answers. ``upgrade`` is cruft's update: the baked project records the
template's source, commit and answers in ``.cruft.json``.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any

import typer

import rayaccel
from rayaccel.cli import app, console
from rayaccel.errors import RayaccelError

#: The template beside the SDK in a source checkout (editable installs, the repo's own tests).
TEMPLATE_DIR = Path(rayaccel.__file__).resolve().parents[2] / "templates" / "vendor-plugin"
CRUFT_FILE = ".cruft.json"


def parse_answers(items: list[str]) -> dict[str, str]:
    answers: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise RayaccelError(f"answer {item!r} is not KEY=VALUE, e.g. vendor_name='ACME Corp'")
        answers[key.strip()] = value
    return answers


def template_questions(template: Path) -> dict[str, Any]:
    context: dict[str, Any] = json.loads((template / "cookiecutter.json").read_text(encoding="utf-8"))
    return {k: v for k, v in context.items() if not k.startswith("_")}


@contextmanager
def _quiet_cookiecutter() -> Iterator[None]:
    # cookiecutter logs a refused hook with a traceback; the hook has already said what was wrong.
    logger = logging.getLogger("cookiecutter")
    quiet = logging.NullHandler()
    saved = logger.propagate
    logger.addHandler(quiet)
    logger.propagate = False
    try:
        yield
    finally:
        logger.removeHandler(quiet)
        logger.propagate = saved


@app.command()
def new(
    answers: Annotated[list[str] | None, typer.Argument(metavar="[KEY=VALUE]...",
                                                        help="Answers, e.g. vendor_name='ACME Corp'")] = None,
    no_input: Annotated[bool, typer.Option("--no-input", help="Ask nothing: defaults plus the answers given")] = False,
    output_dir: Annotated[Path, typer.Option("-o", "--output-dir", help="Where the project folder goes")] = Path("."),
    template: Annotated[str | None, typer.Option(help="Template path or git URL; default: the SDK's own")] = None,
    directory: Annotated[str | None, typer.Option(help="Template folder inside a git repository")] = None,
    checkout: Annotated[str | None, typer.Option(help="Branch, tag or commit of a git template")] = None,
) -> None:
    """Create a new vendor plugin project from the rayaccel template."""
    from cookiecutter.exceptions import CookiecutterException, FailedHookException, OutputDirExistsException
    from cookiecutter.main import cookiecutter

    given = parse_answers(answers or [])
    source = template or str(TEMPLATE_DIR)
    local = Path(source) / (directory or "")
    if template is None and not (TEMPLATE_DIR / "cookiecutter.json").exists():
        raise RayaccelError(f"the vendor template is not beside this rayaccel ({TEMPLATE_DIR}); give it with "
                            "--template <git URL> --directory templates/vendor-plugin")
    if (local / "cookiecutter.json").exists():
        questions = template_questions(local)
        unknown = sorted(set(given) - set(questions))
        if unknown:
            raise RayaccelError(f"the template asks no question {unknown[0]!r}; its questions are: "
                                + ", ".join(questions))
        for key, value in given.items():
            choices = questions[key]
            if isinstance(choices, list) and value not in choices:
                raise RayaccelError(f"{key}={value!r} is not one of the choices: {', '.join(map(str, choices))}")
    output_dir.mkdir(parents=True, exist_ok=True)
    try:
        with _quiet_cookiecutter():
            project = cookiecutter(source, no_input=no_input, extra_context=given, output_dir=str(output_dir),
                                   directory=directory, checkout=checkout)
    except FailedHookException:
        raise typer.Exit(2) from None  # the template's hook printed the one line that says why
    except OutputDirExistsException as e:
        raise RayaccelError(f"{str(e).removeprefix('Error: ')}; choose another --output-dir or remove it") from None
    except (CookiecutterException, ValueError) as e:
        # cookiecutter reports a bad choice answer as ValueError
        raise RayaccelError(f"the template could not be baked: {e}") from None
    name = Path(project).name
    console.print(f"created {project}", markup=False, highlight=False)
    console.print(f"next: cd {name} && pip install -e '.[test]' && pytest && pytest --conformance "
                  f"--conformance-plugin {name.removeprefix('rayaccel-')}", markup=False, highlight=False)


def _unmerged(project: Path) -> list[str]:
    """Files a three-way merge left with conflict markers (git's unmerged paths)."""
    import subprocess

    try:
        done = subprocess.run(["git", "-C", str(project), "diff", "--name-only", "--diff-filter=U"],
                              capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return []
    return sorted(line for line in done.stdout.splitlines() if line) if done.returncode == 0 else []


@app.command()
def upgrade(
    project: Annotated[Path, typer.Argument(help="The baked project (default: here)")] = Path("."),
    template: Annotated[str | None, typer.Option(help="Where the template lives now, if it moved")] = None,
    checkout: Annotated[str | None, typer.Option(help="Branch, tag or commit to upgrade to")] = None,
) -> None:
    """Merge the template's changes since the project was baked into it, keeping the project's own edits."""
    from cruft import update

    record_path = project / CRUFT_FILE
    if not record_path.exists():
        raise RayaccelError(f"{project} has no {CRUFT_FILE}: it was not baked from the rayaccel template "
                            "(or the file was deleted); nothing records which template version it came from")
    try:
        record = json.loads(record_path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as e:
        raise RayaccelError(f"{record_path} is not valid JSON: {e}") from None
    if not record.get("commit"):
        raise RayaccelError(f"{record_path} records no template commit (the template was not in a git repository "
                            "when it was baked), so there is no starting point to merge from")
    before = record["commit"]
    ok = update(project_dir=project, template_path=Path(template) if template else None, checkout=checkout,
                skip_apply_ask=True)
    if not ok:
        raise RayaccelError(f"{project} was not upgraded: commit your changes first (the merge needs a clean git "
                            "working tree)")
    rejected = sorted(str(p.relative_to(project)) for p in project.rglob("*.rej")) + _unmerged(project)
    after = json.loads(record_path.read_text(encoding="utf-8")).get("commit")
    if rejected:
        raise RayaccelError(f"the upgrade conflicts with your edits in {', '.join(rejected)}: merge those by hand "
                            "(conflict markers, or .rej files beside them), then commit")
    if after == before:
        console.print(f"{project} is already at the template's latest commit ({before[:12]})", markup=False,
                      highlight=False)
    else:
        console.print(f"upgraded {project} from template commit {before[:12]} to {str(after)[:12]}", markup=False,
                      highlight=False)
