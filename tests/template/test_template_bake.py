"""The vendor template as vendors run it: real cookiecutter, the baked plugin installed, its own tests,
the conformance suite, and a Ray node started with ``rayaccel start``.

Each baked plugin is installed with ``pip --target`` into a temporary directory put on PYTHONPATH for
the subprocesses, so its entry point is found there and the shared environment is never changed.
"""

from __future__ import annotations

import ast
import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
import yaml
from ports import free_ports

from rayaccel.support.raycompat import RAY_BUILTIN_FAMILIES

REPO = Path(__file__).resolve().parents[2]
TEMPLATE = REPO / "templates" / "vendor-plugin"
BIN = Path(sys.executable).parent
TIERS = ("experimental", "supported", "certified")

# Backslashes and '/' are path separators, refused in names; the maintainers answer keeps one as data.
HOSTILE = {
    "vendor_name": 'Zoë\'s "Quantum" Devices',
    "family_name": "Qübit's \"Q\"",
    "maintainers": 'Seán O\'Brien <sean@example.com>, "Bob" \\ Ñoño',
    "probe_kind": "command-json",
}


def run(argv: list[str], cwd: Path | None = None, env: dict[str, str] | None = None,
        timeout: float = 240) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, "RAY_AUTH_MODE": "disabled", **(env or {})})


def cookiecutter(out: Path, *args: str, answers: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    out.mkdir(parents=True, exist_ok=True)
    extra = [f"{k}={v}" for k, v in (answers or {}).items()]
    return run([sys.executable, "-m", "cookiecutter", "--no-input", *args, "-o", str(out), *extra],
               env={"HOME": str(out.parent / "home")})  # cookiecutter's replay files stay in the test's tmp


def with_path(*paths: Path) -> dict[str, str]:
    return {"PYTHONPATH": os.pathsep.join([*map(str, paths), os.environ.get("PYTHONPATH", "")])}


def install(project: Path, site: Path) -> None:
    """The bake built with this environment's setuptools (``--no-build-isolation``): the dev extra's
    ``setuptools>=77``, which the baked pyproject's SPDX license string needs (pyproject.toml)."""
    done = run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation", "--target",
                str(site), str(project)])
    assert done.returncode == 0, done.stderr[-3000:]


@pytest.fixture(scope="module")
def baked(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, Path]]:
    """name -> (project, site): the default bake with plain `cookiecutter`, the hostile one with `rayaccel new`."""
    root = tmp_path_factory.mktemp("bakes")
    done = cookiecutter(root / "default", str(TEMPLATE))
    assert done.returncode == 0, done.stderr[-3000:]
    new = run([sys.executable, "-m", "rayaccel", "new", "--no-input", "-o", str(root / "hostile"),
               *(f"{k}={v}" for k, v in HOSTILE.items())], env={"HOME": str(root / "home")})
    assert new.returncode == 0, new.stderr[-3000:]
    assert "created" in new.stdout and "first commit" in new.stdout
    projects = {"default": root / "default" / "rayaccel-example", "hostile": root / "hostile" / "rayaccel-qubit-s-q"}
    result = {}
    for name, project in projects.items():
        assert project.is_dir(), sorted(p.name for p in project.parent.iterdir())
        site = root / f"site-{name}"
        install(project, site)
        result[name] = (project, site)
    return result


