"""Problems a plugin reports from inside a hook while still returning what it could read.

A vendor tool that answers garbage for one field of one device must not cost the family its other
devices, nor be dropped silently. So a hook returns what it read and calls :func:`report_problem` for what
it could not; the manager turns each report into a :class:`~rayaccel.records.Problem` naming the plugin
and the hook. The channel is a context variable the manager sets around every hook call, so parsers can
report from any depth without a ``problems`` parameter, and tests capture reports with
:func:`collect_problems`.

A plugin that runs vendor calls in threads of its own runs them under ``contextvars.copy_context().run``
so their reports reach the same hook call.

:func:`vendor_int` and :func:`vendor_float` read one vendor value defensively: wrong type, not a number,
not finite or outside the physically possible range -> ``None`` and a ``malformed-value`` report naming
the field and the value.
"""

from __future__ import annotations

import logging
import math
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

Severity = Literal["error", "warning", "info"]

#: Reports kept per hook call; the rest are counted in one last report, so a garbage tool cannot flood.
MAX_REPORTS = 50
#: Characters of a vendor value quoted in a message.
MAX_SHOWN = 60

_log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Report:
    code: str
    message: str
    fix: str | None = None
    severity: Severity = "warning"


class ReportSink:
    """Reports of one hook call, bounded and without duplicates."""

    def __init__(self, limit: int = MAX_REPORTS) -> None:
        self.limit = limit
        self.reports: list[Report] = []
        self.dropped = 0

    def add(self, report: Report) -> None:
        if report in self.reports:
            return
        if len(self.reports) >= self.limit:
            self.dropped += 1
            return
        self.reports.append(report)

    def drain(self) -> list[Report]:
        """The reports so far (plus one counting those over the limit)."""
        out = list(self.reports)
        if self.dropped:
            out.append(Report("more-problems", f"{self.dropped} more problems were reported and not kept",
                              None, "warning"))
        return out


_SINK: ContextVar[ReportSink | None] = ContextVar("rayaccel_report_sink", default=None)


def report_problem(code: str, message: str, *, fix: str | None = None, severity: Severity = "warning") -> None:
    """Report a problem from inside a hook; the hook carries on and returns what it could read.

    :param code: machine-readable, e.g. ``malformed-value``, ``truncated-output``, ``device-vanished``.
    :param message: one sentence naming the field and value (or the device) and what was done instead.
    :param fix: what the operator should do, when there is something to do.
    """
    sink = _SINK.get()
    if sink is None:
        _log.warning("%s: %s", code, message)  # outside a hook call: not lost, but not attributed
        return
    sink.add(Report(code, message, fix, severity))


@contextmanager
def collect_problems(sink: ReportSink | None = None) -> Iterator[ReportSink]:
    """Collect what :func:`report_problem` reports in this context (the manager uses it around hooks)."""
    sink = sink if sink is not None else ReportSink()
    token = _SINK.set(sink)
    try:
        yield sink
    finally:
        _SINK.reset(token)


def shown(value: Any) -> str:
    """A vendor value quoted for a message: repr, cut to :data:`MAX_SHOWN` characters (an integer Python
    refuses to print, over 4300 digits, by its size)."""
    try:
        text = repr(value)
    except ValueError:
        return f"an integer of {value.bit_length()} bits" if isinstance(value, int) else type(value).__name__
    return text if len(text) <= MAX_SHOWN else text[:MAX_SHOWN] + "...'"


def malformed(field: str, value: Any, expected: str, *, where: str = "", fix: str | None = None,
              severity: Severity = "warning") -> None:
    """Report a vendor value that cannot be used: ``<where>: <field> is <value>, expected <expected>``."""
    prefix = f"{where}: " if where else ""
    report_problem("malformed-value", f"{prefix}{field} is {shown(value)}, expected {expected}; it is ignored",
                   fix=fix, severity=severity)


_ASCII_SPACE = " \t\r\n"
_DECIMAL = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?", re.ASCII)


RecordT = TypeVar("RecordT")


def record_or_report(what: str, build: Callable[[], RecordT]) -> RecordT | None:
    """``build()`` (a record made from one device's vendor values), or None with one ``malformed-value``
    problem naming ``what`` (e.g. ``"GPU 3"``), the field and the value: one device's garbage (a memory size
    of -1) costs that device, not the family."""
    from pydantic import ValidationError

    try:
        return build()
    except ValidationError as e:
        from rayaccel.schemas import describe_validation_error

        report_problem("malformed-value", f"{what}: {describe_validation_error(e, with_input=True)}; it is left "
                       "out, the other devices are reported", fix="check the vendor tool's answer for this device")
        return None


def plain_int(text: str) -> int | None:
    """The whole number an ASCII decimal string spells, or None. ``str.isdigit`` alone is not enough:
    it takes "\u00b2", which ``int`` then refuses."""
    text = text.strip(_ASCII_SPACE)
    return int(text) if len(text) <= 40 and text.isascii() and text.isdigit() else None


def vendor_int(value: Any, field: str, *, where: str = "", minimum: int = 0, maximum: int = 2**63 - 1,
               none_values: tuple[str, ...] = ("", "n/a", "[n/a]", "none", "null"),
               fix: str | None = None) -> int | None:
    """A whole number from a vendor value (int, or a decimal string), or None and a report.

    ``None`` and the strings in ``none_values`` (case-insensitive) mean "not answered" and are not reported.
    Booleans, floats with a fraction, non-numbers and values outside ``[minimum, maximum]`` are reported.
    """
    if value is None or (isinstance(value, str) and value.strip(_ASCII_SPACE).lower() in none_values):
        return None
    number: int | None = None
    if isinstance(value, bool):
        number = None
    elif isinstance(value, int):
        number = value
    elif isinstance(value, float) and math.isfinite(value) and value.is_integer():
        number = int(value)
    elif isinstance(value, str):
        text = value.strip(_ASCII_SPACE)  # only what a tool pads with: a control character is malformed
        digits = text[1:] if text[:1] in "+-" else text
        if len(text) <= 40 and digits.isascii() and digits.isdigit():
            number = int(text)
    span = f"a whole number in [{minimum}, {maximum}]" if maximum < 2**63 - 1 else f"a whole number >= {minimum}"
    if number is None or not minimum <= number <= maximum:
        malformed(field, value, span, where=where, fix=fix)
        return None
    return number


def vendor_float(value: Any, field: str, *, where: str = "", minimum: float = 0.0, maximum: float = math.inf,
                 none_values: tuple[str, ...] = ("", "n/a", "[n/a]", "none", "null"),
                 fix: str | None = None) -> float | None:
    """A finite number from a vendor value (int, float or decimal string), or None and a report."""
    if value is None or (isinstance(value, str) and value.strip(_ASCII_SPACE).lower() in none_values):
        return None
    number: float | None = None
    if isinstance(value, int | float) and not isinstance(value, bool):
        number = float(value)
    elif isinstance(value, str) and len(value) <= 40:
        text = value.strip(_ASCII_SPACE)
        number = float(text) if _DECIMAL.fullmatch(text) else None  # no "1_0", "nan" or non-ASCII digits
    bounds = f"a number in [{minimum:g}, {maximum:g}]" if math.isfinite(maximum) else f"a number >= {minimum:g}"
    if number is None or not math.isfinite(number) or not minimum <= number <= maximum:
        malformed(field, value, bounds, where=where, fix=fix)
        return None
    return number
