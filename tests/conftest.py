"""Shared test set-up: the in-test plugins are importable by subprocesses (CLI, Ray workers) too."""

from __future__ import annotations

import atexit
import os
import shutil
import signal
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

TESTS_DIR = Path(__file__).parent

# Subprocesses (the rayaccel CLI, Ray workers) find the test plugins through PYTHONPATH.
os.environ["PYTHONPATH"] = os.pathsep.join(
    [str(TESTS_DIR), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))])

# Ray 2.60 turns token authentication on for `ray start` when ~/.ray/auth_token exists (any earlier
# ray.init may have written it), and the README's journey exports RAY_AUTH_MODE=token. Tests start their
# own clusters, so run them without auth on every machine and in every shell; the tests of the auth
# decision itself (test_ray_auth.py, test_ray_cli_node.py, test_readme.py) set their own HOME and mode.
os.environ["RAY_AUTH_MODE"] = "disabled"
# A suite started in the background by a non-interactive shell (`make test &`) inherits SIGINT ignored, and so
# would every command the tests start: the CLI rightly keeps an ignored SIGINT ignored, so the Ctrl-C tests
# could not interrupt it. Commands started by the suite get SIGINT as at a terminal.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

#: Where each pytest process of the suite keeps the test plugin acme_wired's ACME_FILE transfers.
ACME_FILE_DIRS = Path.home() / ".cache" / "rayaccel-tests"


def _own_acme_file_dir() -> None:
    """ACME_FILE keeps its transfers in a directory every node of a cluster shares (``ACME_FILE_DIR``; not /tmp,
    which the "other node" of RAC272/RAC273 has its own of), by default one per user. Concurrent runs must not
    share it: the corpus plugin ``c-gc-sweeps-every-file`` unlinks every file of its sender's pid, pid 1 in that
    other node's namespace, so it removed another xdist worker's pid-1 sender's file mid-transfer (release 1.1's
    RAC273 "the file is gone", CI32). Each pytest process (xdist's controller and every worker, which inherit the
    controller's) gets its own, removed when it exits; a directory the user names is left as named."""
    named = os.environ.get("ACME_FILE_DIR")
    if named and not named.startswith(str(ACME_FILE_DIRS) + os.sep):
        return
    own = ACME_FILE_DIRS / f"acme-file-{os.getpid()}"
    os.environ["ACME_FILE_DIR"] = str(own)
    atexit.register(shutil.rmtree, own, ignore_errors=True)


_own_acme_file_dir()


def _reset_default_manager() -> None:
    manager = sys.modules.get("rayaccel.plugins.manager")  # not imported yet: nothing to forget
    if manager is not None:
        manager.reset_default_manager()


@pytest.fixture(autouse=True)
def _fresh_default_manager() -> Iterator[None]:
    """The CLI's commands share one plugin manager per process (rayaccel.plugins.manager.default_manager); a test
    is a process of its own here: it gets the plugins its own set-up names (env, monkeypatched loaders)."""
    _reset_default_manager()
    yield
    _reset_default_manager()


@pytest.fixture(autouse=True, scope="module")
def _no_ray_driver_left_behind(request: pytest.FixtureRequest) -> Iterator[None]:
    """A test module that leaves Ray initialized in this pytest process breaks whichever module the same xdist
    worker runs next ("Maybe you called ray.init twice by accident?" at its set-up), and the left driver's threads
    outlive its shutdown into later tests (a worker died of SIGSEGV after one). The module that left it fails,
    named, at its last test's tear-down, and Ray is shut down here so the next module starts clean. Ray is never
    imported here for a module that did not import it."""
    yield
    ray = sys.modules.get("ray")
    if ray is None or not ray.is_initialized():
        return
    driver = sys.modules.get("rayaccel.ray.driver")
    if driver is not None:
        driver.shutdown()  # forgets the nodes and fault files this process started, as the module should have
    else:
        ray.shutdown()
    pytest.fail(f"{request.module.__name__} left Ray initialized in the pytest process: stop what a test or module "
                "fixture starts (rayaccel.ray.shutdown() or ray.shutdown() in its finally), or keep a call that "
                "connects to Ray on its own (ray.init on first use) out of the test process", pytrace=False)