def test_answers_are_data_in_every_generated_file(baked: dict[str, tuple[Path, Path]]) -> None:
    project, site = baked["hostile"]
    for path in project.rglob("*"):
        if path.suffix == ".py":
            ast.parse(path.read_text(encoding="utf-8"), str(path))
        elif path.suffix == ".toml":
            tomllib.loads(path.read_text(encoding="utf-8"))
        elif path.suffix in (".yaml", ".yml"):
            yaml.safe_load(path.read_text(encoding="utf-8"))
        elif path.suffix == ".json":
            json.loads(path.read_text(encoding="utf-8"))
    pyproject = tomllib.loads((project / "pyproject.toml").read_text(encoding="utf-8"))
    assert pyproject["project"]["name"] == "rayaccel-qubit-s-q"
    assert pyproject["project"]["authors"] == [{"name": HOSTILE["vendor_name"]}]
    assert pyproject["project"]["entry-points"]["rayaccel"] == {"qubit-s-q": "rayaccel_qubit_s_q.plugin"}
    # The plugin, imported from its installed copy, declares exactly what was answered.
    code = ("import json; from rayaccel_qubit_s_q import plugin; f = plugin.rayaccel_family(); "
            "print(json.dumps([f.vendor, f.support.maintainers, f.resource_name, f.visible_devices_env_var]))")
    done = run([sys.executable, "-c", code], env=with_path(site))
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == [HOSTILE["vendor_name"], ['Seán O\'Brien <sean@example.com>', '"Bob" \\ Ñoño'],
                                       "QUBIT_S_Q", "QUBIT_S_Q_VISIBLE_DEVICES"]
    ci = (project / ".github" / "workflows" / "ci.yml").read_text(encoding="utf-8")
    assert "${{ matrix.python-version }}" in ci and "RAYACCEL_PLUGIN: qubit-s-q" in ci
    assert yaml.safe_load(ci)["jobs"]["test"]["steps"]
    record = json.loads((project / ".cruft.json").read_text(encoding="utf-8"))
    assert record["context"]["cookiecutter"]["vendor_name"] == HOSTILE["vendor_name"]
    assert record["directory"] == "templates/vendor-plugin" and len(record["commit"]) == 40


def own_tests_passed(project: Path) -> str:
    """What a bake's ``pytest tests`` prints: the testing kit's common tests (two per fixture, its inventory and its
    metric values, one per fault, and 3 more) and the bake's 8 of its own; a command tool's kinds have a fault more
    (the health query failing)."""
    (fixture,) = project.glob("src/*/fixtures/*.yaml")
    faults = yaml.safe_load(fixture.read_text(encoding="utf-8"))["faults"]
    return f"{2 + len(faults) + 3 + 8} passed"


def test_baked_plugins_pass_their_own_tests(baked: dict[str, tuple[Path, Path]]) -> None:
    for project, site in baked.values():
        done = run([sys.executable, "-m", "pytest", "-q", "tests"], cwd=project, env=with_path(site))
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
        assert own_tests_passed(project) in done.stdout, done.stdout


def test_baked_transport_is_the_reference_transport_under_the_familys_name(baked: dict[str, tuple[Path, Path]]) -> None:
    """The template's transport.py (the example a vendor starts from) moves tensors through shared memory."""
    pytest.importorskip("torch", reason="the transport needs torch: pip install 'rayaccel[rdt]'")
    _, site = baked["hostile"]
    code = ("import os, torch; from rayaccel_qubit_s_q.transport import NAME, Transport; t = Transport(); "
            "src = [torch.arange(10.0), torch.ones(2, 3, dtype=torch.int8)]; "
            "m = t.extract_tensor_transport_metadata('ab', src); "
            "out = t.recv_multiple_tensors('ab', m, t.get_communicator_metadata(None, None)); "
            "t.garbage_collect('ab', m, src); "
            "print(NAME, t.tensor_transport_backend(), all(torch.equal(a, b) for a, b in zip(out, src)), "
            "os.path.exists('/dev/shm/' + m.segment))")
    done = run([sys.executable, "-c", code], env=with_path(site))
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split() == ["QUBIT_S_Q_SHM", "QUBIT_S_Q_SHM", "True", "False"]


def ci_steps(project: Path) -> list[list[str]]:
    """The commands of the baked ci.yml's test job, as this environment runs them."""
    ci = yaml.safe_load((project / ".github" / "workflows" / "ci.yml").read_text(encoding="utf-8"))
    return [step["run"] for step in ci["jobs"]["test"]["steps"] if "run" in step]


def test_a_fresh_bake_passes_its_own_lint_and_type_checks(baked: dict[str, tuple[Path, Path]],
                                                          tmp_path: Path) -> None:
    """ci.yml runs ruff and mypy (strict): both pass on day one with nothing set, and mypy finds rayaccel's
    types (py.typed) where `make install` put it, as a vendor's `pip install rayaccel` would."""
    cache = tmp_path / "mypy-cache"  # one for both bakes: the second reuses what the first read of the SDK
    for project, _ in baked.values():
        assert "ruff check ." in ci_steps(project) and "mypy" in ci_steps(project)
        ruff = run([str(BIN / "ruff"), "check", "."], cwd=project)
        assert ruff.returncode == 0, ruff.stdout[-3000:]
        mypy = run([str(BIN / "mypy"), "--cache-dir", str(cache)], cwd=project, timeout=600)
        assert mypy.returncode == 0 and "Success" in mypy.stdout, mypy.stdout[-3000:]
        assert "rayaccel" not in mypy.stdout.replace(project.name, "")  # found, not "missing imports"


