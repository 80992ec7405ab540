"""The pytest plugin: ``pytest --conformance`` grades accelerator plugins into tiers.

As ``_pytest/stepwise.py`` does, ``pytest_addoption`` adds the options and ``pytest_configure`` registers the
:class:`ConformanceRun` only when ``--conformance`` is given; without it this module changes nothing. A
conformance run collects only the conformance checks (one item per check x plugin, and x fixture where the
check is per fixture), so it works in any directory, including one without tests.
"""

from __future__ import annotations

import datetime as dt
import os
import platform
from pathlib import Path
from typing import Any

import pytest

from rayaccel_conformance.registry import TIERS

CHOICES_HARDWARE = ("simulated", "real")
CHOICES_TIER = TIERS
SIGN_KEY = pytest.StashKey[Any]()
#: What a simulated hung tool blocks for real in a conformance run (the rest of its timeout is charged).
HANG_SLEEP_S = 0.01


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("rayaccel-conformance", "rayaccel conformance suite")
    group.addoption("--conformance", action="store_true", default=False,
                    help="run the rayaccel conformance checks (instead of the tests found) and write a report")
    group.addoption("--conformance-plugin", action="append", default=[], metavar="NAME",
                    help="plugin to grade (repeatable; default: every installed plugin)")
    group.addoption("--conformance-fixture", action="append", default=[], metavar="FIXTURE",
                    help="fixture (plugin/name or name) to run on (repeatable; default: every fixture shipped)")
    group.addoption("--conformance-hardware", choices=CHOICES_HARDWARE, default="simulated",
                    help="simulated: the plugin's fixtures only; real: also this machine (default: simulated)")
    group.addoption("--conformance-tier", choices=CHOICES_TIER, default=None,
                    help="stop at this tier (default: run every tier)")
    group.addoption("--conformance-report", default="conformance-report.json", metavar="PATH",
                    help="JSON report path; HTML and JUnit XML are written beside it (default: %(default)s)")
    group.addoption("--conformance-sign-key", default=None, metavar="KEY",
                    help="sign the report with this ed25519 private key (`rayaccel certify keygen`): it becomes an "
                         "in-toto attestation that `rayaccel certify verify --key KEY.pub` checks")
    group.addoption("--conformance-wheel", action="append", default=[], metavar="WHEEL",
                    help="the wheel a graded plugin was installed from: the attestation's subject is then the "
                         "wheel (its files must be the installed ones); repeatable")
    group.addoption("--conformance-baseline", default=None, metavar="REPORT",
                    help="a previous conformance report: a performance figure worse than its value by more than "
                         "the tolerance fails RAC310, naming the figure")
    group.addoption("--conformance-tolerance", default=None, type=float, metavar="PERCENT",
                    help="how much worse than the baseline a figure may be (default: 50)")
    group.addoption("--conformance-release-timeout", default=None, type=float, metavar="SECONDS",
                    help="how long RAC301 and RAC311 wait for what a failed or killed transfer held to be freed; "
                         "shorter only, so a run is never more lenient (default and most: 30; RAC273, without Ray, "
                         "waits at most 10)")


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    if not config.getoption("conformance"):
        return
    from rayaccel.support.extras import MissingExtra, require

    try:  # reports are signed with cryptography, which only the conformance extra brings
        require("conformance", "pytest --conformance")
    except MissingExtra as e:
        raise pytest.UsageError(str(e)) from None
    config.addinivalue_line("markers", "conformance: a rayaccel conformance check")
    from rayaccel.support.bounded import reuse_threads

    # Every hook call runs bounded in a thread of its own (6853 calls a nvidia run): kept between calls, as a plugin
    # worker keeps them, a thread is not started per call (the guard tells a kept idle thread from a leaked one).
    reuse_threads()
    _keep_hypothesis_constants()
    from rayaccel.hosts.simulated import sleep_hangs_for

    # A hung tool's cost is graded as real plus charged time (RAC203, RAC204, the guard's budget), so the few hundred
    # hung calls of a run need not each sleep SIMULATED_HANG_SECONDS for real: they still block, briefly.
    sleep_hangs_for(HANG_SLEEP_S)
    report = _report_path(config.getoption("conformance_report"))
    sign_key = config.getoption("conformance_sign_key")
    if sign_key:  # a bad key is found now, not after the run
        from rayaccel_conformance.report.signing import SigningError, load_private_key

        try:
            config.stash[SIGN_KEY] = load_private_key(sign_key)
        except SigningError as e:
            raise pytest.UsageError(f"--conformance-sign-key: {e}") from None
    _hold_to_baseline(config)
    _wait_for_release(config.getoption("conformance_release_timeout"))
    # JUnit XML through pytest's own junitxml plugin, whose pytest_configure runs after this one.
    if not getattr(config.option, "xmlpath", None):
        config.option.xmlpath = str(report.with_suffix(".xml"))
    config.pluginmanager.register(ConformanceRun(config, report), "rayaccel-conformance-run")


