"""A fixture or SKU catalog that passed its schema check is not parsed or checked again (rayaccel.files.checked):
the cache is honest (a changed file, a changed schema, a damaged entry: checked afresh; a failure: never kept)."""

from __future__ import annotations

import datetime
import hashlib
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from rayaccel import schemas
from rayaccel.catalog import load_catalog
from rayaccel.errors import CatalogError, FixtureError
from rayaccel.files import checked
from rayaccel.plugins.manager import PluginManager
from rayaccel.simulation.fixtures import installed_fixtures, load_fixture

ROOT = Path(__file__).resolve().parents[1]
CATALOG = ROOT / "reference_plugins" / "nvidia" / "src" / "rayaccel_nvidia" / "skus.yaml"


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return tmp_path / "cache" / "rayaccel" / "checked"


@pytest.fixture
def checks(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The schema checks that really ran (by schema name)."""
    ran: list[str] = []
    real = schemas.schema_errors

    def counted(name: str, data: Any, directory: Path = schemas.SCHEMA_DIR) -> list[str]:
        ran.append(name)
        return real(name, data, directory)

    monkeypatch.setattr(checked, "schema_errors", counted)
    return ran


@pytest.fixture
def fixture_copy(tmp_path: Path) -> Path:
    source = installed_fixtures(PluginManager())["nvidia/dgx-h100"]
    target = tmp_path / source.name
    shutil.copy(source, target)
    return target


def test_a_passed_fixture_is_read_again_without_a_check_and_gives_the_same_fixture(
        cache: Path, checks: list[str], fixture_copy: Path) -> None:
    first = load_fixture(fixture_copy)
    assert checks == ["fixture"] and len(list(cache.glob("*.json"))) == 1
    again = load_fixture(fixture_copy)
    assert checks == ["fixture"]  # remembered: neither parsed nor checked again
    assert again == first


def test_a_changed_file_is_checked_afresh_and_its_error_is_the_schemas(
        cache: Path, checks: list[str], fixture_copy: Path) -> None:
    load_fixture(fixture_copy)
    text = fixture_copy.read_text(encoding="utf-8")
    fixture_copy.write_text(text.replace("description:", "descriptionx:", 1), encoding="utf-8")
    with pytest.raises(FixtureError, match="invalid fixture"):
        load_fixture(fixture_copy)
    with pytest.raises(FixtureError, match="invalid fixture"):  # a failure is never remembered
        load_fixture(fixture_copy)
    assert checks == ["fixture"] * 3
    assert len(list(cache.glob("*.json"))) == 1


def test_a_changed_schema_is_a_new_key(cache: Path, checks: list[str], fixture_copy: Path,
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    load_fixture(fixture_copy)
    stricter = {**schemas.load_schema("fixture"), "required": [*schemas.load_schema("fixture")["required"], "extra"]}
    monkeypatch.setattr(checked, "load_schema", lambda name, directory=schemas.SCHEMA_DIR: stricter)
    monkeypatch.setattr(schemas, "load_schema", lambda name, directory=schemas.SCHEMA_DIR: stricter)
    with pytest.raises(FixtureError, match="'extra' is a required property"):
        load_fixture(fixture_copy)
    assert checks == ["fixture", "fixture"]


@pytest.mark.parametrize("damage", ["garbage", "digest", "payload", "empty", "not-an-object"])
def test_a_damaged_entry_is_ignored_and_replaced(cache: Path, checks: list[str], fixture_copy: Path,
                                                 damage: str) -> None:
    first = load_fixture(fixture_copy)
    [entry] = cache.glob("*.json")
    digest, _, payload = entry.read_bytes().partition(b"\n")
    entry.write_bytes({
        "garbage": b"\x00\xff not an entry",
        "digest": b"0" * 64 + b"\n" + payload,  # the payload does not match its digest
        "payload": digest + b"\n" + payload.replace(b"H100", b"H999", 1),  # edited after it was written
        "empty": b"",
        "not-an-object": hashlib.sha256(b"[1]").hexdigest().encode() + b"\n[1]",
    }[damage])
    assert load_fixture(fixture_copy) == first
    assert checks == ["fixture", "fixture"]  # checked afresh
    assert load_fixture(fixture_copy) == first and checks == ["fixture", "fixture"]  # and remembered again


def test_an_unwritable_cache_only_means_every_read_is_checked(tmp_path: Path, checks: list[str],
                                                              fixture_copy: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("", encoding="utf-8")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocker))
    assert load_fixture(fixture_copy) == load_fixture(fixture_copy)
    assert checks == ["fixture", "fixture"]


def test_a_document_json_cannot_carry_exactly_is_checked_at_every_read(cache: Path) -> None:
    # YAML reads `2026-01-01` as a date: such a document is never remembered (its check cannot be skipped).
    checked._remember("k", {"day": datetime.date(2026, 1, 1)})
    checked._remember("k", {1: "a key that is not a string"})
    assert not cache.exists() or not list(cache.glob("*.json"))


def test_the_catalog_check_is_remembered_too_and_a_broken_catalog_still_refused(
        cache: Path, checks: list[str], tmp_path: Path) -> None:
    catalog = tmp_path / "skus.yaml"
    shutil.copy(CATALOG, catalog)
    assert load_catalog(catalog) == load_catalog(catalog)
    assert checks == ["sku-catalog"]
    catalog.write_text(catalog.read_text(encoding="utf-8") + "\nnonsense: 1\n", encoding="utf-8")
    with pytest.raises(CatalogError, match="invalid SKU catalog"):
        load_catalog(catalog)


def test_at_most_max_entries_are_kept(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(checked, "MAX_ENTRIES", 3)
    for i in range(5):
        checked._remember(f"key{i}", {"n": i})
    kept = sorted(p.stem for p in cache.glob("*.json"))
    assert len(kept) == 3 and "key4" in kept
    assert checked._recall("key4") == {"n": 4}
    assert json.loads((cache / "key4.json").read_bytes().partition(b"\n")[2]) == {"data": {"n": 4}}


def test_a_relative_xdg_cache_home_is_ignored(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/cache")
    assert checked.cache_dir() == tmp_path / ".cache" / "rayaccel" / "checked"