def public_api_lint(project: Path, workdir: Path) -> subprocess.CompletedProcess[str]:
    """`lint-imports` over a baked plugin's package with the repository's `plugins-use-the-public-api` contract
    (the one the reference plugins keep): the package may import `rayaccel`, nothing below it."""
    config = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["importlinter"]
    (contract,) = [c for c in config["contracts"] if c["id"] == "plugins-use-the-public-api"]
    (package,) = [p.name for p in (project / "src").iterdir() if (p / "plugin.py").is_file()]

    def lines(names: list[str]) -> str:
        return "".join(f"\n    {name}" for name in names)

    settings = workdir / "public-api.ini"
    settings.write_text(
        f"[importlinter]\nroot_packages ={lines([package, 'rayaccel', 'rayaccel_conformance'])}\n"
        "exclude_type_checking_imports = true\n\n"
        f"[importlinter:contract:public-api]\nname = {contract['name']}\ntype = forbidden\n"
        f"source_modules ={lines([package])}\nforbidden_modules ={lines(contract['forbidden_modules'])}\n"
        "allow_indirect_imports = true\n", encoding="utf-8")
    return run([str(BIN / "lint-imports"), "--no-cache", "--config", str(settings)], cwd=workdir,
               env=with_path(project / "src"))


def test_a_fresh_bake_imports_only_the_public_api_and_a_bake_importing_an_internal_fails(
        baked: dict[str, tuple[Path, Path]], tmp_path: Path) -> None:
    """The template's plugin source imports what it uses from `rayaccel` alone; the same contract breaks, naming
    the import, once a module of the bake reaches below it (`rayaccel.reporting`, as the template once did)."""
    project, _ = baked["default"]
    clean = public_api_lint(project, tmp_path)
    assert clean.returncode == 0 and "1 kept, 0 broken" in clean.stdout, clean.stdout[-3000:] + clean.stderr[-2000:]

    copy = tmp_path / "internal"
    shutil.copytree(project / "src", copy / "src")
    readings = copy / "src" / "rayaccel_example" / "readings.py"
    readings.write_text(readings.read_text(encoding="utf-8").replace(
        "from rayaccel import ", "from rayaccel.reporting import malformed  # noqa: F811\nfrom rayaccel import ", 1),
        encoding="utf-8")
    broken = public_api_lint(copy, tmp_path)
    assert broken.returncode != 0 and "0 kept, 1 broken" in broken.stdout, broken.stdout[-3000:]
    assert "rayaccel_example.readings -> rayaccel.reporting" in broken.stdout


def declared_as_the_example_says(transport_py: Path) -> str:
    """The ``rayaccel_transports`` hook that the baked transport.py's docstring tells a vendor to put in plugin.py."""
    doc = ast.get_docstring(ast.parse(transport_py.read_text(encoding="utf-8"))) or ""
    block = doc.split("declare it in ``plugin.py``::\n\n", 1)[1].split("\n\n", 1)[0]
    return "\n\n" + "\n".join(line.removeprefix("    ") for line in block.splitlines()) + "\n"