#: The files that take longest, longest first (their tests' seconds in a parallel run as `make test` runs it: the
#: fresh-clone `.ci/run` of 2026-12-07 (16:12; parallel pass 859 s), its "where the parallel run's time went": the
#: template's bakes 175 s, the recovery run 157, the reference plugins' run 156, the corpus 143, the activation's
#: plain `ray start` nodes 142, the broken plugins 134, the registry's two signed runs 126, the Kubernetes exports
#: 112, the attestation 66, ...; the CLI's bad input, 117 s there, placed by its CPU since: 29 -> 14 s alone, after
#: 8c0bb87 and 7dfa1ed; the README's Ray journey, run once since, placed by its CPU: 31 -> 17-23 s alone).
#: `make test` hands whole files to its workers in collection order (``--dist loadfile --no-loadscope-reorder``):
#: started last, a long file would run alone at the end, so they are collected first (longest processing time
#: first), the short ones after.
LONGEST_FILES = ("test_template_bake.py", "test_conformance_recovery.py", "test_reference_plugins_conformance.py",
                 "test_conformance_corpus.py", "test_ray_activation.py", "test_conformance_broken.py",
                 "test_conformance_registry.py", "test_export_k8s.py", "test_conformance_attestation.py",
                 "test_cli_bad_input.py", "test_ray_lifecycle.py", "test_ray_amd_worker_exits.py", "test_readme.py",
                 "test_conformance_cluster_process.py", "test_record.py", "test_metrics_prometheus.py")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    first = {name: rank for rank, name in enumerate(LONGEST_FILES)}
    items.sort(key=lambda item: first.get(item.path.name, len(first)))  # stable: the rest keep their order


#: Where a parallel run's time went, gathered by xdist's controller from its workers' reports: each test file's
#: seconds (its tests' set-ups, calls and tear-downs) and, per worker, its busy seconds and when its last test ended.
_STARTED = time.monotonic()
_FILE_SECONDS: dict[str, float] = {}
_WORKER_BUSY: dict[str, float] = {}
_WORKER_LAST: dict[str, float] = {}
#: How many of the longest files the summary names.
TIMELINE_FILES = 25


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    worker = getattr(report, "node", None)  # set by xdist on its controller only
    if worker is None:
        return
    name = str(worker.gateway.id)
    path = report.nodeid.split("::", 1)[0]
    _FILE_SECONDS[path] = _FILE_SECONDS.get(path, 0.0) + report.duration
    _WORKER_BUSY[name] = _WORKER_BUSY.get(name, 0.0) + report.duration
    _WORKER_LAST[name] = time.monotonic() - _STARTED


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Print the lines tests recorded for the summary (``summary.SUMMARY_PROPERTY``), xdist workers' too; and, after
    a parallel run, where its time went (LONGEST_FILES is kept in that order; a worker whose last test ended long
    before the others' was left idle by the hand-out)."""
    from summary import SUMMARY_PROPERTY

    lines = [str(value) for reports in terminalreporter.stats.values() for report in reports
             for name, value in getattr(report, "user_properties", ()) if name == SUMMARY_PROPERTY]
    if lines:
        terminalreporter.section("rayaccel figures")
        for line in dict.fromkeys(lines):
            terminalreporter.write_line(line)
    if _WORKER_BUSY:
        terminalreporter.section("where the parallel run's time went")
        terminalreporter.write_line("workers: " + "; ".join(
            f"{name} busy {_WORKER_BUSY[name]:.0f} s, last test ended at {_WORKER_LAST[name]:.0f} s"
            for name in sorted(_WORKER_BUSY)))
        longest = sorted(_FILE_SECONDS.items(), key=lambda item: -item[1])[:TIMELINE_FILES]
        terminalreporter.write_line("longest files (their tests' seconds): " + ", ".join(
            f"{path.rsplit('/', 1)[-1]} {seconds:.0f}" for path, seconds in longest))
