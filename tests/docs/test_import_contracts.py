"""The layer rules are executable: `lint-imports` keeps the contracts in pyproject.toml [tool.importlinter]
(docs/architecture.md explains them). A broken contract names the import chain that breaks it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]


def test_lint_imports_keeps_every_contract() -> None:
    lint_imports = Path(sys.executable).parent / "lint-imports"
    done = subprocess.run([str(lint_imports), "--no-cache"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert "0 broken" in done.stdout


def test_the_sdk_never_names_the_suite() -> None:
    """Not even in a docstring: the suite joins the SDK through entry points only."""
    named = [str(p.relative_to(ROOT)) for p in (ROOT / "sdk").rglob("*")
             if p.is_file() and p.suffix in (".py", ".json", ".md", ".txt")
             and "rayaccel_conformance" in p.read_text(encoding="utf-8", errors="replace")]
    assert named == []


def _contracts() -> dict[str, Any]:
    import tomllib

    return dict(tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["importlinter"])


def test_the_inventory_names_no_host_implementation_even_for_type_checking() -> None:
    """lint-imports leaves TYPE_CHECKING imports out (pyproject.toml); the inventory-takes-a-host contract holds
    for them too: the host is chosen at the edge, so no module of the inventory may name the simulation, the
    simulated or recording hosts or the fixture model (the contract's list) at all, only the Host seam."""
    import ast

    (forbidden,) = [c["forbidden_modules"] for c in _contracts()["contracts"] if c["id"] == "inventory-takes-a-host"]
    assert {"rayaccel.simulation", "rayaccel.hosts.simulated", "rayaccel.hosts.recording",
            "rayaccel.hosts.fixtures"} <= set(forbidden)
    naming = []
    for path in sorted((ROOT / "sdk" / "rayaccel" / "inventory").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = ([node.module or ""] if isinstance(node, ast.ImportFrom)
                     else [a.name for a in node.names] if isinstance(node, ast.Import) else [])
            naming += [f"{path.name}:{node.lineno} {name}" for name in names
                       if any(name == f or name.startswith(f + ".") for f in forbidden)]
    assert naming == []


def test_every_contract_holds_even_through_type_checking_imports(tmp_path: Path) -> None:
    """The same contracts, with the imports only a type checker follows counted too: no layer names one above
    it and no two siblings name each other, even in an annotation (so no cycle forms, even through
    TYPE_CHECKING)."""
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    config = text[text.index("[tool.importlinter]"):]
    assert "exclude_type_checking_imports = true" in config
    counted = tmp_path / "importlinter.toml"
    counted.write_text(config.replace("exclude_type_checking_imports = true", "exclude_type_checking_imports = false"),
                       encoding="utf-8")
    lint_imports = Path(sys.executable).parent / "lint-imports"
    done = subprocess.run([str(lint_imports), "--no-cache", "--config", str(counted)], cwd=ROOT, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert f"{len(_contracts()['contracts'])} kept, 0 broken" in done.stdout


def _layered_modules(contract: str) -> set[str]:
    (layers,) = [c["layers"] for c in _contracts()["contracts"] if c["id"] == contract]
    return {name.strip() for layer in layers for name in layer.replace("|", ":").split(":")}


@pytest.mark.parametrize(("contract", "package", "outside"), [
    ("layers", ROOT / "sdk" / "rayaccel", {"rayaccel_conformance"}),
    ("conformance-layers", ROOT / "conformance" / "rayaccel_conformance", set()),
])
def test_every_module_sits_in_a_layer(contract: str, package: Path, outside: set[str]) -> None:
    """A new module or package nobody places in the layers would be unconstrained, so it fails here."""
    top_level = {f"{package.name}.{p.stem}" for p in package.iterdir()
                 if (p.suffix == ".py" and p.name != "__init__.py") or (p / "__init__.py").is_file()}
    layered = _layered_modules(contract)
    assert top_level - layered == set()
    assert layered - top_level - outside == set(), "a layer names a module that is gone"


def test_plugins_may_import_nothing_below_rayaccel() -> None:
    """`plugins-use-the-public-api` forbids every module and package of the SDK but the package itself, so a new
    one is an internal to plugins from its first day (a plugin uses what `rayaccel` exports)."""
    import tomllib

    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["importlinter"]
    (forbidden,) = [set(c["forbidden_modules"]) for c in config["contracts"] if c["id"] == "plugins-use-the-public-api"]
    package = ROOT / "sdk" / "rayaccel"
    below = {f"rayaccel.{p.stem}" for p in package.iterdir()
             if (p.suffix == ".py" and p.name not in ("__init__.py", "__main__.py")) or (p / "__init__.py").is_file()}
    assert below - forbidden == set()


def test_every_package_of_the_sdk_is_a_folder_of_modules() -> None:
    """Folders are the layers: every directory holding Python under sdk/rayaccel is a package."""
    package = ROOT / "sdk" / "rayaccel"
    loose = [str(d.relative_to(ROOT)) for d in package.rglob("*") if d.is_dir() and d.name != "__pycache__"
             and any(d.glob("*.py")) and not (d / "__init__.py").is_file()]
    assert loose == []


@pytest.mark.parametrize("package", ["rayaccel", "rayaccel.ray", "rayaccel.testing"])
def test_the_public_api_is_declared_once_and_every_name_imports(package: str) -> None:
    """`__all__` is what the TYPE_CHECKING block declares, and each name loads from the module it names, in a
    fresh interpreter (so a name that only works after something else was imported fails here); a record class
    asked for first is its stand-in (rayaccel.support.lazy.DeferredClass), which must stand in for that very class."""
    import importlib

    from rayaccel.support.lazy import declared_exports

    module = importlib.import_module(package)
    declared = declared_exports(Path(module.__file__ or "").read_text(encoding="utf-8"))
    assert sorted(set(module.__all__) - {"__version__"}) == sorted(declared)
    probe = ("import importlib, sys\n"
             "from rayaccel.support.lazy import DeferredClass\n"
             f"m = importlib.import_module({package!r})\n"
             "bad = [n for n in m.__all__ if getattr(m, n, None) is None]\n"
             "def real(value): return value.real_class if isinstance(value, DeferredClass) else value\n"
             "wrong = [n for n, where in WHERE.items()\n"
             "         if getattr(importlib.import_module(where), n) is not real(getattr(m, n))]\n"
             "print(bad, wrong)\n")
    done = subprocess.run([sys.executable, "-c", f"WHERE = {declared!r}\n" + probe], capture_output=True,
                          text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip() == "[] []"