@pytest.mark.ray
@pytest.mark.slow
def test_a_bake_declaring_its_transport_as_the_example_says_stays_supported(tmp_path: Path) -> None:
    """transport.py's docstring tells a vendor to import it into plugin.py and declare it: doing so as written
    keeps the plugin at the supported tier (importing it imports Ray, whose own environment writes are not the
    plugin's: RAC109). Graded up to certified (two maintainers, so certified's Ray checks run): RAC301 moves
    tensors through it on one node, RAC272 between two processes of one node without Ray, and RAC311 (two nodes)
    finds it declared node-only, not failing."""
    done = cookiecutter(tmp_path / "out", str(TEMPLATE), answers={
        "vendor_name": "ACME Corp", "maintainers": "Ada <ada@example.com>, Bob <bob@example.com>"})
    assert done.returncode == 0, done.stderr[-3000:]
    src = tmp_path / "out" / "rayaccel-acme" / "src"
    plugin = src / "rayaccel_acme" / "plugin.py"
    hooks = "from rayaccel_acme import discovery, health, metrics, probe, sku_fixture, topology\n"
    text = plugin.read_text(encoding="utf-8")
    assert hooks in text
    declared = declared_as_the_example_says(src / "rayaccel_acme" / "transport.py")
    assert 'reach="node"' in declared and "def rayaccel_transports() -> list[TransportSpec]:" in declared
    plugin.write_text(text.replace(hooks, "from rayaccel import TransportSpec\n" + hooks.replace("\n", ", transport\n"))
                      + declared, encoding="utf-8")
    report = tmp_path / "conformance.json"
    env = {**with_path(src), "RAYACCEL_NO_AUTOLOAD": "1", "RAYACCEL_PLUGINS": "acme=rayaccel_acme.plugin"}
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    checked = run([sys.executable, "-m", "pytest", "-q", "--conformance", "--conformance-plugin", "acme",
                   "--conformance-tier", "certified", "--conformance-report", str(report)], cwd=run_dir, env=env,
                  timeout=600)
    assert checked.returncode == 0, checked.stdout[-3000:] + checked.stderr[-2000:]
    data = json.loads(report.read_text())
    assert [(p["name"], p["tier"]) for p in data["plugins"]] == [("acme", "supported")]  # certified: real hardware
    checks = {c["id"]: (c["outcome"], "\n".join(c["evidence"])) for c in data["checks"]}
    assert checks["RAC301"][0] == "passed" and checks["RAC301"][1].startswith("ACME_SHM: transfer 1: "), checks
    assert checks["RAC311"] == ("skipped", "not applicable: declared node-only: ACME_SHM moves tensors within one "
                                "node only; RAC301 runs it on one node"), checks["RAC311"]
    assert checks["RAC272"] == ("passed", "ACME_SHM (reach 'node'): 4 tensors arrive identical between two processes "
                                "of one node; never offered between nodes"), checks["RAC272"]


def test_rayaccel_new_commits_the_bake_so_upgrade_can_merge(baked: dict[str, tuple[Path, Path]]) -> None:
    project, _ = baked["hostile"]
    tracked = run(["git", "-C", str(project), "ls-files"]).stdout.split()
    assert "pyproject.toml" in tracked and ".cruft.json" in tracked
    assert run(["git", "-C", str(project), "rev-list", "--count", "HEAD"]).stdout.strip() == "1"


def test_a_fresh_bake_is_a_project_a_vendor_recognises(baked: dict[str, tuple[Path, Path]]) -> None:
    project, _ = baked["default"]
    assert "Apache License" in (project / "LICENSE").read_text() and "Version 2.0" in (project / "LICENSE").read_text()
    assert (project / ".git").is_dir()  # git init by the post-generation hook
    assert "## [Unreleased]" in (project / "CHANGELOG.md").read_text()
    assert "ruff" in yaml.safe_load((project / ".pre-commit-config.yaml").read_text())["repos"][0]["repo"]
    release = yaml.safe_load((project / ".github" / "workflows" / "release.yml").read_text())
    assert set(release["jobs"]) == {"build", "publish"}
    ci = yaml.safe_load((project / ".github" / "workflows" / "ci.yml").read_text())
    hardware = " ".join(step.get("run", "") for step in ci["jobs"]["hardware"]["steps"])
    assert "--conformance-hardware real" in hardware and "self-hosted" in ci["jobs"]["hardware"]["runs-on"]
    assert (project / "docs" / "index.md").read_text().startswith("# rayaccel-example")
    # Hard-coded sample names are marked where they appear.
    for path in (project / "tests" / "test_rayaccel_example_probe.py", project / ".github" / "workflows" / "ci.yml",
                 project / "README.md"):
        assert "SAMPLE" in path.read_text(), path


