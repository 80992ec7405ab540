"""``rayaccel new`` (bake the vendor template) and ``rayaccel upgrade`` (bring a baked project up to date).

``new`` runs templates/vendor-plugin through cookiecutter's API, exactly as ``cookiecutter`` would; the
template's own hooks validate the answers. ``upgrade`` is cruft's update: the baked project records the
template's source, commit and answers in ``.cruft.json``.
"""

from __future__ import annotations

import json
import logging
import os
import shlex
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any, TextIO

import typer

import rayaccel
from rayaccel.cli import app, console, err_console, output_path
from rayaccel.errors import RayaccelError
from rayaccel.files.atomic import write_atomically
from rayaccel.support.extras import require

#: The template beside the SDK in a source checkout (editable installs, the repo's own tests).
TEMPLATE_DIR = Path(rayaccel.__file__).resolve().parents[2] / "templates" / "vendor-plugin"
CRUFT_FILE = ".cruft.json"


CHECKS_MODULE = "rayaccel_vendor_template.py"


def template_checks(template: Path) -> Any | None:
    """The template's own answer checks (``rayaccel_vendor_template.py`` beside its cookiecutter.json, the
    module that is also its sandboxing Jinja extension), or None for a template without them."""
    import hashlib
    import importlib.util

    path = template / CHECKS_MODULE
    if not path.is_file():
        return None
    name = "_rayaccel_template_checks_" + hashlib.sha256(str(path.resolve()).encode()).hexdigest()[:12]
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        return None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _say(text: str) -> None:
    console.print(text, markup=False, highlight=False, soft_wrap=True)


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
    output_dir: Annotated[Path, typer.Option("-o", "--output-dir", parser=output_path,
                                             help="Where the project folder goes")] = Path("."),
    template: Annotated[str | None, typer.Option(help="Template path or git URL; default: the SDK's own")] = None,
    directory: Annotated[str | None, typer.Option(help="Template folder inside a git repository")] = None,
    checkout: Annotated[str | None, typer.Option(help="Branch, tag or commit of a git template")] = None,
) -> None:
    """Create a new vendor plugin project from the rayaccel template."""
    require("template", "rayaccel new")
    from cookiecutter.exceptions import (
        CookiecutterException,
        FailedHookException,
        OutputDirExistsException,
        UnknownRepoType,
    )
    from cookiecutter.main import cookiecutter

    given = parse_answers(answers or [])
    source = template or str(TEMPLATE_DIR)
    local = Path(source) / (directory or "")
    if template is None and not (TEMPLATE_DIR / "cookiecutter.json").exists():
        raise RayaccelError(f"the vendor template is not beside this rayaccel ({TEMPLATE_DIR}); give it with "
                            "--template <git URL> --directory templates/vendor-plugin")
    hidden = sorted(k for k in given if k.startswith("_"))
    if hidden:
        raise RayaccelError(f"{hidden[0]} is a hidden variable the template derives from the answers; it cannot be "
                            "set (answer the questions instead)")
    checks = None
    if (local / "cookiecutter.json").exists():
        source = str(local.resolve()) if directory is None else str(Path(source).resolve())  # absolute: recorded
        questions = template_questions(local)
        unknown = sorted(set(given) - set(questions))
        if unknown:
            raise RayaccelError(f"the template asks no question {unknown[0]!r}; its questions are: "
                                + ", ".join(questions))
        for key, value in given.items():
            choices = questions[key]
            if isinstance(choices, list) and value not in choices:
                raise RayaccelError(f"{key}={value!r} is not one of the choices: {', '.join(map(str, choices))}")
        checks = template_checks(local)
        if checks is not None:
            env_vars = json.loads((local / "cookiecutter.json").read_text(encoding="utf-8")).get("_jinja2_env_vars")
            for key, value in given.items():
                message = checks.answer_problem(key, value, env_vars)
                if message:
                    raise RayaccelError(message)
            if not no_input:
                given = _ask(checks, local, questions, given)
                no_input = True  # every question is answered: cookiecutter asks nothing again
    output_dir.mkdir(parents=True, exist_ok=True)
    try:
        with _quiet_cookiecutter():
            project = cookiecutter(source, no_input=no_input, extra_context=given, output_dir=str(output_dir),
                                   directory=directory, checkout=checkout)
    except FailedHookException:
        raise typer.Exit(2) from None  # the template's hook printed the one line that says why
    except OutputDirExistsException as e:
        raise RayaccelError(f"{str(e).removeprefix('Error: ')}; choose another --output-dir or remove it") from None
    except UnknownRepoType:
        raise RayaccelError(f"--template {source}: cookiecutter does not recognise it as a repository (a git URL "
                            "ends in .git or starts with git+, e.g. https://host/repo.git)") from None
    except (CookiecutterException, ValueError) as e:
        # cookiecutter reports a bad choice answer as ValueError
        raise RayaccelError(f"the template could not be baked: {str(e) or type(e).__name__}") from None
    name = Path(project).name
    where = os.path.relpath(project)
    _say(f"created {project}")
    committed = _first_commit(Path(project))
    if committed:
        _say(committed)
    _say(f"next: cd {shlex.quote(where)} && pip install -e '.[test,lint]' && pytest && pytest --conformance "
         f"--conformance-plugin {name.removeprefix('rayaccel-')}")


