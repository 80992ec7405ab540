"""``rayaccel sku add`` and ``rayaccel sku check``: day-zero SKUs as data (see rayaccel.onboarding.new_sku).

The options of ``sku add`` are the ones :func:`rayaccel.catalog.sku_add_command` prints in the
inventory's unknown-SKU warning, so that command can be run as printed. Both run the plugins in worker
processes of their own, as ``rayaccel inspect`` does (:meth:`WorkerPool.load`): the catalog, the fixture
rewrite and the new fixture's inventories are the plugin's answers from its worker.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from rayaccel.cli import app, console, err_console
from rayaccel.cli.inventory import InProcessOption, PluginsOption, plugin_workers
from rayaccel.onboarding.catalog_file import build_sku_record, check_catalogs, parse_match_fields
from rayaccel.onboarding.new_sku import add_sku

sku_app = typer.Typer(name="sku", help="Day-zero SKU onboarding: add a SKU to a plugin's catalog, check catalogs.",
                      no_args_is_help=True)
app.add_typer(sku_app)


def _say(text: str) -> None:
    console.print(text, markup=False, highlight=False, soft_wrap=True)


@sku_app.command("add")
def add(
    plugin: Annotated[str, typer.Option("--plugin", help="Plugin whose catalog gets the SKU, e.g. nvidia")],
    sku_id: Annotated[str, typer.Option("--id", help="SKU id: lower-case letters, digits, '.', '-'")],
    marketing_name: Annotated[str, typer.Option("--marketing-name", help="Name as the vendor sells it")],
    accelerator_type: Annotated[str, typer.Option("--accelerator-type", help="Ray accelerator type, e.g. B300")],
    product_name: Annotated[list[str] | None, typer.Option(
        "--product-name", help="Product name exactly as the driver reports it (repeatable)")] = None,
    pci_device_id: Annotated[list[str] | None, typer.Option(
        "--pci-device-id", help="PCI device id, e.g. 0x2901 (repeatable)")] = None,
    match_field: Annotated[list[str] | None, typer.Option(
        "--match-field", metavar="FIELD=VALUE",
        help="A device field or attribute the SKU's devices have, e.g. model=X1-48G (repeatable; all must "
             "match): for a tool that prints neither a PCI id nor a product name")] = None,
    memory_mib: Annotated[int | None, typer.Option("--memory-mib", help="Memory of one device, MiB")] = None,
    architecture: Annotated[str | None, typer.Option("--architecture", help="e.g. blackwell")] = None,
    interconnect: Annotated[str | None, typer.Option("--interconnect", help="e.g. nvlink5-nvswitch")] = None,
    from_fixture: Annotated[str | None, typer.Option(
        "--from-fixture", metavar="PLUGIN/NAME",
        help="Fixture to derive the new one from; default: the plugin's first of the same architecture, "
             "else its first")] = None,
    fixture_name: Annotated[str | None, typer.Option(
        "--fixture-name", help="Name of the new fixture; default: the SKU id")] = None,
    check_fixture: Annotated[list[Path] | None, typer.Option(
        "--check-fixture", metavar="FILE",
        help="A recorded fixture of the fleet (repeatable): like every fixture the plugin ships, its devices must "
             "keep the SKU they resolve to")] = None,
    allow_retype: Annotated[bool, typer.Option(
        "--allow-retype", help="Let the new SKU take devices another SKU matched before (refused otherwise, "
                               "naming them)")] = False,
    dry_run: Annotated[bool, typer.Option(
        "--dry-run", help="Check everything (the new fixture's inventory, faults included), write nothing")] = False,
    in_process: InProcessOption = False,
) -> None:
    """Append a SKU to a plugin's catalog and write a simulated fixture of it (checked before anything is written)."""
    record = build_sku_record(sku_id=sku_id, marketing_name=marketing_name, accelerator_type=accelerator_type,
                              product_names=product_name or [], pci_device_ids=pci_device_id or [],
                              memory_mib=memory_mib, architecture=architecture, interconnect=interconnect,
                              fields=parse_match_fields(match_field or []))
    with plugin_workers(in_process=in_process) as pool:  # every plugin (a fixture may name any), each in its worker
        done = add_sku(pool.manager, plugin, record, from_fixture=from_fixture, fixture_name=fixture_name,
                       dry_run=dry_run, check_fixtures=check_fixture or [], allow_retype=allow_retype)
    if not done.written:
        _say(f"dry run: SKU {done.sku.id} ({done.sku.accelerator_type}) would be added to "
             f"{done.catalog_path} and fixture {done.fixture_ref} ({done.fixture_path}) written, derived "
             f"from {done.base_fixture}; every check passed, nothing was written")
        return
    _say(f"added SKU {done.sku.id} ({done.sku.accelerator_type}) to {done.catalog_path}")
    if done.catalog_rewritten:
        _say("  the catalog's layout could not be appended to, so it was written out again (comments lost)")
    _say(f"wrote fixture {done.fixture_ref} ({done.fixture_path}), derived from {done.base_fixture}")
    if done.recorded_labels:
        labels = ", ".join(f"{k}={v}" for k, v in sorted(done.recorded_labels.items()))
        _say(f"  labels the plugin or device decides, recorded from its answer: {labels}")
    _say(f"see it: rayaccel inspect --simulate {done.fixture_ref}")


@sku_app.command("check")
def check(
    plugin: PluginsOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON")] = False,
    in_process: InProcessOption = False,
) -> None:
    """Validate every installed plugin's SKU catalog; exit code 2 and one line per bad catalog."""
    with plugin_workers(plugin, in_process=in_process) as pool:
        results = check_catalogs(pool.manager, plugin or None)
    if as_json:
        console.print_json(json.dumps([{"plugin": r.plugin, "path": r.path, "skus": r.skus, "error": r.error,
                                        "notes": list(r.notes)}
                                       for r in results]))
    else:
        for r in results:
            if r.ok:
                _say(f"ok: {r.plugin}: {r.skus} SKU{'' if r.skus == 1 else 's'} ({r.path})")
                for note in r.notes:
                    _say(f"  note: {note}")
            else:
                err_console.print(f"error: plugin {r.plugin}: {r.error}", markup=False, highlight=False, soft_wrap=True)
    if any(not r.ok for r in results):
        raise typer.Exit(2)