def _keep_hypothesis_constants() -> None:
    """Have Hypothesis keep what it reads from the run's own modules where the next run finds it.

    Hypothesis draws the literals of the code under test among its examples, and reads them from the source of
    every local module loaded (~160 in a nvidia run, ~0.3 s of CPU), remembered per module's source digest in its
    storage directory, by default ``.hypothesis`` in the working directory: a run in a fresh directory (the suite's
    tests, ``make bench``) read them all afresh. Kept in the user's cache folder (``$XDG_CACHE_HOME/rayaccel``, a
    folder per Hypothesis version: its digest names only the source), when that is a directory of this user's that
    no one else may write, and the user has not chosen a place (``HYPOTHESIS_STORAGE_DIRECTORY``). The checks keep
    no example database, so only what is read from the source, the same literals, is kept there."""
    import stat

    import hypothesis
    from hypothesis.configuration import set_hypothesis_home_dir

    from rayaccel.files.checked import cache_dir

    if os.environ.get("HYPOTHESIS_STORAGE_DIRECTORY"):
        return
    folder = cache_dir().parent / f"hypothesis-{hypothesis.__version__}"
    try:
        os.makedirs(folder, mode=0o700, exist_ok=True)
        info = os.lstat(folder)
    except OSError:
        return
    if stat.S_ISDIR(info.st_mode) and info.st_uid == os.geteuid() and not info.st_mode & 0o022:
        set_hypothesis_home_dir(folder)


def _wait_for_release(seconds: float | None) -> None:
    """Set how long RAC301 and RAC311 wait for a receiver or the machine to let go of a failed transfer's buffers.

    A transport that never frees them fails after the whole wait; one that frees them passes as soon as they go,
    so a shorter wait only fails more (what frees them slower than it): it may be shortened, never lengthened."""
    from rayaccel_conformance.checks import recovery, transport_contract

    default = transport_contract.DEFAULT_RELEASE_TIMEOUT_S
    if seconds is None:
        seconds = default
    elif not 0 < seconds <= default:
        raise pytest.UsageError(f"--conformance-release-timeout {seconds:g}: give seconds above 0 and at most "
                                f"{default:g} (a shorter wait only fails more)")
    transport_contract.RELEASE_TIMEOUT_S = recovery.RELEASE_TIMEOUT_S = seconds


def _hold_to_baseline(config: pytest.Config) -> None:
    """Load --conformance-baseline before the run: a report that does not verify is a usage error, not a check."""
    from rayaccel_conformance.harness import figures

    tolerance = config.getoption("conformance_tolerance")
    if tolerance is not None and not 0 <= tolerance <= 1000:
        raise pytest.UsageError(f"--conformance-tolerance {tolerance}: give a percentage between 0 and 1000")
    figures.BASELINE = figures.Baseline(tolerance=figures.DEFAULT_TOLERANCE if tolerance is None else tolerance / 100)
    figures.MEASURED.clear()
    path = config.getoption("conformance_baseline")
    if not path:
        return
    from rayaccel_conformance.report.document import ReportError, load_report

    try:
        previous = load_report(path, check_tiers=False)  # read for its figures: tiers are the suite's of then
    except ReportError as e:
        raise pytest.UsageError(f"--conformance-baseline: {e}") from None
    if not previous.figures:
        raise pytest.UsageError(f"--conformance-baseline {path}: the report records no performance figures (made "
                                "before RAC310, or RAC310 did not run): give a report that does")
    figures.BASELINE = figures.Baseline(figures.baseline_from_report(previous.figures), figures.BASELINE.tolerance,
                                        str(path))