def _first_commit(project: Path) -> str | None:
    """Commit the baked project as its first commit (``rayaccel upgrade`` merges into committed work), under
    the user's git identity, else one naming rayaccel; what was done, or why not, as one line."""
    import subprocess

    if not (project / ".git").is_dir():
        return None

    def git(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["git", "-C", str(project), *args], capture_output=True, text=True, timeout=60,
                              check=False)

    try:
        identity = [] if git("config", "user.email").stdout.strip() else [
            "-c", "user.name=rayaccel new", "-c", "user.email=rayaccel-new@users.noreply.invalid"]
        added = git("add", "-A")
        done = git(*identity, "commit", "-q", "--no-verify", "-m", "Baked from the rayaccel vendor-plugin template")
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"the project is not committed ({type(e).__name__}: {e}); commit it before `rayaccel upgrade`"
    if added.returncode or done.returncode:
        why = (done.stderr or added.stderr).strip().splitlines()[-1:] or ["git failed"]
        return f"the project is not committed ({why[0]}); commit it before `rayaccel upgrade`"
    return "committed it as the project's first commit (rayaccel upgrade merges into committed work)"


def read_choice(key: str, options: list[str], prompts: dict[str, Any], prefix: str = "",
                stream: TextIO | None = None) -> str:
    """One of ``options``, chosen at the prompt by its number or by its name (``command-json``: the name the
    docs and ``--no-input`` use; cookiecutter's own prompt takes numbers only)."""
    from rich.markup import escape
    from rich.prompt import Prompt

    found = prompts.get(key)
    labels: dict[str, Any] = found if isinstance(found, dict) else {}
    question = str(labels.get("__prompt__", f"Select {key}"))
    lines = [f"    [bold magenta]{n}[/] - [bold]{escape(option)}[/]"
             + (f": {escape(str(labels[option]))}" if option in labels else "")
             for n, option in enumerate(options, start=1)]
    by_number = {str(n): option for n, option in enumerate(options, start=1)}
    answer = Prompt.ask("\n".join([f"{prefix}{escape(question)}", *lines, "    Choose a number or a name"]),
                        choices=[*by_number, *options], default="1", show_choices=False, stream=stream)
    return by_number.get(answer, answer)


def _ask(checks: Any, template: Path, questions: dict[str, Any], given: dict[str, str]) -> dict[str, str]:
    """Ask every question not answered on the command line, as cookiecutter would, but check each answer
    at its prompt (asking again) instead of after all of them."""
    from cookiecutter.prompt import read_user_variable

    prompts = json.loads((template / "cookiecutter.json").read_text(encoding="utf-8")).get("__prompts__", {})
    answers = dict(given)
    visible = list(questions)
    for number, key in enumerate(visible, start=1):
        if key in given:
            continue
        prefix = f"  [dim][{number}/{len(visible)}][/] "
        while True:
            default = checks.derived(answers, template)[key]
            if isinstance(questions[key], list):
                value = read_choice(key, [str(c) for c in questions[key]], prompts, prefix)
            else:
                value = read_user_variable(key, default, prompts, prefix)
            value = str(value)
            message = checks.answer_problem(key, value)
            if message is None:
                found = checks.problem({**answers, key: value}, template)
                answered = {*answers, key}
                message = found[1] if found and found[0] in answered else None
            if message is None:
                answers[key] = value
                break
            err_console.print(f"error: {message}", markup=False, highlight=False, soft_wrap=True)
    return answers