@pytest.mark.ray
@pytest.mark.slow
def test_baked_plugins_pass_the_conformance_step_of_their_ci(baked: dict[str, tuple[Path, Path]],
                                                             tmp_path: Path) -> None:
    """The CI step as baked (up to the supported tier on the simulated node) exits 0 on day one, whichever probe
    kind was chosen: the default (sysfs) and the hostile (command-json) bakes, and one of each other kind."""
    project, _ = baked["default"]
    [step] = [s for s in ci_steps(project) if "--conformance" in s]
    assert "--conformance-tier supported" in step
    sites = [site for _, site in baked.values()]
    for kind, family in (("command-csv", "csvcard"), ("python-library", "libcard")):
        done = cookiecutter(tmp_path / kind, str(TEMPLATE),
                            answers={"probe_kind": kind, "vendor_name": "ACME Corp", "family_name": family})
        assert done.returncode == 0, done.stderr[-3000:]
        install(tmp_path / kind / f"rayaccel-{family}", tmp_path / f"site-{kind}")
        sites.append(tmp_path / f"site-{kind}")
    report = tmp_path / "conformance.json"
    plugins = ["example", "qubit-s-q", "csvcard", "libcard"]
    done = run([sys.executable, "-m", "pytest", "-q", "--conformance",
                *(arg for name in plugins for arg in ("--conformance-plugin", name)), "--conformance-tier", "supported",
                "--conformance-report", str(report)], cwd=tmp_path, env=with_path(*sites))
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    tiers = {p["name"]: p["tier"] for p in json.loads(report.read_text())["plugins"]}
    assert tiers == dict.fromkeys(plugins, "supported"), done.stdout[-3000:]


@pytest.mark.parametrize("kind", ["command-csv", "python-library"])
def test_every_probe_kind_bakes_a_working_plugin(kind: str, tmp_path: Path) -> None:
    done = cookiecutter(tmp_path / "out", str(TEMPLATE), answers={"probe_kind": kind, "vendor_name": "ACME Corp"})
    assert done.returncode == 0, done.stderr[-3000:]
    project = tmp_path / "out" / "rayaccel-acme"
    tests = run([sys.executable, "-m", "pytest", "-q", "tests"], cwd=project, env=with_path(project / "src"))
    assert tests.returncode == 0, tests.stdout[-3000:]
    assert own_tests_passed(project) in tests.stdout, tests.stdout
    ruff = run([str(BIN / "ruff"), "check", "."], cwd=project)  # the kind-specific probe.py is valid, clean Python
    assert ruff.returncode == 0, ruff.stdout[-3000:]


#: Each probe kind's own file, and a line only that kind's probe has.
PROBE_VARIANTS = {"sysfs": 'SYSFS = f"/sys/class/{CLASS}"',
                  "command-json": '"devices": Query((TOOL, "list", "--json")),',
                  "command-csv": "DEVICE_COLUMNS = (", "python-library": "ADAPTER = LibraryAdapter(LIBRARY"}


def test_every_probe_kind_is_a_variant_file_of_its_own() -> None:
    kinds = json.loads((TEMPLATE / "cookiecutter.json").read_text())["probe_kind"]
    variants = TEMPLATE / "{{cookiecutter.__project_slug}}" / "variants"
    assert sorted(p.name for p in variants.iterdir()) == sorted(kinds) == sorted(PROBE_VARIANTS)
    for kind in kinds:
        text = (variants / kind / "probe.py").read_text(encoding="utf-8")
        assert "{%" not in text, f"{kind}: a variant is one kind's code, with no template logic"


@pytest.mark.parametrize("kind", sorted(PROBE_VARIANTS))
def test_each_probe_variant_bakes_alone_into_python_that_ruff_finds_clean(kind: str, tmp_path: Path) -> None:
    done = cookiecutter(tmp_path / "out", str(TEMPLATE), answers={"probe_kind": kind, "vendor_name": "ACME Corp"})
    assert done.returncode == 0, done.stderr[-3000:]
    project = tmp_path / "out" / "rayaccel-acme"
    assert not (project / "variants").exists()  # the other kinds are not part of the project
    probe = (project / "src" / "rayaccel_acme" / "probe.py").read_text(encoding="utf-8")
    assert PROBE_VARIANTS[kind] in probe
    assert not [marker for other, marker in PROBE_VARIANTS.items() if other != kind and marker in probe]
    python = sorted(str(p.relative_to(project)) for p in project.rglob("*.py"))
    assert "src/rayaccel_acme/probe.py" in python and "src/rayaccel_acme/readings.py" in python
    ruff = run([str(BIN / "ruff"), "check", "--no-cache", *python], cwd=project)  # the project's own ruff config
    assert ruff.returncode == 0, ruff.stdout[-3000:]


