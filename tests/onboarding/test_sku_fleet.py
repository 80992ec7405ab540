"""SKU resolution over a fleet: a catalog that tells SKUs apart by memory (a tool that prints no model name),
the unknown-SKU warning's fix line run verbatim, and the refusals and reports that keep a new SKU from
re-typing the cards other SKUs matched before (issue 43).

The ACME onboarding plugin, a catalog matched by ``fields`` and the fleet's fixture are copied into a
temporary directory, so the repository's files are never written.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from rayaccel.onboarding.fleet import FleetDevice, resolution_findings
from rayaccel.records import Device
from rayaccel_testplugins import acme, acme_onboard

FIELDS_CATALOG = """# ACME SKUs, told apart by memory: the tool prints one name for every card, or none
schema: rayaccel-sku-catalog/1
family: acme
skus:
- id: acme-r1-64g
  marketing_name: ACME R1 64G
  accelerator_type: R1-64G
  architecture: coyote
  memory_mib: 65536
  match:
    fields: {memory_mib: "65536"}
"""


def rayaccel(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "rayaccel", *args], capture_output=True, text=True, timeout=120,
                          env={**os.environ, **env})


def _product(text: str, product: str | None) -> str:
    """The fixture's text with every card's product file saying ``product`` (None: no such file)."""
    data = yaml.safe_load(text)
    files = data["host"]["files"]
    for path in [p for p in files if p.endswith("/product")]:
        if product is None:
            del files[path]
        else:
            files[path] = product + "\n"
    return yaml.safe_dump(data, sort_keys=False)


def fleet_copy(root: Path, product: str | None) -> dict[str, str]:
    """The onboarding plugin over a fleet of 64 GiB cards matched by memory; the environment that loads it."""
    (root / "acme_fixtures").mkdir(parents=True)
    shutil.copy(Path(acme_onboard.__file__), root / "acme_onboard_copy.py")
    (root / "acme-skus.yaml").write_text(FIELDS_CATALOG)
    text = (acme.HERE / "acme_fixtures" / "acme-4.yaml").read_text()
    text = text.replace("acme-r1", "acme-r1-64g").replace("accelerator_type:R1", "accelerator_type:R1-64G")
    text = text.replace("accelerator_type: R1", "accelerator_type: R1-64G")
    text = text.replace("ray.io/accelerator-type: R1", "ray.io/accelerator-type: R1-64G")
    (root / "acme_fixtures" / "acme-4.yaml").write_text(_product(text, product))
    return {"RAYACCEL_NO_AUTOLOAD": "1", "RAYACCEL_PLUGINS": "acme=acme_onboard_copy",
            "PYTHONPATH": os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")])}


def big_card(root: Path, product: str | None) -> Path:
    """A node of the fleet's cards with 128 GiB each: a SKU the catalog does not know yet."""
    data = yaml.safe_load((root / "acme_fixtures" / "acme-4.yaml").read_text())
    for path in data["host"]["files"]:
        if path.endswith("/memory_mib"):
            data["host"]["files"][path] = "131072\n"
    data["name"] = "acme-big"
    path = root / "acme-big.yaml"  # outside the fixture dir: a node seen in the field
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def skus_of(inspected: dict[str, object]) -> set[str | None]:
    return {d["sku"] for d in inspected["devices"]}  # type: ignore[attr-defined, index]


@pytest.mark.parametrize("product", ["ACME", None], ids=["one-name-for-every-card", "no-product-name"])
def test_the_printed_fix_line_adds_exactly_the_unknown_sku_and_keeps_the_fleet(tmp_path: Path,
                                                                              product: str | None) -> None:
    env = fleet_copy(tmp_path, product)
    unknown = big_card(tmp_path, product)
    before = json.loads(rayaccel("inspect", "--simulate", str(unknown), "--json", env=env).stdout)
    [warning] = [p for p in before["problems"] if p["code"] == "unknown-sku"]
    argv = shlex.split(warning["fix"].split("onboard the SKU: ", 1)[1])
    # Matched by what tells the card apart (its memory), never by a product name that outranks field rules.
    assert "--product-name" not in argv and argv[argv.index("--match-field") + 1] == "memory_mib=131072", argv

    added = rayaccel(*argv[1:], env=env)  # exactly as printed
    assert added.returncode == 0, added.stderr
    new_id = argv[argv.index("--id") + 1]
    after = json.loads(rayaccel("inspect", "--simulate", str(unknown), "--json", env=env).stdout)
    assert skus_of(after) == {new_id} and after["labels"]["rayaccel.io/sku-known"] == "true"
    fleet = json.loads(rayaccel("inspect", "--simulate", "acme/acme-4", "--json", env=env).stdout)
    assert skus_of(fleet) == {"acme-r1-64g"}  # the cards matched before keep their SKU
    assert fleet["labels"]["ray.io/accelerator-type"] == "R1-64G"
    checked = rayaccel("sku", "check", env=env)
    assert checked.returncode == 0 and "ok: acme: 2 SKUs" in checked.stdout, checked.stderr