def _unmerged(project: Path) -> list[str]:
    """Files a three-way merge left with conflict markers (git's unmerged paths)."""
    import subprocess

    try:
        done = subprocess.run(["git", "-C", str(project), "diff", "--name-only", "--diff-filter=U"],
                              capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return []
    return sorted(line for line in done.stdout.splitlines() if line) if done.returncode == 0 else []


#: Jinja's delimiters: an answer holding one would be rendered (run) when cruft replays it.
_DELIMITERS = ("{{", "{%", "{#", "}}", "%}", "#}")


def recorded_answer_problem(key: str, value: object) -> str | None:
    """Why a recorded answer must not be replayed (cruft renders each one as a template)."""
    if not isinstance(value, str):
        return None
    found = next((d for d in _DELIMITERS if d in value), None)
    if found is not None:
        return (f"the recorded answer {key} contains template syntax ({found!r}), which cruft would render (run) "
                "on the upgrade; answers are data: correct it in .cruft.json and commit")
    if any(ord(c) < 32 or ord(c) == 127 for c in value):
        return f"the recorded answer {key} contains a control character; correct it in .cruft.json and commit"
    return None


def _local_template(source: str) -> str:
    """A local template path made absolute (the record must not depend on the folder upgrade ran in)."""
    if "://" in source or source.startswith(("git@", "gh:", "gl:", "bb:")):
        return source
    return str(Path(source).expanduser().resolve())


@contextmanager
def _deleted_file_changes(found: list[str]) -> Iterator[None]:
    """Collect template changes to files the project deleted: cruft drops them from both renders before it
    diffs (cruft.update calls utils.generate._remove_paths for the old render, then the new one)."""
    try:
        from cruft._commands.utils import generate
    except ImportError:  # another cruft layout: nothing is reported, the upgrade still works
        yield
        return
    original = getattr(generate, "_remove_paths", None)
    if original is None:
        yield
        return
    renders: list[dict[str, bytes | None]] = []

    def remove_paths(root: Path, paths_to_remove: set[Path | str]) -> None:
        snapshot: dict[str, bytes | None] = {}
        for path in paths_to_remove:
            if isinstance(path, Path):
                target = root / path
                snapshot[path.as_posix()] = target.read_bytes() if target.is_file() else None
        renders.append(snapshot)
        original(root, paths_to_remove)

    generate._remove_paths = remove_paths
    try:
        yield
    finally:
        generate._remove_paths = original
        if len(renders) == 2:
            old, new = renders
            found.extend(sorted(p for p in set(old) | set(new) if old.get(p) != new.get(p)))


def _ordered_like(data: Any, before: Any) -> Any:
    """``data`` with its keys in ``before``'s order (new keys after them): an upgrade must not reorder."""
    if not isinstance(data, dict) or not isinstance(before, dict):
        return data
    keys = [k for k in before if k in data] + [k for k in data if k not in before]
    return {k: _ordered_like(data[k], before.get(k)) for k in keys}


def _git_lines(project: Path, *args: str) -> list[str]:
    import subprocess

    try:
        done = subprocess.run(["git", "-C", str(project), *args], capture_output=True, text=True, timeout=30,
                              check=False)
    except (OSError, subprocess.TimeoutExpired):
        return []
    return [line for line in done.stdout.splitlines() if line.strip()] if done.returncode == 0 else []


@app.command()
def upgrade(
    project: Annotated[Path, typer.Argument(help="The baked project (default: here)")] = Path("."),
    template: Annotated[str | None, typer.Option(help="Where the template lives now, if it moved")] = None,
    checkout: Annotated[str | None, typer.Option(help="Branch, tag or commit to upgrade to")] = None,
) -> None:
    """Merge the template's changes since the project was baked into it, keeping the project's own edits."""
    require("template", "rayaccel upgrade")
    import io
    from contextlib import redirect_stderr, redirect_stdout

    from cruft import update

    record_path = project / CRUFT_FILE
    if not record_path.exists():
        raise RayaccelError(f"{project} has no {CRUFT_FILE}: it was not baked from the rayaccel template "
                            "(or the file was deleted); nothing records which template version it came from")
    # A FIFO, a directory, a binary or a deeply nested .cruft.json is one line, not a hang or a traceback.
    from rayaccel.files import reading

    text = reading.read_text(record_path, "template record", RayaccelError)
    record = reading.parse(text, str(record_path), "template record", "json", RayaccelError)
    context = ((record.get("context") or {}).get("cookiecutter") or {}) if isinstance(record, dict) else {}
    if not isinstance(record, dict) or not isinstance(context, dict) or not record.get("template"):
        raise RayaccelError(f"{record_path} is not a template record (no template or context); restore it from git")
    for key, value in context.items():
        if not key.startswith("_"):  # cruft replays only these; the hidden ones are derived again
            message = recorded_answer_problem(key, value)
            if message:
                raise RayaccelError(f"{record_path}: {message}")
    if not record.get("commit"):
        raise RayaccelError(f"{record_path} records no template commit: the template ({record['template']}) was "
                            "not in a git repository when the project was baked, so there is no starting point to "
                            "merge from; bake again from a git clone of the template")
    before = record["commit"]
    source = _local_template(template) if template else None
    if source is not None and "://" not in source and not (Path(source) / ".git").exists():
        top = _git_lines(Path(source), "rev-parse", "--show-toplevel")
        if not top:
            raise RayaccelError(f"--template {template}: not a git repository (upgrades merge between template "
                                "commits); give a clone of the template")
        source = top[0]
    deleted: list[str] = []
    out, err = io.StringIO(), io.StringIO()
    try:
        with redirect_stdout(out), redirect_stderr(err), _deleted_file_changes(deleted):
            ok = update(project_dir=project, template_path=Path(source) if source else None, checkout=checkout,
                        skip_apply_ask=True)
    except Exception as e:  # cruft and GitPython raise plain ValueError / GitCommandError for a bad source
        where = source or record["template"]
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        if "could not be resolved" in str(e) or "did not match" in str(e) or "unknown revision" in str(e):
            raise RayaccelError(f"the template at {where} does not have the commit this project was baked from "
                                f"({before[:12]}): if the template moved, give its current clone with --template "
                                "<path or URL>") from None
        raise RayaccelError(f"the upgrade from {where} failed: {first}; nothing was changed") from None
    if not ok:
        raise RayaccelError(f"{project} was not upgraded: commit your changes first (the merge needs a clean git "
                            "working tree)")
    # The record first, conflict or not: cruft wrote the new commit, so it must name where that commit is (the
    # next upgrade starts there) and keep the project's key order (a reordered record is a diff of its own).
    new_record = json.loads(record_path.read_text(encoding="utf-8"))
    after = new_record.get("commit")
    if source is not None:
        new_record["template"] = source  # the next upgrade starts from where the template is now
        new_record["context"]["cookiecutter"]["_template"] = source
    new_record = _ordered_like(new_record, record)
    new_text = json.dumps(new_record, indent=2, ensure_ascii=False) + "\n"
    if new_text != record_path.read_text(encoding="utf-8"):
        write_atomically(record_path, new_text)
    rejected = sorted(str(p.relative_to(project)) for p in project.rglob("*.rej")) + _unmerged(project)
    changed = [path for path in (line[3:] for line in _git_lines(project, "status", "--porcelain",
                                                                  "--untracked-files=all"))
               if path != CRUFT_FILE and path not in rejected and not path.endswith(".rej")]
    if rejected:
        merged = f"; merged cleanly: {', '.join(changed)}" if changed else ""
        raise RayaccelError(f"the upgrade to template commit {str(after)[:12]} conflicts with your edits in "
                            f"{', '.join(rejected)}: merge those by hand (conflict markers, or .rej files beside "
                            f"them), then commit{merged} ({CRUFT_FILE} records the new commit"
                            + (f" and {source}" if source else "") + ")")
    if after == before:
        _say(f"{project} is already at the template's latest commit ({before[:12]})")
    else:
        _say(f"upgraded {project} from template commit {before[:12]} to {str(after)[:12]}"
             + (f" (template now at {source})" if source else ""))
        if changed:
            _say(f"  changed: {', '.join(changed)}")
        _say("  review with `git diff`, run the tests, then commit")
    for path in deleted:
        _say(f"note: the template changed {path}, which this project deleted; that change was not "
             "applied (restore the file from the template if you want it)")