ONE_COMMAND_QUERIES = """QUERIES: dict[str, Query] = {
    "devices": Query((TOOL, "--json")), "health": Query((TOOL, "--json"), ("health",)),
    "stats": Query((TOOL, "--json"), ("stats",)),
}
"""


def test_a_tool_with_one_json_command_changes_only_the_queries_table(tmp_path: Path) -> None:
    # A vendor whose tool prints everything from one command (`acme-smi --json`) edits QUERIES, nothing else.
    done = cookiecutter(tmp_path / "out", str(TEMPLATE), answers={"probe_kind": "command-json",
                                                                   "vendor_name": "ACME Corp"})
    assert done.returncode == 0, done.stderr[-3000:]
    project = tmp_path / "out" / "rayaccel-acme"
    probe_file = project / "src" / "rayaccel_acme" / "probe.py"
    probe = probe_file.read_text(encoding="utf-8")
    table = re.search(r"^QUERIES: dict\[str, Query\] = \{\n.*?^\}\n", probe, re.MULTILINE | re.DOTALL)
    assert table is not None
    probe_file.write_text(probe.replace(table.group(0), ONE_COMMAND_QUERIES), encoding="utf-8")
    # The same machine as the tool with one command answers it: the three answers in one document.
    fixture = yaml.safe_load((project / "src" / "rayaccel_acme" / "fixtures" / "acme-4.yaml").read_text())
    commands = fixture["host"]["commands"]

    def one_document(health: str) -> dict[str, str]:
        doc = {**json.loads(commands["acme-smi list --json"]["stdout"]), "health": json.loads(health),
               "stats": json.loads(commands["acme-smi stats --json"]["stdout"])}
        return {"stdout": json.dumps(doc)}

    fault = fixture["faults"][0]
    fault["patch"]["commands"] = {"acme-smi --json": one_document(fault["patch"]["commands"]["acme-smi health --json"]
                                                                  ["stdout"])}
    fixture["host"]["commands"] = {"acme-smi --json": one_document(commands["acme-smi health --json"]["stdout"])}
    fixture["name"] = "acme-one-command"
    (tmp_path / "acme-one-command.yaml").write_text(yaml.safe_dump(fixture, sort_keys=False), encoding="utf-8")
    env = {**with_path(project / "src"), "RAYACCEL_NO_AUTOLOAD": "1", "RAYACCEL_PLUGINS": "acme=rayaccel_acme.plugin"}
    for faults, unhealthy in (([], []), (["--fault", fault["name"]], ["ACME-5e1f4c2a-0002"])):
        shown = run([sys.executable, "-m", "rayaccel", "inspect", "--simulate", str(tmp_path / "acme-one-command.yaml"),
                     *faults, "--json"], env=env)
        assert shown.returncode == 0, shown.stderr[-3000:]
        inventory = json.loads(shown.stdout)
        assert [p["message"] for p in inventory["problems"]] == []
        assert len(inventory["devices"]) == 4 and len(inventory["topology"]["links"]) == 6
        assert sorted(h["device"] for h in inventory["health"] if h["state"] == "unhealthy") == unhealthy
        assert len({m["device"] for m in inventory["metrics"]}) == 4  # the stats part of the one answer


