"""Properties of the pure hooks over generated inputs (RAC114, RAC220, RAC221, RAC222): hypothesis draws the
inputs, shrinks a failure to its smallest example and the check quotes it.

A fixture has ids of one width and one count: a parser that takes one character per id, sorts ids as text or
keeps the spaces people type passes RAC107 on a four-card machine. Here the unit ids are drawn over the node's
range (numeric ids of any width and count up to 64, or every subset and order of the fixture's own ids), set
through ``rayaccel_visible_env`` and parsed back, written as Ray and the vendor runtimes write them (``0,1,2``)
and as people do (spaces, empty entries), and as garbage that must be refused or normalised. Cloud hints are
asked for instance types no catalogue has, and for the ones they hint spelled in other cases and padded; labels
and resources are asked for the devices in every order. The run is bounded and reproducible: derandomized, a
fixed number of examples, no example database.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from hypothesis import HealthCheck, Phase, given, settings, strategies as st

#: Examples per property and fixture: fixed, so the grade is the same every run.
MAX_EXAMPLES = 25
#: The most unit ids drawn for one example (a node's range: 8 GPUs, 64 NeuronCores, ...).
MAX_UNITS = 64
_SETTINGS = settings(max_examples=MAX_EXAMPLES, derandomize=True, deadline=None, database=None,
                     phases=(Phase.explicit, Phase.generate, Phase.shrink), suppress_health_check=list(HealthCheck),
                     report_multiple_bugs=False, print_blob=False)
#: What a visible-devices value may look like when it is not what Ray or the runtime writes.
GARBAGE = st.text(alphabet=st.sampled_from(list("0123456789abcx ,;:-_\t")), max_size=12)


def unit_lists(ids: list[str]) -> st.SearchStrategy[list[str]]:
    """Unit id lists in the node's range: numeric ids of any width and count, in any order, when the node's ids
    are numbers; else every subset of the node's own ids, in every order."""
    if ids and all(i.isdigit() for i in ids):
        return st.lists(st.integers(0, 511).map(str), unique=True, max_size=MAX_UNITS)
    return st.lists(st.sampled_from(ids), unique=True, max_size=len(ids)).flatmap(
        lambda chosen: st.permutations(chosen)).map(list)


def shrunk_failure(strategy: st.SearchStrategy[Any], prop: Callable[[Any], str | None],
                   examples: int = MAX_EXAMPLES) -> str | None:
    """The failure ``prop`` gives on the smallest example hypothesis finds, with that example; None when it holds.
    ``examples``: fewer where each example builds an inventory or calls several hooks."""
    last: list[str] = []

    @settings(_SETTINGS, max_examples=examples)
    @given(strategy)
    def holds(example: Any) -> None:
        wrong = prop(example)
        if wrong:
            last[:] = [f"{wrong} (shrunk counterexample: {example!r})"]
            raise AssertionError(wrong)

    try:
        holds()
    except AssertionError:
        return last[0] if last else "a property failed"
    return None


def visible_failures(subject: Any, ids: list[str]) -> list[str]:
    """What breaks the round trip of the family's visible-devices variable, each with its shrunk example."""
    manager, name = subject.manager, subject.name
    var = subject.family().visible_devices_env_var

    def round_trip(chosen: list[str]) -> str | None:
        value = manager.visible_env(name, chosen).get(var, "")
        back = manager.parse_visible(name, value)
        if back != chosen:
            return f"property visible-round-trip: units {chosen} set as {var}={value!r} parse back as {back}"
        return None

    def canonical(chosen: list[str]) -> str | None:
        for written in (",".join(chosen), ", ".join(chosen), ",".join([*chosen, ""])):
            back = manager.parse_visible(name, written)
            if back != chosen:
                return (f"property visible-canonical: {var}={written!r} (as Ray and the runtimes write it, or with "
                        f"spaces and a trailing comma) parses as {back}, not {chosen}")
        return None

    def refused_or_normalised(value: str) -> str | None:
        back = manager.parse_visible(name, value)
        bad = [u for u in back if not u or u != u.strip() or "," in u]
        if bad:
            return (f"property visible-refuse-or-normalise: {var}={value!r} parses to ids {back}, with "
                    f"{bad[0]!r} (empty, padded or holding the separator): refuse the value or normalise it")
        return None

    found = [shrunk_failure(unit_lists(ids), round_trip), shrunk_failure(unit_lists(ids), canonical),
             shrunk_failure(GARBAGE, refused_or_normalised)]
    return [f for f in found if f]


#: Instance type names no cloud catalogue has (``zz`` then letters): no plugin may hint one.
UNKNOWN_INSTANCE_TYPES = st.text(alphabet=st.sampled_from(list("abcdefghxyz-.")), min_size=1, max_size=10).map(
    lambda tail: "zz" + tail)


def unknown_hint_failure(subject: Any) -> str | None:
    """A hint for an instance type no catalogue has (the shrunk name), or None."""
    from rayaccel import hookspec

    def no_hint(args: tuple[str, str]) -> str | None:
        provider, instance_type = args
        hint = subject.manager.answer(subject.name, hookspec.CLOUD_HINTS, [], provider=provider,
                                      instance_type=instance_type)
        if hint is not None:
            return (f"property hints-only-for-own-devices: {provider} {instance_type!r}, a name no catalogue has, "
                    f"gets a hint of {hint.count:g} {subject.family().resource_name}")
        return None

    providers = st.sampled_from(["aws", "gcp", "azure", "oci", "other"])
    return shrunk_failure(st.tuples(providers, UNKNOWN_INSTANCE_TYPES), no_hint)


