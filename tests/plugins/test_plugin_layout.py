"""The reference plugins follow the template's layout, with the same module names for the same concepts, so a
vendor who reads one has read them all (issue 21).

The template (``templates/vendor-plugin/.../src/<module>/``) names a module for each concept: ``plugin.py``
(the hooks, thin), ``probe.py`` (one probe of the host), ``readings.py`` (what a probe read, as records),
``discovery.py``, ``topology.py``, ``health.py``, ``metrics.py``, ``transport.py``, ``sku_fixture.py``; the
reference plugins add ``visibility.py`` (the visible-devices variable), and their cloud instance types are data
(``instance-types.yaml``, answered by the SDK: no module). Modules for a vendor's
own interface keep the vendor's names (``nvml.py``, ``amdsmi.py``, ``hlsmi.py``, ``neuronls.py``, ...).

Each plugin is checked where it is installed (``importlib.util.find_spec``), not by a path in this checkout:

- ``plugin.py``, ``discovery.py``, ``health.py``, ``metrics.py`` exist;
- ``topology.py`` exists, or the plugin says why not: its README or ``plugin.py`` docstring holds
  "No `topology.py`" followed by the reason;
- ``visibility.py`` exists where the plugin has its own visible-devices syntax (it implements
  ``rayaccel_parse_visible`` or ``rayaccel_visible_env``); ``sku_fixture.py`` where it implements
  ``rayaccel_fixture_for_sku``;
- ``plugin.py`` imports each concept module the plugin has (its hooks hand off to them);
- no module (or subpackage) is named with a synonym of a shared concept (``visible.py``, ``session.py``, ...);
- the ``rayaccel`` entry point named for the plugin points at ``rayaccel_<plugin>.plugin``.
"""

from __future__ import annotations

import ast
import importlib.metadata
import importlib.util
import shutil
from pathlib import Path

import pytest

PLUGINS = ("nvidia", "amd", "tpu", "neuron", "gaudi")

#: Plugins not aligned yet. Their case is expected to fail (strict): once one complies it XPASSes, which fails
#: the run. Then remove it from here.
ALIGNING: dict[str, str] = {}

#: Required whatever the plugin implements.
ALWAYS = ("plugin.py", "discovery.py", "health.py", "metrics.py")

#: Required where the plugin implements one of these hooks.
BY_HOOK = {
    "visibility.py": ("rayaccel_parse_visible", "rayaccel_visible_env"),
    "sku_fixture.py": ("rayaccel_fixture_for_sku",),
}

#: Concept modules plugin.py must import where they exist (transport.py is named by a class path instead).
HANDED_OFF = ("discovery", "topology", "health", "metrics", "visibility", "sku_fixture")

#: The shared name -> names that mean the same and must not be used instead (file stems; subpackages too).
SYNONYMS = {
    "plugin": {"hooks", "hookimpl", "hookimpls", "impl"},
    "probe": {"session", "sessions", "probing", "prober", "probes", "host_probe"},
    "readings": {"snapshot", "snapshots", "reading", "records", "facts", "observations"},
    "discovery": {"discover", "discovered", "devices", "enumerate", "enumeration", "inventory"},
    "topology": {"topo", "topologies", "links", "interconnect"},
    "health": {"healthcheck", "healthchecks", "health_check", "health_checks", "healthy"},
    "metrics": {"metric", "telemetry", "stats", "samples", "sampling"},
    "visibility": {"visible", "visible_devices", "visible_cores", "visible_chips", "visible_env", "visibility_env"},
    "transport": {"transports", "tensor_transport", "tensor_transports", "rdt"},
    "cloud": {"clouds", "cloud_hints", "hints", "instance_types"},
    "sku_fixture": {"sku_fixtures", "fixture_for_sku", "sku", "skus", "new_sku"},
}

NO_TOPOLOGY = "No `topology.py`"


def package_dir(plugin: str) -> Path:
    spec = importlib.util.find_spec(f"rayaccel_{plugin}")
    if spec is None or not spec.submodule_search_locations:
        pytest.skip(f"the {plugin} reference plugin is not installed")
    return Path(next(iter(spec.submodule_search_locations)))


def module_names(package: Path) -> set[str]:
    """The package's top-level modules and subpackages, by name (``visibility.py`` -> ``visibility``)."""
    return {p.stem for p in package.glob("*.py")} | {p.name for p in package.iterdir()
                                                      if p.is_dir() and (p / "__init__.py").is_file()}


def hooks_and_imports(plugin_py: Path, package: str) -> tuple[set[str], set[str]]:
    """The hooks plugin.py defines (as functions, or as a module's function marked a hook:
    ``rayaccel_health = hookimpl(health.health_of)``), and the package's modules it imports."""
    tree = ast.parse(plugin_py.read_text(encoding="utf-8"))
    hooks = {n.name for n in tree.body if isinstance(n, ast.FunctionDef) and n.name.startswith("rayaccel_")}
    hooks |= {target.id for n in tree.body if isinstance(n, ast.Assign) for target in n.targets
              if isinstance(target, ast.Name) and target.id.startswith("rayaccel_")}
    imported: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module == package:
            imported |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.startswith(package + "."):
            imported.add(node.module.split(".")[1])
        elif isinstance(node, ast.Import):
            imported |= {a.name.split(".")[1] for a in node.names if a.name.startswith(package + ".")}
    return hooks, imported