@pytest.mark.parametrize(("answer", "message"), [
    ("resource_name=GPU", "resource name 'GPU' collides with 'GPU'"),
    ("visible_devices_env_var=CUDA_VISIBLE_DEVICES", "env var CUDA_VISIBLE_DEVICES is already used"),
    ("vendor_name=1abc", "gives plugin id '1abc', which is not a valid identifier"),
    ("label_prefix=ray.io", "is Ray's reserved ray.io/ prefix"),
    ("family_name=nvidia", "plugin id 'nvidia' is taken"),
    ("vendor_name=two\nlines", "vendor_name contains the control character U+000A"),
    ("visible_devices_env_var=PATH", "well-known process, runtime or other vendor's variable"),
    ("visible_devices_env_var=LD_PRELOAD", "well-known process, runtime or other vendor's variable"),
    ("visible_devices_env_var=RAY_ADDRESS", "well-known process, runtime or other vendor's variable"),
    ("visible_devices_env_var=OMP_NUM_THREADS", "well-known process, runtime or other vendor's variable"),
    ("visible_devices_env_var=ROCR_VISIBLE_DEVICES", "well-known process, runtime or other vendor's variable"),
    ("vendor_name=ACME/Labs", "vendor_name contains the path separator '/'"),
    ("support_contact=call us", "is not a URL (https://...) or an e-mail address"),
    ("probe_kind=ioctl", "probe_kind='ioctl' is not one of the choices"),
    ("resource=ACME", "the template asks no question 'resource'"),
    ("kubernetes_resource=kubernetes.io/accel", "is not an extended resource name"),
    ("dra_driver=Accel", "DRA driver name 'Accel' is not a DNS name"),
    ("slurm_gres=acme:x", "Slurm GRES name 'acme:x' is not valid"),
])
def test_invalid_answers_fail_with_one_line_and_leave_no_folder(answer: str, message: str, tmp_path: Path,
                                                                capfd: pytest.CaptureFixture[str],
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    from rayaccel.cli import main

    monkeypatch.setenv("HOME", str(tmp_path / "home"))

    out = tmp_path / "out"
    assert main(["new", "--no-input", "-o", str(out), answer]) == 2
    err = capfd.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1, err
    assert not out.exists() or list(out.iterdir()) == []


def test_plain_cookiecutter_refuses_with_the_hooks_message_and_no_folder(tmp_path: Path) -> None:
    done = cookiecutter(tmp_path / "out", str(TEMPLATE), answers={"vendor_name": "1abc"})
    assert done.returncode != 0
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "not a valid identifier" in errors[0], done.stderr
    assert list((tmp_path / "out").iterdir()) == []


def test_every_ray_family_is_refused() -> None:
    """The hook's own table covers Ray's (it must work where rayaccel is not installed)."""
    text = (TEMPLATE / "rayaccel_vendor_template.py").read_text(encoding="utf-8")
    for resource, env_var in RAY_BUILTIN_FAMILIES.values():
        if env_var:
            assert f'("{resource}", "{env_var}")' in text, (resource, env_var)


def test_the_hooks_copies_of_the_sdks_tables_are_equal_to_them() -> None:
    """The template's hook runs where rayaccel may not be installed, so it keeps copies; they must not drift."""
    import importlib.util

    from rayaccel import records
    from rayaccel.plugins.manager import PluginManager
    from rayaccel.support import raycompat

    spec = importlib.util.spec_from_file_location("template_hook_tables", TEMPLATE / "rayaccel_vendor_template.py")
    assert spec is not None and spec.loader is not None
    hook = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hook)
    assert set(hook.DENIED_ENV_VARS) == set(records.DENIED_ENV_VARS)
    assert tuple(hook.DENIED_ENV_PREFIXES) == tuple(records.DENIED_ENV_PREFIXES)
    assert set(hook.RAY_FAMILIES.values()) == set(raycompat.RAY_BUILTIN_FAMILIES.values()) - {
        (res, var) for res, var in raycompat.RAY_BUILTIN_FAMILIES.values() if var is None}
    assert set(hook.RAY_RESERVED) == set(raycompat.RAY_RESERVED_RESOURCES)
    assert tuple(hook.RAY_RESERVED_PREFIXES) == tuple(raycompat.RAY_RESERVED_RESOURCE_PREFIXES)
    manager = PluginManager()
    shipped = {name: (manager.family(name).resource_name, manager.family(name).visible_devices_env_var)
               for name in hook.REFERENCE_PLUGINS if name in manager.plugin_names()}
    assert shipped == {name: hook.REFERENCE_PLUGINS[name] for name in shipped} and len(shipped) == 5


def test_cookiecutter_from_a_clone_url_with_directory(tmp_path: Path) -> None:
    origin = tmp_path / "rayaccel.git"
    cloned = run(["git", "clone", "-q", str(REPO), str(origin)])
    assert cloned.returncode == 0, cloned.stderr
    # As a vendor runs it: cookiecutter clones the repository itself (into $HOME/.cookiecutters).
    env_home = {"HOME": str(tmp_path / "home")}
    out = tmp_path / "out"
    out.mkdir()
    done = run([sys.executable, "-m", "cookiecutter", "--no-input", f"file://{origin}", "--directory",
                "templates/vendor-plugin", "-o", str(out), "vendor_name=ACME Corp"], env=env_home)
    assert done.returncode == 0, done.stderr[-3000:]
    record = json.loads((out / "rayaccel-acme" / ".cruft.json").read_text())
    head = run(["git", "-C", str(origin), "rev-parse", "HEAD"]).stdout.strip()
    assert (record["template"], record["directory"], record["commit"]) == (f"file://{origin}",
                                                                            "templates/vendor-plugin", head)


