"""Ranges in a visible-devices value hold both their ends (supported tier, issue 46): RAC243.

Ray writes a visible-devices value as ids joined by commas, so RAC107 and RAC114 never hand a parser a range.
Runtimes that accept ranges (``NEURON_RT_VISIBLE_CORES=0-3``, Linux CPU lists, Slurm's GRES indexes) all mean
them inclusively, and people and launchers write them; a parser that expands ``0-3`` the way Python's
``range`` does loses the last unit of every range, right on every value Ray writes.
"""

from __future__ import annotations

from rayaccel.records import Problem
from rayaccel_conformance.checks.experimental import offered_units
from rayaccel_conformance.harness.subject import Subject
from rayaccel_conformance.registry import CheckFailed, Evidence, NotApplicable, check


@check("RAC243", scope="fixture")
def visible_ranges_hold_both_ends(subject: Subject, fixture: str | None) -> Evidence:
    """A range the visible-devices parser expands (``2-5``) holds both its ends, as every runtime that writes
    ranges means it.

    Where the node's units are numbers, hypothesis draws ranges ``a-b`` (a <= b) over the node's range and
    hands each to ``rayaccel_parse_visible``. A parser that keeps the text as one id or refuses it does not
    expand ranges (not applicable when it expands none); one that expands ranges (answers numeric ids between
    the ends for the node's whole range, ``0-1``, ``0-0`` or the last unit's) must answer exactly ``a`` through
    ``b``, in order, for every range, one whose ends are equal too (``3-3`` is unit 3, as ``taskset -c 3-3``
    and the runtimes read it). A failure quotes the smallest range hypothesis shrank it to. A parser that
    raises on a range fails whether or not it expands others (``invariant visible-range-answered``: the SDK's
    stand-in for the raising hook, Ray's comma split, would pass for "keeps it as one id"), and one that expands
    ranges must not drop a reversed one (``7-0``) without a word (``invariant
    visible-range-reversed-not-dropped``: kept as one id or refused with a problem, as for any text no runtime
    reads). Fix: expand ``a-b`` to ``range(a, b + 1)`` for every ``a <= b``, as ``NEURON_RT_VISIBLE_CORES``,
    Linux CPU lists and Slurm mean it, and keep or refuse anything else.
    """
    family = subject.family()
    var = family.visible_devices_env_var
    fam = subject.inventory(fixture).family(family.name)
    units = offered_units(fam)
    if not units or not all(u.isdigit() for u in units):
        raise NotApplicable(f"{fixture}: the node's units are not numbers: no range names them")
    top = max(int(u) for u in units)
    if top < 1:
        raise NotApplicable(f"{fixture}: one unit, no range")
    expanded: list[str] = []
    raised: list[str] = []

    def parse_reporting(value: str) -> tuple[list[str], list[Problem]]:
        said: list[Problem] = []
        back = list(subject.manager.answer(subject.name, "rayaccel_parse_visible", problems=said, value=value))
        raised.extend(f"{var}={value!r}: {p.message}" for p in said if p.code == "hook-raised")
        return back, said

    def parse(value: str) -> list[str]:
        return parse_reporting(value)[0]

    def expands(value: str, back: list[str]) -> bool:
        """Whether an answer reads the text as a range: numeric ids only, each between its ends."""
        low, high = (int(end) for end in value.split("-"))
        return bool(back) and all(u.isdigit() and low <= int(u) <= high for u in back)

    # Whether the parser expands ranges at all: the node's whole range, the smallest of two units and of one.
    expanding = [expands(probe, parse(probe)) for probe in (f"0-{top}", "0-1", "0-0", f"{top}-{top}")]
    if raised:
        raise CheckFailed(f"{fixture}: invariant visible-range-answered: rayaccel_parse_visible raised on "
                          f"{raised[0]}; a range is answered (expanded, kept as one id as Ray keeps it, or refused "
                          "with a problem), never raised: the SDK's stand-in, Ray's comma split, hides the raise")
    if not any(expanding):
        raise NotApplicable(f"{fixture}: the parser expands no range (keeps it as one id or refuses it)")

    def inclusive(bounds: tuple[int, int]) -> str | None:
        low, high = sorted(bounds)
        value = f"{low}-{high}"
        back = parse(value)
        want = [str(i) for i in range(low, high + 1)]
        if back == want:
            expanded.append(value)
            return None
        why = (f"{want[0]} through {want[-1]} (a range holds both its ends)" if low < high else
               f"{want[0]} alone (a range whose ends are equal holds that one unit; the parser reads other ranges)")
        return f"property visible-range-inclusive: {var}={value!r} parses as {back}, not {why}"

    from hypothesis import strategies as st  # loaded by the check that draws, not with the registry

    from rayaccel_conformance.checks.properties import shrunk_failure

    # The ranges at the edges of the node's first, then hypothesis's over it (it rarely draws equal ends).
    found = next((m for m in map(inclusive, ((0, top), (0, 0), (top, top))) if m), None)
    bound = st.integers(0, top)
    found = found or shrunk_failure(st.tuples(bound, bound), inclusive)
    if found:
        raise CheckFailed(f"{fixture}: {found}")
    # A reversed range names no unit in any runtime that writes ranges: kept as one id (Ray's reading of what it
    # cannot split) or refused with a problem, the value stays visible; dropped, the process silently sees less.
    reversed_range = f"{top}-0"
    back, said = parse_reporting(reversed_range)
    if not back and not said:
        raise CheckFailed(f"{fixture}: invariant visible-range-reversed-not-dropped: {var}={reversed_range!r} (a "
                          "reversed range, which no runtime expands) parses as no unit, and nothing says so: keep it "
                          "as one id or refuse it with a problem naming it, never drop it silently")
    return f"{fixture}: {len(set(expanded))} ranges over units 0-{top} expanded with both ends"