def _report_path(raw: str) -> Path:
    """The report's path, checked before the run: a directory, '' or a missing parent is a usage error
    (found after the whole run, it would be a traceback, and '' would put the XML report outside the cwd)."""
    if not raw.strip():
        raise pytest.UsageError("--conformance-report: give a file path, e.g. --conformance-report=report.json")
    report = Path(raw).absolute()
    try:
        if raw.endswith(("/", os.sep)) or report.is_dir():
            raise pytest.UsageError(f"--conformance-report {raw}: is a directory; give a file path, e.g. "
                                    f"{report / 'conformance-report.json'}")
        if not report.parent.is_dir():
            raise pytest.UsageError(f"--conformance-report {raw}: directory {report.parent} does not exist; "
                                    "create it or choose another path")
    except OSError as e:
        raise pytest.UsageError(f"--conformance-report: {e.strerror or e}; choose another path") from None
    return report


class ConformanceItem(pytest.Item):
    """One check, for one plugin (and one fixture)."""

    def __init__(self, *, run: ConformanceRun, check: Any, subject: Any, fixture: str | None,
                 last_ray: bool = False, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.run, self.check, self.subject, self.fixture, self.last_ray = run, check, subject, fixture, last_ray
        self.add_marker(pytest.mark.conformance)
        self.user_properties.append(("check", check.id))
        self.user_properties.append(("tier", check.tier))

    def runtest(self) -> None:
        self.run.run_item(self)

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException],
                     style: Any = None) -> str:
        from rayaccel_conformance.registry import CheckFailed

        check = self.check
        where = f"{self.subject.name}" + (f" on {self.fixture}" if self.fixture else "")
        head = f"{check.id} [{check.tier}] {check.title} -- {where}"
        if isinstance(excinfo.value, CheckFailed):
            found = "\n".join(f"  - {line}" for line in excinfo.value.evidence)
            if check.id != "RAC109" and any(line.startswith("side effect:") for line in excinfo.value.evidence):
                found += ("\n  (a hook's side effect, first seen while this check ran: see RAC109, "
                          "docs/conformance.md#rac109)")
        else:
            found = f"  - the check itself raised {excinfo.typename}: {excinfo.value}"
        return f"{head}\nfound:\n{found}\n\n{check.help}\n\nsee {check.docs_url}"

    def reportinfo(self) -> tuple[Any, int | None, str]:
        return self.path, None, f"{self.check.id} {self.subject.name} {self.fixture or ''}".strip()


class ConformanceSuite(pytest.Collector):
    """Parent of the generated items (the suite has no files to collect from)."""

    def collect(self) -> list[pytest.Item]:
        return []


