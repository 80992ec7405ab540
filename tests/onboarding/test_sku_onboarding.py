"""Day-zero SKUs end to end on a copy of the ACME onboarding plugin: an unknown device is scheduled and
flagged, the printed ``rayaccel sku add`` command onboards it as printed, and refusals change nothing.

The plugin, its catalog and its fixtures are copied into a temporary directory and loaded from there
(RAYACCEL_PLUGINS), so the repository's catalogs are never written.
"""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import yaml

from rayaccel.errors import CatalogError, FixtureError
from rayaccel.onboarding.catalog_file import appended_catalog_text, build_sku_record, record_data
from rayaccel.onboarding.new_sku import add_sku
from rayaccel.plugins.manager import PluginManager
from rayaccel_testplugins import acme, acme_onboard

R2 = "ACME Roadrunner R2"


def rayaccel(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "rayaccel", *args], capture_output=True, text=True, timeout=120,
                          env={**os.environ, **env})


@pytest.fixture
def plugin_copy(tmp_path: Path) -> Path:
    """The onboarding plugin with its catalog (plus a comment, to see it kept) and fixtures, in tmp_path."""
    root = tmp_path / "plugin"
    (root / "acme_fixtures").mkdir(parents=True)
    shutil.copy(Path(acme_onboard.__file__), root / "acme_onboard_copy.py")
    catalog = (acme.HERE / "acme-skus.yaml").read_text()
    (root / "acme-skus.yaml").write_text("# ACME SKUs: keep this comment\n" + catalog)
    shutil.copy(acme.HERE / "acme_fixtures" / "acme-4.yaml", root / "acme_fixtures")
    return root


