"""``rayaccel certify verify REPORT`` and ``rayaccel certify summary REPORT``: conformance reports."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table
from rich.text import Text

from rayaccel.cli import app, console

certify = typer.Typer(help="Verify and summarise `pytest --conformance` reports.", no_args_is_help=True)
app.add_typer(certify, name="certify")

ReportArg = Annotated[Path, typer.Argument(metavar="REPORT", help="conformance-report.json of a run")]


@certify.command()
def verify(report: ReportArg) -> None:
    """Check a report against its JSON Schema, its sha256 digest and the tiers its checks give."""
    from rayaccel_conformance.report import load_report

    loaded = load_report(report)
    tiers = ", ".join(f"{p.name}={p.tier or 'none'}" for p in loaded.plugins)
    console.print(f"ok: {report}: {len(loaded.checks)} checks, {tiers}; {loaded.digest}", markup=False,
                  highlight=False)


@certify.command()
def summary(report: ReportArg) -> None:
    """Print the tier table of a (verified) report."""
    from rayaccel_conformance.report import load_report

    loaded = load_report(report)
    v = loaded.versions
    table = Table(title=f"rayaccel conformance ({loaded.hardware} hardware; rayaccel {v.sdk}, spec {v.spec}, "
                        f"Ray {v.ray}, Python {v.python})")
    for column in ("plugin", "family", "tier", "passed", "failed", "skipped", "why not higher"):
        table.add_column(column, overflow="fold")
    style = {"certified": "bold green", "supported": "green", "experimental": "yellow"}
    for p in loaded.plugins:
        tier = p.tier or "none"
        table.add_row(p.name, p.family or "-", Text(tier, style=style.get(tier, "red")), str(p.passed),
                      str(p.failed), str(p.skipped), p.tier_reason)
    console.print(table)
    failed = [c for c in loaded.checks if c.outcome in ("failed", "error")]
    for c in failed:
        where = c.plugin + (f" on {c.fixture}" if c.fixture else "")
        console.print(Text.assemble((c.id, "red"), f" {where}: {c.title}: {'; '.join(c.evidence)[:300]}"))