class ConformanceRun:
    """Registered only with --conformance: builds the items, runs them, writes the reports."""

    def __init__(self, config: pytest.Config, report_path: Path) -> None:
        self.config = config
        self.report_path = report_path
        self.hardware: str = config.getoption("conformance_hardware")
        self.tier_limit: str | None = config.getoption("conformance_tier")
        self.subjects: list[Any] = []
        self.versions: dict[str, str] = {}
        self.written: list[Path] = []
        self.sign_key: Any = config.stash.get(SIGN_KEY, None)
        self.wheels = [Path(w) for w in config.getoption("conformance_wheel")]
        self.builds: list[dict[str, Any]] = []  # the graded builds, identified before any check runs
        self.planned = 0
        self.incomplete_reason: str | None = "the session ended before the report was built"
        self.sign_problem: str | None = None
        self.picture_problems: list[str] = []  # fixtures whose node picture could not be drawn, and why

    # Collection ------------------------------------------------------------------------------

    def pytest_ignore_collect(self, collection_path: Path, config: pytest.Config) -> bool:
        return True  # a conformance run grades plugins; the tests of the directory are not part of it

    @pytest.hookimpl(tryfirst=True)
    def pytest_collection_modifyitems(self, session: pytest.Session, config: pytest.Config,
                                      items: list[pytest.Item]) -> None:
        items[:] = self.make_items(session)

    def make_items(self, session: pytest.Session) -> list[pytest.Item]:
        from rayaccel.hosts.fixtures import installed_fixtures
        from rayaccel.plugins.manager import PluginManager
        from rayaccel_conformance.checks import all_checks
        from rayaccel_conformance.harness.subject import Subject
        from rayaccel_conformance.registry import tier_index

        manager = PluginManager()
        requested: list[str] = self.config.getoption("conformance_plugin")
        names = requested or sorted(set(manager.plugin_names()) | {
            p.plugin for p in manager.problems if p.severity != "info" and p.code != "disabled"})
        fixtures: list[str] = self.config.getoption("conformance_fixture")
        limit = tier_index(self.tier_limit) if self.tier_limit else len(CHOICES_TIER) - 1
        checks = [c for c in all_checks() if tier_index(c.tier) <= limit]
        # Per plugin: the cheaper checks of experimental and supported, their Ray checks, then certified's. A Ray
        # check runs once every cheaper check of its tier and below has spoken (it is skipped when one failed;
        # a higher tier's never changes that), and meanwhile the plugin's nodes start (prestart). The plugin's
        # nodes go after its last Ray check.
        certified = tier_index("certified")
        ordered = sorted(checks, key=lambda c: (tier_index(c.tier) >= certified, c.uses_ray, tier_index(c.tier), c.id))
        suite = ConformanceSuite.from_parent(session, name="conformance", nodeid="conformance")
        items: list[pytest.Item] = []
        for name in dict.fromkeys(names):
            subject = Subject(name, manager, self.hardware,  # type: ignore[arg-type]
                              [f for f in fixtures if "/" not in f or f.startswith(f"{name}/")])
            self.subjects.append(subject)
            refs: list[str | None] = list(subject.fixture_paths()) or [None]
            mine: list[ConformanceItem] = []
            for check in ordered:
                for ref in refs if check.scope == "fixture" else [None]:
                    label = f"{name}" + (f"/{ref.split('/', 1)[1]}" if ref else "")
                    mine.append(ConformanceItem.from_parent(suite, name=f"{check.id}[{label}]", run=self,
                                                            check=check, subject=subject, fixture=ref))
            ray_items = [i for i in mine if i.check.uses_ray]
            if ray_items:
                ray_items[-1].last_ray = True
            items.extend(mine)
        known = {ref for subject in self.subjects for ref in subject.fixture_paths()}
        unknown = [f for f in fixtures if f not in known and not any(ref.endswith(f"/{f}") for ref in known)]
        if unknown:
            graded, self.subjects = self.subjects, []  # a usage error writes no report
            shipped = sorted({ref for s in graded for ref in installed_fixtures(manager)
                              if ref.startswith(f"{s.name}/")} if graded else set())
            raise pytest.UsageError(f"--conformance-fixture {', '.join(unknown)}: no such fixture of the plugins "
                                    f"graded; they ship: {', '.join(shipped) or 'none'}")
        self.planned = len(items)
        if self.sign_key is not None or self.wheels:
            self.identify_builds()
        return items

    def identify_builds(self) -> None:
        """What is about to be graded, hashed before any check runs (the subjects of the attestation)."""
        from rayaccel_conformance.report.attestation import graded_build
        from rayaccel_conformance.report.builds import BuildError, wheel_distribution

        try:
            for subject in self.subjects:
                build = graded_build(subject, self.wheels)
                if build is not None:
                    self.builds.append(build)
        except BuildError as e:
            self.subjects = []  # a usage error writes no report
            raise pytest.UsageError(str(e)) from None
        used = {wheel_distribution(Path(b["name"])) for b in self.builds if b["kind"] == "wheel"}
        unused = [str(w) for w in self.wheels if wheel_distribution(w) not in used]
        if unused:
            self.subjects = []
            raise pytest.UsageError(f"--conformance-wheel {', '.join(unused)}: no graded plugin is installed from a "
                                    "distribution of that name")

    # Running ---------------------------------------------------------------------------------

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtestloop(self, session: pytest.Session) -> None:
        """Before the first check: the Ray nodes of the first plugin with a Ray check start in the cluster's own
        process (seconds each), while the cheaper checks run here. Nothing to wait for unless a Ray check runs."""
        if session.config.option.collectonly or session.testsfailed:
            return
        from rayaccel_conformance.harness.raycluster import shared_cluster

        first = next((i for i in session.items if isinstance(i, ConformanceItem) and i.check.uses_ray), None)
        if first is not None:
            shared_cluster().prestart(first.subject)

    def run_item(self, item: ConformanceItem) -> None:
        from rayaccel_conformance.harness import raycluster
        from rayaccel_conformance.registry import CheckFailed

        if raycluster._shared is not None:
            raycluster._shared.connect_if_ready()  # the driver joins the prestarted cluster once its head is up
        try:
            result = item.subject.run(item.check, item.fixture)
        finally:
            if item.last_ray:
                self._release(item.subject)
        if result.outcome == "failed":
            raise CheckFailed(result.evidence)
        if result.outcome == "skipped":
            pytest.skip(result.evidence[0] if result.evidence else "skipped")
        if result.outcome == "error" and result.exception is not None:
            raise result.exception

    def _release(self, subject: Any) -> None:
        from rayaccel_conformance.harness import raycluster

        if raycluster._shared is not None:
            raycluster._shared.release(subject)

    # Reporting -------------------------------------------------------------------------------

    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        from rayaccel_conformance.harness.raycluster import shutdown_shared_cluster

        self.incomplete_reason = self.why_incomplete(session, exitstatus)
        try:
            shutdown_shared_cluster()
        finally:
            if self.subjects:
                self.write_reports()

    def why_incomplete(self, session: pytest.Session, exitstatus: int) -> str | None:
        """None when every collected check ran and the session ended normally; else why not, in words."""
        if exitstatus == pytest.ExitCode.INTERRUPTED:
            return "interrupted (KeyboardInterrupt)"
        if exitstatus not in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED):
            return f"the session failed ({pytest.ExitCode(exitstatus).name.lower().replace('_', ' ')})"
        stopped = session.shouldfail or session.shouldstop
        if stopped:
            return f"stopped early ({stopped})"
        ran = sum(len(s.outcomes) for s in self.subjects)
        if ran < self.planned:
            return f"{self.planned - ran} of {self.planned} checks did not run (deselected, or the run stopped early)"
        return None

    def build_report(self) -> Any:
        import sys

        import rayaccel
        from rayaccel.hookspec import SPEC_VERSION
        from rayaccel_conformance.checks import all_checks
        from rayaccel_conformance.harness.figures import MEASURED
        from rayaccel_conformance.registry import CHECKS
        from rayaccel_conformance.report import environment
        from rayaccel_conformance.report.document import REPORT_SCHEMA_ID, seal
        from rayaccel_conformance.report.tiers import Result, reached_tier

        try:
            import ray

            ray_version = ray.__version__
        except ImportError:
            ray_version = "not installed"
        required: dict[str, set[str]] = {}
        for c in all_checks():
            required.setdefault(c.tier, set()).add(c.id)
        plugins, checks = [], []
        for subject in self.subjects:
            results = [Result(o.check_id, CHECKS[o.check_id].tier, o.outcome, o.fixture, o.evidence)
                       for o in subject.outcomes]
            tier, reason = reached_tier(results, required, self.tier_limit)
            family = subject.manager.family(subject.name) if subject.loaded else None
            plugins.append({
                "name": subject.name, "distribution": subject.distribution, "version": subject.version,
                "family": family.name if family else None, "resource_name": family.resource_name if family else None,
                "fixtures": list(subject.fixture_paths()), "tier": tier, "tier_reason": reason,
                "passed": sum(r.outcome == "passed" for r in results),
                "failed": sum(r.outcome in ("failed", "error") for r in results),
                "skipped": sum(r.outcome == "skipped" for r in results),
            })
            for o in subject.outcomes:
                c = CHECKS[o.check_id]
                checks.append({"id": c.id, "tier": c.tier, "title": c.title, "plugin": subject.name,
                               "fixture": o.fixture, "outcome": o.outcome, "evidence": o.evidence,
                               "duration_s": round(o.duration_s, 4), "docs": c.docs_url})
        content = {
            "schema": REPORT_SCHEMA_ID, "complete": self.incomplete_reason is None,
            "incomplete_reason": self.incomplete_reason,
            "created": dt.datetime.now(dt.UTC).replace(microsecond=0).isoformat(),
            "versions": {"sdk": rayaccel.__version__, "spec": SPEC_VERSION, "ray": ray_version,
                         "python": platform.python_version(), "platform": f"{sys.platform} {platform.machine()}"},
            "hardware": self.hardware, "tier_limit": self.tier_limit, "plugins": plugins, "checks": checks,
            "environment": environment.collect(self.subjects, self.hardware),
            "figures": [f for subject in self.subjects for f in MEASURED.get(subject.name, [])],
        }
        return seal(content)

    def write_reports(self) -> None:
        from rayaccel.files.atomic import write_atomically
        from rayaccel_conformance.report.document import REPORT_FILE_MODE, write_json
        from rayaccel_conformance.report.html_view import render_html

        report = self.build_report()
        if self.sign_key is not None:
            report = self.sign(report)
        write_json(report, self.report_path)
        pictures = self.write_node_pictures()
        html_path = self.report_path.with_suffix(".html")
        write_atomically(html_path, render_html(report, {ref: path.relative_to(html_path.parent).as_posix()
                                                         for ref, path in pictures.items()}), REPORT_FILE_MODE)
        self.report = report
        self.written = [self.report_path, html_path, *pictures.values()]

    def write_node_pictures(self) -> dict[str, Path]:
        """Each fixture's node picture beside the report (``<report>.nodes/<plugin>-<fixture>.html``), from the
        inventory the checks built; a fixture whose inventory cannot be built gets none (its checks say why)."""
        from rayaccel.files.atomic import write_atomically
        from rayaccel.outputs.node_picture import node_html
        from rayaccel_conformance.registry import CheckFailed
        from rayaccel_conformance.report.document import REPORT_FILE_MODE

        folder = self.report_path.with_suffix(".nodes")
        written: dict[str, Path] = {}
        for subject in self.subjects:
            for ref in subject.fixture_paths():
                try:
                    inventory = subject.inventory(ref)
                    picture = node_html(inventory)
                except CheckFailed:
                    continue
                except Exception as e:  # a record no check refused must not cost the whole report
                    self.picture_problems.append(f"{ref}: no node picture ({type(e).__name__}: {e})")
                    continue
                folder.mkdir(parents=True, exist_ok=True)
                path = folder / (ref.replace("/", "-") + ".html")
                write_atomically(path, picture, REPORT_FILE_MODE)
                written[ref] = path
        return written

    def sign(self, report: Any) -> Any:
        from rayaccel_conformance.report.attestation import device_fingerprint, sign_report
        from rayaccel_conformance.report.signing import SigningError

        devices = device_fingerprint(self.subjects) if self.hardware == "real" else None
        try:
            return sign_report(report, self.sign_key, self.builds, devices)
        except SigningError as e:
            self.sign_problem = f"not signed: {e}"
            return report

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        report = getattr(self, "report", None)
        if report is None:
            return
        tr = terminalreporter
        tr.section("rayaccel conformance")
        width = max([len(p.name) for p in report.plugins] + [6])
        for p in report.plugins:
            tr.write_line(f"{p.name:<{width}}  {(p.tier or 'none'):<12}  {p.tier_reason}")
        tr.write_line(f"hardware: {report.hardware}; report: {self.report_path} (+ .html, .xml)")
        for problem in self.picture_problems:
            tr.write_line(problem, red=True)
        from rayaccel_conformance.report.document import standing

        tr.write_line(self.sign_problem or standing(report), red=not report.complete or bool(self.sign_problem))