@pytest.mark.ray
@pytest.mark.slow
def test_rayaccel_start_on_the_baked_fixture_gives_a_node_with_its_resource(
        baked: dict[str, tuple[Path, Path]]) -> None:
    from ray.util import get_node_ip_address

    _, site = baked["default"]
    env = with_path(site)
    port, client, agent, agent_grpc, metrics, runtime_env, objects = free_ports(7)
    address = f"{get_node_ip_address()}:{port}"
    started = run([sys.executable, "-m", "rayaccel", "start", "--head", "--simulate", "example/example-4",
                   f"--port={port}", f"--ray-client-server-port={client}", f"--dashboard-agent-listen-port={agent}",
                   f"--dashboard-agent-grpc-port={agent_grpc}", f"--metrics-export-port={metrics}",
                   f"--runtime-env-agent-port={runtime_env}", f"--object-manager-port={objects}", "--num-cpus=1",
                   "--include-dashboard=false", "--include-log-monitor=false"], env=env)  # no driver takes logs
    try:
        assert started.returncode == 0, started.stderr[-3000:]
        assert "EXAMPLE=4" in started.stdout
        # The plugin takes whole devices: start says which drivers enforce that.
        assert "EXAMPLE requests must be whole numbers" in started.stdout and "plain ray.init()" in started.stdout
        from test_ray_activation import status_shows

        from rayaccel.support.polling import wait_for

        # `ray status` shows what Ray's autoscaler monitor last wrote: poll it, never the first answer; looked at in
        # this process first (Ray's own status command, no Python and Ray start per look), then run once it shows.
        status_shows(address, "0.0/4.0 EXAMPLE", timeout=90)
        wait_for(lambda: run([str(BIN / "ray"), "status", f"--address={address}"], env=env),
                 lambda status: status.returncode == 0 and "0.0/4.0 EXAMPLE" in status.stdout, timeout=90,
                 interval=1, what=f"`ray status --address={address}` to show 0.0/4.0 EXAMPLE")
    finally:
        stopped = run([sys.executable, "-m", "rayaccel", "stop", f"--address={address}", "--grace", "3"], env=env)
    assert stopped.returncode == 0, stopped.stderr


def test_every_question_has_help_and_is_documented() -> None:
    context = json.loads((TEMPLATE / "cookiecutter.json").read_text(encoding="utf-8"))
    questions = [k for k in context if not k.startswith("_")]
    docs = (REPO / "docs" / "onboarding.md").read_text(encoding="utf-8")
    for question in questions:
        assert question in context["__prompts__"], question
        assert f"| `{question}` |" in docs, question


def test_the_baked_health_policy_example_names_the_plugins_own_reason_codes(
        baked: dict[str, tuple[Path, Path]]) -> None:
    """The example policy loads, names only codes the plugin declares (no warning), and acts: the SAMPLE
    fault's fatal reason still drains; the docs' reason-code table lists every declared code."""
    project, site = baked["default"]
    done = run([sys.executable, "-m", "rayaccel", "inspect", "--simulate", "example/example-4", "--fault", "fatal-2",
                "--health-policy", str(project / "health-policy.example.yaml"), "--json"],
               env={**with_path(site), "RAYACCEL_HEALTH_POLICY": ""})
    assert done.returncode == 0, done.stderr[-3000:]
    assert "warning: health policy" not in done.stderr, done.stderr
    data = json.loads(done.stdout)
    assert data["health_policy"]["file"] == str(project / "health-policy.example.yaml")
    assert [(d["code"], d["rule"], d["action"]) for d in data["health_policy"]["decisions"]] == [
        ("fatal-error", "plugin", "drain")]
    code = ("import json; from rayaccel_example import plugin; "
            "print(json.dumps([r.code for r in plugin.rayaccel_family().health_reasons]))")
    declared = run([sys.executable, "-c", code], env=with_path(site))
    assert declared.returncode == 0, declared.stderr
    docs = (project / "docs" / "index.md").read_text(encoding="utf-8")
    assert all(f"| `{reason}` |" in docs for reason in json.loads(declared.stdout))