# Labels and resources over device orders (RAC221) ---------------------------------------------------------------

#: Orders drawn per fixture: each asks two hooks, and a plugin's labels hook may take tens of milliseconds.
ORDER_EXAMPLES = 10


def order_failures(subject: Any, host: Any, family: Any) -> list[str]:
    """What changes in ``rayaccel_resources`` and ``rayaccel_labels`` when the family's devices are listed in a
    drawn order, with the smallest such order (as device indexes); empty when nothing does."""
    from rayaccel import hookspec

    manager, name = subject.manager, subject.name
    devices = list(family.devices)
    down = {h.device for h in family.health if h.state == "unhealthy"}

    def resources(order: list[Any]) -> Any:
        healthy = [d for d in order if d.id not in down]
        return manager.answer(name, hookspec.RESOURCES, [], host=host, devices=healthy,
                              topology=family.topology).model_dump()

    def labels(order: list[Any]) -> dict[str, str]:
        return dict(manager.answer(name, hookspec.LABELS, [], host=host,
                                   inventory=family.model_copy(update={"devices": order})))

    base_resources, base_labels = resources(devices), labels(devices)

    def same_answers(order: list[int]) -> str | None:
        listed = [devices[i] for i in order]
        shown = f"devices listed as indexes {[d.index for d in listed]}"
        got = resources(listed)
        if got != base_resources:
            key = next(k for k in got if got[k] != base_resources.get(k))
            return (f"property resources-free-of-device-order: with the {shown}, rayaccel_resources gives {key} "
                    f"{got[key]!r}, not {base_resources[key]!r}")
        now = labels(listed)
        if now != base_labels:
            key = next(k for k in sorted({*now, *base_labels}) if now.get(k) != base_labels.get(k))
            return (f"property labels-free-of-device-order: with the {shown}, rayaccel_labels gives {key}="
                    f"{now.get(key)!r}, not {base_labels.get(key)!r}")
        return None

    found = shrunk_failure(st.permutations(list(range(len(devices)))).map(list), same_answers, ORDER_EXAMPLES)
    return [found] if found else []


# Cloud hints over spellings, and the listed hints (RAC222) ------------------------------------------------------


def _hint_key(hint: Any) -> dict[str, Any]:
    """A hint as compared across spellings: its instance type without regard to case."""
    data = hint.model_dump()
    data["instance_type"] = str(data["instance_type"]).strip().lower()
    return data  # type: ignore[no-any-return]


@st.composite
def _spellings(draw: Any, name: str) -> str:
    cased = draw(st.sampled_from([name.upper(), name.lower(), name.swapcase(), name.title()]))
    flips = draw(st.lists(st.booleans(), min_size=len(name), max_size=len(name)))
    mixed = "".join(c.upper() if flip else c for c, flip in zip(cased, flips, strict=True))
    return str(draw(st.sampled_from([cased, mixed])))


def spelling_failure(subject: Any, hinted: dict[tuple[str, str], Any]) -> str | None:
    """A spelling of a hinted instance type that gets another hint (or none, in another case), shrunk; or None."""
    from rayaccel import hookspec

    def same_hint(args: tuple[tuple[str, str], str, str]) -> str | None:
        (provider, instance_type), spelled, pad = args
        asked = f"{pad}{spelled}{pad}"
        hint = subject.manager.answer(subject.name, hookspec.CLOUD_HINTS, [], provider=provider,
                                      instance_type=asked)
        base = _hint_key(hinted[(provider, instance_type)])
        if hint is None and not pad:
            return (f"property hints-free-of-case: {provider} {asked!r} gets no hint, {instance_type!r} gets "
                    f"{base['count']:g} {base['family']}: instance types are compared without regard to case")
        if hint is not None and _hint_key(hint) != base:
            differs = next(k for k in base if _hint_key(hint).get(k) != base[k])
            return (f"property hints-free-of-spelling: {provider} {asked!r} gets {differs}={getattr(hint, differs)!r},"
                    f" {instance_type!r} gets {base[differs]!r}: the same machine, spelled another way")
        return None

    keys = sorted(hinted)
    strategy = st.sampled_from(keys).flatmap(
        lambda key: st.tuples(st.just(key), _spellings(key[1]), st.sampled_from(["", " ", "\t", "\n"])))
    return shrunk_failure(strategy, same_hint)


def listed_hint_failures(subject: Any, listed: list[Any]) -> list[str]:
    """Listed hints (``rayaccel_cloud_instance_types``) that ``rayaccel_cloud_hints`` answers otherwise."""
    from rayaccel import hookspec

    wrong = []
    for entry in listed:
        hint = subject.manager.answer(subject.name, hookspec.CLOUD_HINTS, [], provider=entry.provider,
                                      instance_type=entry.instance_type)
        if hint is None or hint != entry:
            said = "no hint" if hint is None else repr(hint.model_dump(exclude_defaults=True))
            wrong.append(f"property listed-hints-round-trip: rayaccel_cloud_instance_types lists {entry.provider} "
                         f"{entry.instance_type} as {entry.model_dump(exclude_defaults=True)!r}, but "
                         f"rayaccel_cloud_hints answers {said}")
    return wrong[:4]