def documents_no_topology(package: Path) -> bool:
    plugin_doc = ast.get_docstring(ast.parse((package / "plugin.py").read_text(encoding="utf-8"))) or ""
    readme = package.parent.parent / "README.md"  # src layout: <project>/src/<package>/
    readme_text = readme.read_text(encoding="utf-8") if readme.is_file() else ""
    after = [text.partition(NO_TOPOLOGY)[2] for text in (plugin_doc, readme_text) if NO_TOPOLOGY in text]
    return any(rest.startswith(":") and (rest[1:].splitlines() or [""])[0].strip() for rest in after)  # "...: <reason>"


def layout_problems(package: Path) -> list[str]:
    """What in the package at ``package`` does not follow the shared layout (empty: it does)."""
    names = module_names(package)
    problems = [f"{required} is missing" for required in ALWAYS if required[:-3] not in names]
    if "plugin" not in names:
        return problems
    hooks, imported = hooks_and_imports(package / "plugin.py", package.name)
    if "topology" not in names and not documents_no_topology(package):
        problems.append(f"topology.py is missing, and neither the README nor plugin.py's docstring says why "
                        f"(\"{NO_TOPOLOGY}: <reason>\")")
    for required, wanting in BY_HOOK.items():
        implemented = sorted(hooks.intersection(wanting))
        if implemented and required[:-3] not in names:
            problems.append(f"{required} is missing, but plugin.py implements {', '.join(implemented)}")
    for concept in HANDED_OFF:
        if concept in names and concept not in imported:
            problems.append(f"plugin.py does not import {concept}.py: its hooks should hand off to it")
    for shared, synonyms in SYNONYMS.items():
        problems += [f"{name} is a synonym of the shared name {shared}: rename it to {shared}"
                     for name in sorted(names & synonyms)]
    problems += [f"{name} is a synonym of the shared name visibility: rename it to visibility"
                 for name in sorted(names) if name.startswith("visible") and name not in SYNONYMS["visibility"]]
    return problems


def entry_point_problems(plugin: str) -> list[str]:
    points = [ep for ep in importlib.metadata.entry_points(group="rayaccel") if ep.name == plugin]
    if [ep.value for ep in points] != [f"rayaccel_{plugin}.plugin"]:
        return [f"the rayaccel entry point {plugin!r} is {[ep.value for ep in points]}, "
                f"not ['rayaccel_{plugin}.plugin']"]
    return []


@pytest.mark.parametrize("plugin", [
    pytest.param(p, marks=pytest.mark.xfail(strict=True, reason=ALIGNING[p])) if p in ALIGNING else p
    for p in PLUGINS
])
def test_reference_plugin_follows_the_template_layout(plugin: str) -> None:
    package = package_dir(plugin)
    problems = layout_problems(package) + entry_point_problems(plugin)
    assert not problems, f"rayaccel_{plugin} ({package}):\n- " + "\n- ".join(problems)


def test_the_layout_check_fails_a_renamed_module(tmp_path: Path) -> None:
    """The check is not vacuous: visibility.py renamed back to visible.py (and transport.py to transports.py)
    fails it, naming both files."""
    copy = tmp_path / "rayaccel_nvidia"
    shutil.copytree(package_dir("nvidia"), copy, ignore=shutil.ignore_patterns("__pycache__", "fixtures"))
    assert layout_problems(copy) == []
    (copy / "visibility.py").rename(copy / "visible.py")
    (copy / "transport.py").rename(copy / "transports.py")
    problems = layout_problems(copy)
    assert any("visibility.py is missing" in p for p in problems), problems
    assert any(p.startswith("visible is a synonym") for p in problems), problems
    assert any(p.startswith("transports is a synonym") for p in problems), problems


def test_the_layout_check_wants_the_concept_modules_a_plugin_needs(tmp_path: Path) -> None:
    """A plugin.py doing discovery itself, with no topology.py and no reason given, fails."""
    package = tmp_path / "rayaccel_acme"
    package.mkdir()
    (package / "plugin.py").write_text('"""Hooks."""\n\nfrom rayaccel_acme import health, metrics\n\n\n'
                                       "def rayaccel_parse_visible(value):\n    return value.split(',')\n")
    for name in ("health", "metrics"):
        (package / f"{name}.py").write_text("")
    problems = layout_problems(package)
    assert "discovery.py is missing" in problems
    assert any(p.startswith("topology.py is missing") for p in problems)
    assert any(p.startswith("visibility.py is missing, but plugin.py implements rayaccel_parse_visible")
               for p in problems)
    (package.parent / "README.md").write_text("...\n")  # not this package's README (src layout): still missing
    (package / "plugin.py").write_text('"""Hooks.\n\nNo `topology.py`: acme boards have one device."""\n\n'
                                       "from rayaccel_acme import discovery, health, metrics, visibility\n")
    for name in ("discovery", "visibility"):
        (package / f"{name}.py").write_text("")
    assert layout_problems(package) == []
