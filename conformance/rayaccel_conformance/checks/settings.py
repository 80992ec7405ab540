"""A setting the plugin reads, set to garbage, is named, never taken silently (supported tier, issue 46): RAC265.

A plugin's own settings are ``RAYACCEL_*`` variables an operator sets on the node (a timeout, a size the
hardware cannot tell). A plugin that falls back to its default on a value it cannot use runs with a setting
nobody chose, and the operator who typed it never learns. The suite cannot know a plugin's settings in
advance, so it watches which ``RAYACCEL_*`` variables the plugin's own code reads (the process environment and
the host seam's ``getenv``) while it builds the fixture, then sets each to values no setting means.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from rayaccel.simulation.host_factory import simulated_host
from rayaccel_conformance.checks.experimental import process_env_var
from rayaccel_conformance.harness.subject import Subject
from rayaccel_conformance.registry import CheckFailed, Evidence, NotApplicable, check

#: What a plugin's settings are named (the SDK's own variables are read by the SDK, not by the plugin's code).
PREFIX = "RAYACCEL_"
#: Values no setting means: text where a number or a name is expected, and a number no bound or size is.
GARBAGE = ("?!not-a-value", "-inf")
#: Modules between a plugin's read and the recording: the mapping machinery of ``os.environ`` (frozen in
#: CPython, so named by module rather than file) and the SDK's recording wrapper of the host seam.
_PASSED_THROUGH = ("os", "_collections_abc", "collections.abc", "rayaccel.hosts.recording")


def _reader_is_plugin(packages: tuple[str, ...]) -> bool:
    """Whether the read two frames up is the plugin's own: past the mapping machinery and the wrappers the
    suite and the SDK put around the host seam; a read by any other SDK code (the simulated host's own
    ``RAYACCEL_SIMULATE_*``) is the SDK's, not the plugin's."""
    frame = sys._getframe(2)
    while frame is not None:
        module = str(frame.f_globals.get("__name__", ""))
        if module not in _PASSED_THROUGH and not module.startswith("rayaccel_conformance."):
            return module.split(".")[0] in packages
        frame = frame.f_back  # type: ignore[assignment]
    return False


@contextmanager
def process_reads(packages: tuple[str, ...]) -> Iterator[set[str]]:
    """The ``RAYACCEL_*`` names the plugin's code looks up in ``os.environ`` meanwhile (a recording class put on
    the process's environment mapping, and taken off again)."""
    seen: set[str] = set()
    original = type(os.environ)

    class Recording(original):  # type: ignore[valid-type,misc]
        def __getitem__(self, key: Any) -> Any:
            if isinstance(key, str) and key.startswith(PREFIX) and _reader_is_plugin(packages):
                seen.add(key)
            return super().__getitem__(key)

    os.environ.__class__ = Recording
    try:
        yield seen
    finally:
        os.environ.__class__ = original


@check("RAC265", scope="fixture")
def settings_set_to_garbage_are_named(subject: Subject, fixture: str | None) -> Evidence:
    """Every ``RAYACCEL_*`` setting the plugin reads, set to a value no setting means, gives a warning or an
    error naming it, never a silent default.

    The suite watches which ``RAYACCEL_*`` variables the plugin's own code reads while it builds the fixture
    (from ``os.environ`` or the host seam's ``getenv``), then sets each (in the process and on the host) to
    text where a value is expected (``?!not-a-value``) and to ``-inf``, and builds again: the plugin must
    report a problem (warning or error) whose message names the variable. Falling back to the default without
    a word, or raising an error that does not name the variable, fails, naming the fixture, the variable and
    the value (invariant setting-garbage-is-named). Fix: parse each setting in one place, and on a value it
    cannot use, report it (``report_problem("malformed-setting", ...)`` naming the variable, the value and
    what is used instead) or refuse it.
    """
    subject.family()
    fx = subject.fixture(fixture)
    checked: set[str] = subject.__dict__.setdefault("_settings_checked", set())
    packages = (subject.package,)
    host = simulated_host(fx.model_copy(update={"faults": []}))
    host_reads: set[str] = set()
    plain_getenv = host.getenv

    def recording_getenv(key: str, default: str | None = None) -> str | None:
        if key.startswith(PREFIX) and _reader_is_plugin(packages):
            host_reads.add(key)
        return plain_getenv(key, default)

    host.getenv = recording_getenv  # type: ignore[method-assign]
    with process_reads(packages) as process_names:
        subject.build(host)
    names = sorted((process_names | host_reads) - checked)
    if not names:
        raise NotApplicable(f"{fx.ref}: the plugin reads no {PREFIX}* setting here"
                            + (f" it was not tried with on an earlier fixture ({', '.join(sorted(checked))})"
                               if checked else ""))
    wrong, done = [], []
    for name in names:
        checked.add(name)
        for value in GARBAGE:
            state = fx.host.model_copy(update={"env": {**fx.host.env, name: value}})
            with process_env_var(name) as set_var:
                set_var(value)
                built = subject.build(simulated_host(fx.model_copy(update={"host": state, "faults": []})))
            said = [p for p in subject.plugin_problems(built, severities=("error", "warning")) if name in p.message]
            if not said:
                other = [p.render().splitlines()[0] for p in subject.plugin_problems(built)]
                wrong.append(f"invariant setting-garbage-is-named, {fx.ref}: with {name}={value!r} the plugin "
                             "reports no warning or error naming it" + (f" (it said: {other[0]})" if other else
                                                                        ": a silent default"))
            else:
                done.append(f"{name}={value!r}: {said[0].code}")
    if wrong:
        raise CheckFailed(wrong[:6])
    return f"{fx.ref}: " + "; ".join(done)
