"""``rayaccel certify keygen|verify|summary``: sign-able conformance reports, and checking them.

The suite's commands join the ``rayaccel`` CLI through the ``rayaccel.cli`` entry point group
(``certify = "rayaccel_conformance.cli:app"``), as pytest and conda plugins add commands: the SDK never
imports the suite.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table
from rich.text import Text

from rayaccel.cli import console, output_path
from rayaccel.support.extras import require
from rayaccel.support.safe_text import terminal_lines, terminal_text

app = typer.Typer(help="Make signing keys; verify, summarise and compare `pytest --conformance` reports; build the "
                       "tier registry.",
                  no_args_is_help=True)


@app.callback()
def _needs_the_conformance_extra() -> None:
    # Reports are signed and checked with cryptography, which the runtime distribution does not carry.
    require("conformance", "rayaccel certify")

ReportArg = Annotated[Path, typer.Argument(metavar="REPORT", help="conformance-report.json of a run")]


def _say(text: str) -> None:
    # A report's text is data: a key id or plugin name with terminal escapes prints escaped, on one line (its
    # line breaks as spaces); the spaces that align our own lines are kept.
    console.print(terminal_lines(" ".join(text.splitlines())), markup=False, highlight=False, soft_wrap=True)


@app.command()
def keygen(key: Annotated[Path, typer.Argument(
        metavar="KEY", parser=output_path, help="private key file to create; the public key goes to KEY.pub")]) -> None:
    """Make an ed25519 key pair for signing reports: KEY (private, mode 0600) and KEY.pub. Never overwrites."""
    from rayaccel_conformance.report.signing import write_keypair

    private, public, kid = write_keypair(key)
    _say(f"private key: {private} (mode 0600: whoever holds it can sign reports; keep it secret)")
    _say(f"public key:  {public} (publish it: rayaccel certify verify --key {public} REPORT)")
    _say(f"key id:      {kid}")


@app.command()
def verify(report: ReportArg, key: Annotated[Path | None, typer.Option(
        "--key", metavar="PUB", help="public key (KEY.pub of `certify keygen`) the report must be signed with")] = None,
        ) -> None:
    """Check a report: schema, digest, tiers against its checks, a complete run; with --key also its signature,
    that the report is what was signed, and that the installed plugin is the build that was graded."""
    from rayaccel_conformance.report.attestation import verify as verify_attestation
    from rayaccel_conformance.report.document import ReportError, load_report
    from rayaccel_conformance.report.signing import load_public_key

    public = load_public_key(key) if key is not None else None  # a bad key fails before the report is read
    loaded = load_report(report)
    tiers = ", ".join(f"{p.name}={p.tier or 'none'}" for p in loaded.plugins)
    if public is None:
        if not loaded.complete:
            raise ReportError(f"{report}: the run did not finish ({loaded.incomplete_reason}): an incomplete run "
                              "never verifies as complete; run the suite to the end")
        how = ("self-assessed, unsigned" if loaded.attestation is None
               else "self-assessed, signature not checked (pass --key PUB to check it)")
        # Tiers as claims: a self-assessed report certifies nothing, whatever tier it names.
        _say(f"ok: {report}: {how}: {len(loaded.checks)} checks, claimed tiers {tiers}; {loaded.digest}")
        return
    lines = verify_attestation(loaded, report, public)
    _say(f"ok: {report}: signed attestation verified: {len(loaded.checks)} checks, {tiers}")
    for line in lines:
        _say(f"  {line}")


@app.command()
def summary(report: ReportArg) -> None:
    """Print the tier table of a (verified) report."""
    from rayaccel_conformance.report.document import load_report, standing

    loaded = load_report(report)
    v = loaded.versions
    # The console reads no markup (report text is data): styles come from Text objects.
    table = Table(title=Text(f"rayaccel conformance ({loaded.hardware} hardware; rayaccel {v.sdk}, spec {v.spec}, "
                             f"Ray {v.ray}, Python {v.python}; {standing(loaded)})"))
    for column in ("plugin", "family", "tier", "passed", "failed", "skipped", "why not higher"):
        table.add_column(column, overflow="fold")
    style = {"certified": "bold green", "supported": "green", "experimental": "yellow"}
    for p in loaded.plugins:
        tier = p.tier or "none"
        table.add_row(terminal_text(p.name), terminal_text(p.family or "-"), Text(tier, style=style.get(tier, "red")),
                      str(p.passed), str(p.failed), str(p.skipped), terminal_text(p.tier_reason))
    console.print(table)
    from rayaccel_conformance.report.environment import lines as environment_lines

    for line in environment_lines(loaded.environment):
        _say(line)
    for f in loaded.figures:
        held = (f" (baseline {f.baseline:.4g}{', REGRESSED' if f.regressed else ''})" if f.baseline is not None
                else "")
        _say(f"figure {f.plugin} {f.name}: {f.value:.4g} {f.unit}{held} [{f.check}]")
    failed = [c for c in loaded.checks if c.outcome in ("failed", "error")]
    for c in failed:
        where = c.plugin + (f" on {c.fixture}" if c.fixture else "")
        said = terminal_text(f" {where}: {c.title}: {'; '.join(c.evidence)[:300]}")
        console.print(Text.assemble((c.id, "red"), said))


@app.command()
def diff(before: Annotated[Path, typer.Argument(metavar="A", help="the earlier conformance-report.json")],
         after: Annotated[Path, typer.Argument(metavar="B", help="the later conformance-report.json")],
         tolerance: Annotated[float, typer.Option("--tolerance", metavar="PERCENT", min=0, max=1000,
                                                  help="a figure worse by more than this is a regression")] = 50,
         ) -> None:
    """Name every change from report A to report B, one line each: versions and the environment, tiers, each
    check's outcome and each performance figure; then a count. Both reports are verified first."""
    from rayaccel_conformance.report.diff import count, differences
    from rayaccel_conformance.report.document import load_report

    a, b = load_report(before), load_report(after)
    lines = differences(a, b, tolerance / 100)
    for line in lines:
        _say(line)
    _say(f"{before} -> {after}: {count(lines)}" if lines else f"{before} -> {after}: no change")


@app.command()
def registry(folder: Annotated[Path, typer.Argument(metavar="FOLDER", help="folder of signed reports (*.json)")],
             site: Annotated[Path, typer.Option("-o", "--output", metavar="SITE",
                                                help="folder to write index.html and registry.json into")],
             keys: Annotated[list[Path], typer.Option("--key", metavar="PUB", help="a trusted vendor public key "
                                                      "(repeatable); a report signed by no such key is rejected")],
             ) -> None:
    """Build the tier registry: a static site (index.html and registry.json; any static host serves it) of
    every plugin's releases, tiers and the level it holds, from a folder of signed reports."""
    from rayaccel_conformance.report.signing import load_public_key
    from rayaccel_conformance.report.tier_registry import write_site

    trusted = [load_public_key(k) for k in keys]
    data = write_site(folder, trusted, site)
    releases = sum(len(p["releases"]) for p in data["plugins"])
    _say(f"registry: {site / 'index.html'}: {len(data['plugins'])} plugins, {releases} releases, "
         f"{len(data['rejected'])} reports rejected")
    for plugin in data["plugins"]:
        _say(f"  {plugin['plugin']} ({plugin['family'] or 'no family'}): holds {plugin['held'] or 'no level'}")