def env_for(root: Path) -> dict[str, str]:
    return {"RAYACCEL_NO_AUTOLOAD": "1", "RAYACCEL_PLUGINS": "acme=acme_onboard_copy",
            "PYTHONPATH": os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")])}


def digest(root: Path) -> str:
    # Python's bytecode cache is the interpreter's, not the command's: a refusal changes nothing else.
    return hashlib.sha256(b"".join(p.read_bytes() for p in sorted(root.rglob("*"))
                                   if p.is_file() and "__pycache__" not in p.parts)).hexdigest()


def unknown_sku_fixture(root: Path) -> Path:
    """acme-4 with every card reporting a product the catalog does not know yet."""
    data = yaml.safe_load((root / "acme_fixtures" / "acme-4.yaml").read_text())
    for path in data["host"]["files"]:
        if path.endswith("/product"):
            data["host"]["files"][path] = R2 + "\n"
    data["name"] = "acme-r2-unknown"
    path = root / "acme-r2-unknown.yaml"  # outside the fixture dir: not a candidate base fixture
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def test_unknown_sku_is_schedulable_and_the_printed_command_onboards_it(plugin_copy: Path) -> None:
    env = env_for(plugin_copy)
    unknown = unknown_sku_fixture(plugin_copy)
    before = json.loads(rayaccel("inspect", "--simulate", str(unknown), "--json", env=env).stdout)
    assert before["resources"] == {"ACME": 4.0, "accelerator_type:R2": 1.0}  # discovered and schedulable
    assert before["labels"]["rayaccel.io/sku-known"] == "false"
    assert "rayaccel.io/sku" not in before["labels"]
    [warning] = [p for p in before["problems"] if p["code"] == "unknown-sku"]
    assert warning["severity"] == "warning" and "scheduled as accelerator type 'R2'" in warning["message"]
    command = warning["fix"].split("onboard the SKU: ", 1)[1]
    argv = shlex.split(command)
    assert argv[:3] == ["rayaccel", "sku", "add"]

    added = rayaccel(*argv[1:], env=env)  # exactly as printed
    assert added.returncode == 0, added.stderr
    assert "added SKU acme-roadrunner-r2 (R2)" in added.stdout
    assert "wrote fixture acme/acme-roadrunner-r2" in added.stdout

    after = json.loads(rayaccel("inspect", "--simulate", str(unknown), "--json", env=env).stdout)
    assert after["labels"]["rayaccel.io/sku-known"] == "true"
    assert after["labels"]["rayaccel.io/sku"] == "acme-roadrunner-r2"
    assert [p for p in after["problems"] if p["code"] == "unknown-sku"] == []
    new = json.loads(rayaccel("inspect", "--simulate", "acme/acme-roadrunner-r2", "--json", env=env).stdout)
    assert new["families"][0]["accelerator_type"] == "R2" and new["problems"] == []
    assert {d["product_name"] for d in new["devices"]} == {R2}

    catalog_text = (plugin_copy / "acme-skus.yaml").read_text()
    assert catalog_text.startswith("# ACME SKUs: keep this comment\n")
    catalog = yaml.safe_load(catalog_text)
    assert [s["id"] for s in catalog["skus"]] == ["acme-r1", "acme-roadrunner-r2"]
    assert catalog["skus"][1]["match"] == {"product_names": [R2]}
    fixture = yaml.safe_load((plugin_copy / "acme_fixtures" / "acme-roadrunner-r2.yaml").read_text())
    assert fixture["expected"]["accelerator_type"] == "R2"
    assert fixture["faults"][0]["expected"]["resources"] == {"ACME": 3.0, "accelerator_type:R2": 1.0}


def test_the_printed_form_and_the_cli_options_stay_in_step() -> None:
    from rayaccel.catalog import sku_add_command
    from rayaccel.cli import sku
    from rayaccel.records import Device

    device = Device(index=0, id="x", product_name="ACME Roadrunner R2", pci_device_id="0x0a02", memory_mib=1,
                    architecture="coyote")
    printed = {a for a in shlex.split(sku_add_command("acme", device, "R2")) if a.startswith("--")}
    import typer.main

    command = typer.main.get_command(sku.sku_app).commands["add"]  # type: ignore[attr-defined]
    options = {opt for param in command.params for opt in param.opts}
    assert printed <= options
    assert {"--interconnect", "--from-fixture", "--fixture-name"} <= options


@pytest.mark.parametrize(("args", "message"), [
    (["--id", "acme-r1"], "SKU id 'acme-r1' is already in the catalog"),
    (["--id", "B300"], "--id 'B300': String should match pattern"),
    (["--pci-device-id", "2901"], "--pci-device-id '2901': must be 0x followed by 4 hex digits"),
    (["--product-name", "ACME Roadrunner R1"], "product name 'ACME Roadrunner R1' already resolves to SKU 'acme-r1'"),
    (["--plugin", "nope"], "unknown plugin 'nope'"),
    (["--from-fixture", "acme/nope"], "--from-fixture 'acme/nope': plugin 'acme' has no such fixture"),
    (["--fixture-name", "acme-4"], "fixture acme/acme-4 already exists"),
    (["--accelerator-type", "R 2"], "--accelerator-type 'R 2': Value error, must be a valid Ray label value"),
    (["--match-field", "model"], "--match-field 'model': give FIELD=VALUE"),
    (["--match-field", "Model=X"], "--match-field 'Model': Value error, must be a Device field or attribute name"),
    # Limits on every user-given string (issue 39: a 120,000-character marketing name went into the catalog).
    (["--marketing-name", "R" * 120_000], "is 120000 characters long (at most 256)"),
    (["--marketing-name", "R2\nfamily: evil"], "--marketing-name 'R2\\nfamily: evil' holds control characters"),
    (["--marketing-name", "   "], "is blank; give the name as the vendor prints it"),
    (["--product-name", "ACME \x1b[2J R2"], "--product-name 'ACME \\x1b[2J R2' holds control characters"),
    (["--architecture", "a" * 300], "--architecture"),
])
def test_refusals_are_one_line_exit_2_and_change_nothing(plugin_copy: Path, args: list[str], message: str) -> None:
    base = {"--plugin": "acme", "--id": "acme-r2", "--marketing-name": "ACME Roadrunner R2",
            "--accelerator-type": "R2", "--product-name": R2}
    for i in range(0, len(args), 2):
        base[args[i]] = args[i + 1]
    before = digest(plugin_copy)
    done = rayaccel("sku", "add", *(x for kv in base.items() for x in kv), env=env_for(plugin_copy))
    assert done.returncode == 2, done.stdout
    assert message in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert digest(plugin_copy) == before


def _plugin_from(root: Path, **overrides: Any) -> SimpleNamespace:
    """The onboarding plugin's hooks, reading the catalog and fixtures in ``root``, with some replaced."""
    from rayaccel.catalog import load_catalog

    hooks = {name: getattr(acme_onboard, name) for name in dir(acme_onboard) if name.startswith("rayaccel_")}
    hooks["rayaccel_sku_catalog"] = lambda: load_catalog(root / "acme-skus.yaml")
    hooks["rayaccel_fixture_dirs"] = lambda: [str(root / "acme_fixtures")]
    return SimpleNamespace(**{**hooks, **overrides})


def test_a_fixture_the_plugin_did_not_make_into_the_sku_is_refused(plugin_copy: Path) -> None:
    # A plugin that forgets to rewrite the devices: the SDK sees they still resolve to the old SKU.
    broken = _plugin_from(plugin_copy, rayaccel_fixture_for_sku=lambda fixture, sku: fixture)
    manager = PluginManager(autoload=False)
    assert manager.register(broken, "acme"), manager.problems
    sku = build_sku_record(sku_id="acme-r2", marketing_name="R2", accelerator_type="R2", product_names=[R2])
    before = digest(plugin_copy)
    expected = "does not behave as SKU acme-r2 must: accelerator type: expected 'R2', got 'R1'"
    with pytest.raises(FixtureError, match=expected):
        add_sku(manager, "acme", sku)
    assert digest(plugin_copy) == before


def test_a_plugin_without_the_fixture_hook_is_told_what_to_implement(plugin_copy: Path) -> None:
    plain = _plugin_from(plugin_copy)
    del plain.rayaccel_fixture_for_sku
    manager = PluginManager(autoload=False)
    assert manager.register(plain, "acme")
    sku = build_sku_record(sku_id="acme-r2", marketing_name="R2", accelerator_type="R2", product_names=[R2])
    with pytest.raises(FixtureError, match="does not implement rayaccel_fixture_for_sku"):
        add_sku(manager, "acme", sku)


def test_catalog_appends_keep_the_files_format() -> None:
    record = record_data(build_sku_record(sku_id="x2", marketing_name="X2", accelerator_type="X2",
                                          product_names=["X 2"], pci_device_ids=["0x0A02"]))
    assert record == {"id": "x2", "marketing_name": "X2", "accelerator_type": "X2",
                      "match": {"pci_device_ids": ["0x0a02"], "product_names": ["X 2"]}}
    yaml_text = ("# header\nschema: rayaccel-sku-catalog/1\nfamily: x\nskus:\n  # the first\n  - id: x1\n"
                 "    marketing_name: X1\n    accelerator_type: X1\n    match: {product_names: [X 1]}\n"
                 "# trailing comment\n")
    data = yaml.safe_load(yaml_text)
    text, rewritten = appended_catalog_text(Path("c.yaml"), yaml_text, data, record)
    assert not rewritten
    assert text.startswith(yaml_text.split("# trailing")[0]) and "# the first" in text and "# trailing comment" in text
    assert yaml.safe_load(text)["skus"] == [*data["skus"], record]
    flow = "schema: rayaccel-sku-catalog/1\nfamily: x\nskus: [{id: x1, marketing_name: X1, accelerator_type: X1, " \
           "match: {product_names: [X 1]}}]\n"
    text, rewritten = appended_catalog_text(Path("c.yaml"), flow, yaml.safe_load(flow), record)
    assert rewritten and yaml.safe_load(text)["skus"][1] == record
    as_json = json.dumps(data, indent=4)
    text, rewritten = appended_catalog_text(Path("c.json"), as_json, data, record)
    assert not rewritten and text.splitlines()[1].startswith('    "schema"')
    assert json.loads(text)["skus"][-1] == record


def test_building_a_record_names_the_option_at_fault() -> None:
    with pytest.raises(CatalogError, match="--memory-mib -1"):
        build_sku_record(sku_id="x", marketing_name="X", accelerator_type="X", product_names=["X"], memory_mib=-1)
    with pytest.raises(CatalogError, match="needs something to match devices by"):
        build_sku_record(sku_id="x", marketing_name="X", accelerator_type="X", product_names=[])


def test_sku_check_reports_one_line_per_bad_catalog(plugin_copy: Path) -> None:
    env = env_for(plugin_copy)
    good = rayaccel("sku", "check", env=env)
    assert good.returncode == 0 and good.stdout.startswith("ok: acme: 1 SKU ("), good.stderr
    catalog = plugin_copy / "acme-skus.yaml"
    catalog.write_text(catalog.read_text().replace("accelerator_type: R1", "accelerator_type: R 1"))
    # Every installed plugin is checked: the reference plugins' catalogs are fine, the copy's is not.
    bad = rayaccel("sku", "check", env={**env, "RAYACCEL_NO_AUTOLOAD": "0"})
    assert bad.returncode == 2
    lines = bad.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: plugin acme: ") and "accelerator_type" in lines[0], lines
    assert "ok: nvidia:" in bad.stdout


# SKU rules on any field discovery reads -------------------------------------------------------------------

def _catalog(*skus: dict[str, Any]) -> Any:
    from rayaccel.catalog import parse_catalog

    return parse_catalog({"schema": "rayaccel-sku-catalog/1", "family": "acme", "skus": [
        {"marketing_name": s["id"], "accelerator_type": s["id"].upper(), **s} for s in skus]}, "test")


def test_a_sku_can_match_by_what_the_tool_prints_when_it_prints_no_pci_id_or_product_name() -> None:
    """A tool that prints a model string and a memory size, not a product name: the catalog matches those,
    and the same product name with another model resolves to another SKU."""
    from rayaccel.catalog import resolve_sku
    from rayaccel.records import Device

    catalog = _catalog({"id": "x1-48g", "match": {"fields": {"model": "X1", "memory_mib": "49152"}}},
                       {"id": "x1-96g", "match": {"fields": {"model": "X1", "memory_mib": "98304"}}})

    def device(model: str, memory: int) -> Device:
        return Device(index=0, id="d0", product_name="Accelerator", memory_mib=memory, attributes={"model": model})

    assert resolve_sku(catalog, device("X1", 49152)).id == "x1-48g"  # type: ignore[union-attr]
    assert resolve_sku(catalog, device("X1", 98304)).id == "x1-96g"  # type: ignore[union-attr]
    assert resolve_sku(catalog, device("X2", 49152)) is None  # every field must match


def test_fields_rules_are_refused_where_they_would_be_ambiguous() -> None:
    from rayaccel.catalog import matching_skus
    from rayaccel.records import Device
    from rayaccel_conformance.checks.supported import ambiguous_match

    with pytest.raises(CatalogError, match="two SKUs match devices by the same fields"):
        _catalog({"id": "a", "match": {"fields": {"model": "X1"}}}, {"id": "b", "match": {"fields": {"model": "X1"}}})
    # Different rules that one device satisfies both: the conformance suite's RAC205 names it.
    catalog = _catalog({"id": "a", "match": {"fields": {"model": "X1"}}},
                       {"id": "b", "match": {"fields": {"memory_mib": "49152"}}})
    both = Device(index=0, id="d0", product_name="Accelerator", memory_mib=49152, attributes={"model": "X1"})
    assert [s.id for s in matching_skus(catalog, both)[1]] == ["a", "b"]  # type: ignore[index]
    assert "2 SKUs (a, b) match product 'Accelerator' by device fields" in (ambiguous_match(catalog, both) or "")
    # A more specific rule decides first: an exact product name wins over fields.
    named = _catalog({"id": "a", "match": {"fields": {"model": "X1"}}},
                     {"id": "c", "match": {"product_names": ["Accelerator"]}})
    assert ambiguous_match(named, both) is None and matching_skus(named, both)[1][0].id == "c"  # type: ignore[index]
