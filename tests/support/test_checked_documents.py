"""A fixture or SKU catalog that passed its schema check is not parsed or checked again (rayaccel.files.checked):
the cache is honest (a changed file, a changed schema, a damaged entry: checked afresh; a failure: never kept)."""

from __future__ import annotations

import datetime
import hashlib
import json
import os
import shutil
import threading
from pathlib import Path
from typing import Any

import pytest

from rayaccel import schemas
from rayaccel.catalog import load_catalog
from rayaccel.errors import CatalogError, FixtureError
from rayaccel.files import checked
from rayaccel.hosts.fixtures import installed_fixtures, load_fixture
from rayaccel.plugins.manager import PluginManager

ROOT = Path(__file__).resolve().parents[2]
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
    assert len(kept) == 3 and "checked-key4" in kept
    assert checked._recall("key4") == {"n": 4}
    assert json.loads((cache / "checked-key4.json").read_bytes().partition(b"\n")[2]) == {"data": {"n": 4}}


def test_a_relative_xdg_cache_home_is_ignored(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/cache")
    assert checked.cache_dir() == tmp_path / ".cache" / "rayaccel" / "checked"


# -- the cache can only save time, never change a result (issue 39) ----------------------------------------

def _key_of(path: Path, schema: str = "fixture") -> str:
    fmt = "json" if str(path).endswith(".json") else "yaml"
    return checked._key(path.read_bytes(), fmt, schema, schemas.SCHEMA_DIR)


def _plain_digest_entry(data: Any) -> bytes:
    """An entry anyone can compute: the payload's plain SHA-256 (what the cache once trusted)."""
    payload = json.dumps({"data": data}, separators=(",", ":")).encode()
    return hashlib.sha256(payload).hexdigest().encode() + b"\n" + payload


def test_a_forged_entry_does_not_make_a_garbage_fixture_pass(cache: Path, fixture_copy: Path,
                                                             tmp_path: Path) -> None:
    dgx = load_fixture(fixture_copy)  # a real entry exists, so the folder and its secret do too
    garbage = tmp_path / "garbage.yaml"
    garbage.write_text("not: a fixture\n", encoding="utf-8")
    for name in (f"checked-{_key_of(garbage)}.json", f"{_key_of(garbage)}.json"):
        (cache / name).write_bytes(_plain_digest_entry(json.loads(json.dumps(dgx.model_dump(mode="json")))))
    with pytest.raises(FixtureError, match="invalid fixture"):
        load_fixture(garbage)


def test_an_entry_copied_from_another_key_does_not_change_a_fixture(cache: Path, fixture_copy: Path,
                                                                    tmp_path: Path) -> None:
    dgx = load_fixture(fixture_copy)
    [dgx_entry] = cache.glob("checked-*.json")
    other = installed_fixtures(PluginManager())["nvidia/l4-single"]
    l4 = tmp_path / other.name
    shutil.copy(other, l4)
    l4_fixture = load_fixture(l4)
    (cache / f"checked-{_key_of(l4)}.json").write_bytes(dgx_entry.read_bytes())  # the 8-GPU answer, for the L4
    assert load_fixture(l4) == l4_fixture != dgx


def test_a_non_catalog_file_does_not_pass_sku_check_through_a_forged_entry(cache: Path, tmp_path: Path) -> None:
    real = tmp_path / "real.yaml"
    shutil.copy(CATALOG, real)
    catalog = load_catalog(real)
    fake = tmp_path / "skus.yaml"
    fake.write_text("hello: world\n", encoding="utf-8")
    entry = _plain_digest_entry(json.loads(json.dumps(catalog.model_dump(mode="json"))))
    (cache / f"checked-{_key_of(fake, 'sku-catalog')}.json").write_bytes(entry)
    with pytest.raises(CatalogError, match="invalid SKU catalog"):
        load_catalog(fake)


def test_a_cache_folder_that_is_a_symlink_is_neither_pruned_nor_written(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, checks: list[str], fixture_copy: Path) -> None:
    unrelated = tmp_path / "someone-elses"
    unrelated.mkdir()
    for i in range(300):
        (unrelated / f"{i:03d}.json").write_text("{}", encoding="utf-8")
        (unrelated / f"checked-{i:03d}.json").write_text("{}", encoding="utf-8")
    (tmp_path / "cache" / "rayaccel").mkdir(parents=True)
    (tmp_path / "cache" / "rayaccel" / "checked").symlink_to(unrelated)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setattr(checked, "MAX_ENTRIES", 10)
    assert load_fixture(fixture_copy) == load_fixture(fixture_copy)
    assert checks == ["fixture", "fixture"]  # no cache at all
    assert sorted(p.name for p in unrelated.iterdir()) == sorted(
        [f"{i:03d}.json" for i in range(300)] + [f"checked-{i:03d}.json" for i in range(300)])


def test_pruning_removes_only_entries_this_cache_wrote(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(checked, "MAX_ENTRIES", 3)
    checked._remember("key0", {"n": 0})
    mine = {cache / f"checked-other{i}.json" for i in range(5)}
    for path in mine:
        path.write_text("{}", encoding="utf-8")  # named like entries, but no tag of this cache
    for i in range(1, 5):
        checked._remember(f"key{i}", {"n": i})
    assert all(path.exists() for path in mine)
    assert checked._recall("key4") == {"n": 4}


@pytest.mark.parametrize("folder_mode", [0o777, 0o722])
def test_a_folder_others_may_write_is_not_used(cache: Path, checks: list[str], fixture_copy: Path,
                                               folder_mode: int) -> None:
    load_fixture(fixture_copy)
    cache.chmod(folder_mode)
    load_fixture(fixture_copy)
    assert checks == ["fixture", "fixture"]


def test_a_secret_others_may_read_is_not_trusted(cache: Path, checks: list[str], fixture_copy: Path) -> None:
    load_fixture(fixture_copy)
    secret = cache / checked.SECRET_NAME
    assert secret.stat().st_mode & 0o777 == 0o600
    secret.chmod(0o644)
    load_fixture(fixture_copy)
    assert checks == ["fixture", "fixture"]


def _replace_entry(cache: Path, make: Any) -> None:
    [entry] = cache.glob("checked-*.json")
    entry.unlink()
    make(entry)


@pytest.mark.parametrize("kind", ["fifo", "dev-zero", "huge", "directory", "symlink-to-real-entry"])
def test_an_entry_that_is_not_a_small_regular_file_is_ignored_quickly(
        cache: Path, checks: list[str], fixture_copy: Path, kind: str, tmp_path: Path) -> None:
    first = load_fixture(fixture_copy)
    [entry] = cache.glob("checked-*.json")
    saved = tmp_path / "saved-entry"
    saved.write_bytes(entry.read_bytes())
    entry.unlink()
    if kind == "fifo":
        os.mkfifo(entry)
    elif kind == "dev-zero":
        entry.symlink_to("/dev/zero")
    elif kind == "huge":
        with open(entry, "wb") as f:
            f.truncate(300 * 1024 * 1024)  # sparse: 300 MB that would be read whole
    elif kind == "directory":
        entry.mkdir()
    else:
        entry.symlink_to(saved)  # a valid entry, but not a file of the cache folder's
    done: list[Any] = []
    reader = threading.Thread(target=lambda: done.append(load_fixture(fixture_copy)), daemon=True)
    reader.start()
    reader.join(timeout=30)
    assert not reader.is_alive(), f"reading the cache blocked on a {kind}"
    assert done == [first] and checks == ["fixture", "fixture"]
