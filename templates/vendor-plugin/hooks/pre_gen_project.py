"""Check the answers before anything is written; on a bad answer print one line and exit 1.

Cookiecutter removes the half-made project folder when this hook fails, so a refused answer leaves
nothing behind. The checks live in ``rayaccel_vendor_template.py`` beside cookiecutter.json (also loaded
as the template's sandboxing Jinja extension, which refuses template syntax in answers before this hook
is even rendered); the rendering below asks it for the first problem and passes the answer here as
JSON data. Nothing in an answer is ever executed.
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

PROBLEM = json.loads({{ rayaccel_answer_problem(cookiecutter) | tojson | tojson }})
ANSWERS = json.loads({{ cookiecutter | tojson | tojson }})
MAINTAINERS = {m.strip() for m in str(ANSWERS.get("maintainers", "")).split(",") if m.strip()}


def forget_rendered_copy() -> None:
    """Cookiecutter runs this hook from a copy rendered into the temp directory and leaves it there (cookiecutter
    issue 886), every answer in it, two files a bake: remove that copy, never the template's own file."""
    script = Path(__file__).resolve()
    if script.parent == Path(tempfile.gettempdir()).resolve() and script.name.startswith("tmp"):
        script.unlink(missing_ok=True)


def main() -> int:
    forget_rendered_copy()
    if PROBLEM:
        print(f"error: {PROBLEM}", file=sys.stderr)
        return 1
    if len(MAINTAINERS) < 2 and "_commit" not in ANSWERS:  # not when cruft re-renders for an upgrade
        print("note: the certified tier (RAC302) needs at least two maintainers; add a second to MAINTAINERS in "
              "plugin.py when you go for certified (the simulated CI job stops at supported)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