def test_a_sku_that_would_retype_the_fleet_is_refused_naming_the_devices(tmp_path: Path) -> None:
    env = fleet_copy(tmp_path, "ACME")
    catalog_before = (tmp_path / "acme-skus.yaml").read_text()
    # The fix line: a product-name rule, which outranks the fleet's memory rule.
    args = ["sku", "add", "--plugin", "acme", "--id", "acme", "--marketing-name", "ACME", "--accelerator-type",
            "ACME", "--product-name", "ACME", "--memory-mib", "131072"]
    refused = rayaccel(*args, env=env)
    assert refused.returncode == 2, refused.stdout
    [line] = refused.stderr.strip().splitlines()
    assert "SKU acme would take 4 devices another SKU matched before" in line
    assert "acme/acme-4: ACME-0000-5e1f-4c2a-9d3b-000000000000 ('ACME', 65536 MiB) was SKU acme-r1-64g" in line
    assert "--allow-retype" in line
    assert (tmp_path / "acme-skus.yaml").read_text() == catalog_before
    assert sorted(p.name for p in (tmp_path / "acme_fixtures").iterdir()) == ["acme-4.yaml"]
    # A recorded node given with --check-fixture counts as the fleet too; told explicitly, the SKU is added.
    recorded = big_card(tmp_path, "ACME")
    told = rayaccel(*args, "--allow-retype", "--check-fixture", str(recorded), env=env)
    assert told.returncode == 0, told.stderr


def test_sku_check_reports_ambiguous_and_shadowed_matches(tmp_path: Path) -> None:
    from rayaccel.catalog import parse_catalog

    rules = {"by-memory": {"fields": {"memory_mib": "65536"}}, "by-arch": {"fields": {"architecture": "coyote"}},
             "by-name": {"product_names": ["ACME"]}}
    catalog = parse_catalog({"schema": "rayaccel-sku-catalog/1", "family": "acme", "skus": [
        {"id": sku_id, "marketing_name": sku_id, "accelerator_type": sku_id, "match": match}
        for sku_id, match in rules.items()]}, "test")
    nameless = Device(index=0, id="d0", memory_mib=65536, architecture="coyote")
    named = Device(index=1, id="d1", product_name="ACME", memory_mib=65536)
    errors, notes = resolution_findings(catalog, [FleetDevice("acme/a", nameless, "by-memory"),
                                                  FleetDevice("acme/b", named, "by-memory")])
    assert errors == [
        "ambiguous: acme/a: d0 (no product name, 65536 MiB) matches SKUs by-memory, by-arch by device fields; the "
        "first wins by catalog order: give one of them a rule that tells the devices apart",
        "acme/b: d1 ('ACME', 65536 MiB) resolves to SKU by-name by exact product name, but the fixture states "
        "by-memory"]
    assert notes == ["shadowed: acme/b: d1 ('ACME', 65536 MiB) matches SKU by-memory by device fields, but SKU "
                     "by-name wins by exact product name"]
    # Through the command: the plugin's fixture resolving against its statement is exit 2, one line.
    env = fleet_copy(tmp_path, "ACME")
    catalog_path = tmp_path / "acme-skus.yaml"
    catalog_path.write_text(catalog_path.read_text() + "- id: acme-name\n  marketing_name: ACME\n  accelerator_type: "
                            "ACME\n  match: {product_names: [ACME]}\n")
    bad = rayaccel("sku", "check", env=env)
    assert bad.returncode == 2
    [line] = bad.stderr.strip().splitlines()
    assert "resolves to SKU acme-name by exact product name, but the fixture states acme-r1-64g" in line, line
