"""How a wrong value relates to the right one, named as the defect that relation points to (issue 46: a kill
names the defect, not only two numbers).

A check that compares what a plugin gives with what the machine reads (RAC206's stated values, RAC232's declared
link bandwidth) knows both values; a few relations between them are each one kind of defect, whatever the vendor:
a ratio that is a unit's power (x1000, x2^20, x8 bits per byte, x100 percent per fraction) is a unit mix-up, a
value equal to another field of the record the reading sits in (``peak`` beside ``total``, ``limit`` beside
``draw``) that field read instead. A ratio no unit's power explains (twice, half) is said as the ratio and nothing
more: half a memory figure may be one of two cores read, half a rate one direction of two or one link of two, and
the two numbers do not tell which (held-out round 17's e1: one NeuronCore's memory of two, once named "a direction
mix-up"). A ratio that is a count of the device's own parts (8x on a GPU of 8 partitions, half on a device of 2
cores) is said as that count, beside a unit's power where both give it: the numbers do not tell which. Each
helper is pure and answers None where no relation holds, so a failure without one reads as before.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

from rayaccel.records import Device
from rayaccel_conformance.checks.readings import UNIT_FACTORS, Reading, owned_by

#: How close observed / expected must be to a relation's factor to be named by it (the checks' own slack is 1%).
RATIO_TOLERANCE = 0.01
#: How close a sum of readings (times a unit factor) must be to a value to be taken as its source.
SOURCE_TOLERANCE = 1e-3
#: How each unit reads in a mix-up: (the unit, the unit a thousandth of it).
_UNIT_WORDS = {"celsius": ("degrees Celsius", "millidegrees"), "watts": ("watts", "milliwatts"),
               "percent": ("percent", "per mille")}
_SIZE_UNITS = frozenset({"bytes", "bytes_per_second", "GB/s"})


def _mixups(unit: str) -> list[tuple[float, str]]:
    """(observed / expected, the defect it names) for a value in ``unit``."""
    whole, milli = _UNIT_WORDS.get(unit, (unit, f"milli-{unit}"))
    found = [] if unit in _SIZE_UNITS else [
        (1e3, f"a unit mix-up by 1000: a reading in {milli} (or a kilo- figure) not divided by 1000"),
        (1e-3, f"a unit mix-up by 1000: divided by 1000 once too often, a reading already in {whole} taken for "
               f"{milli}"),
        (1e6, "a unit mix-up by 10^6: a reading in micro-units not divided by 10^6"),
        (1e-6, f"a unit mix-up by 10^6: divided by 10^6 once too often, a reading already in {whole}"),
    ]
    found += [
        (100.0, "a percent multiplied by 100 again: a reading already in percent taken for a 0-1 fraction"),
        (1e-2, "a 0-1 fraction where percent is due: not multiplied by 100"),
    ]
    if unit in _SIZE_UNITS:
        found += [
            (2.0**10, f"a size unit mix-up by 2^10: multiplied by 1024 once too often (a reading in {whole} taken "
                      "for KiB)"),
            (2.0**-10, f"a size unit mix-up by 2^10: KiB where {whole} are due (not multiplied by 1024)"),
            (2.0**20, f"a size unit mix-up by 2^20: multiplied by 2^20 once too often (a reading in {whole} taken "
                      "for MiB)"),
            (2.0**-20, f"a size unit mix-up by 2^20: MiB where {whole} are due (not multiplied by 2^20)"),
            (2.0**30, f"a size unit mix-up by 2^30: multiplied by 2^30 once too often (a reading in {whole} taken "
                      "for GiB)"),
            (2.0**-30, f"a size unit mix-up by 2^30: GiB where {whole} are due (not multiplied by 2^30)"),
            (1e3, f"a size unit mix-up by 1000: multiplied by 1000 once too often (a reading in {whole} taken for "
                  "kB)"),
            (1e-3, f"a size unit mix-up by 1000: kB where {whole} are due (not multiplied by 1000)"),
            (1e-6, f"a size unit mix-up by 10^6: MB where {whole} are due (not multiplied by 10^6)"),
            (1e-9, f"a size unit mix-up by 10^9: GB where {whole} are due (not multiplied by 10^9)"),
            (1e6 / 2**20, "a size unit mix-up of conventions: MiB converted with 10^6 (MB), not 2^20"),
            (2**20 / 1e6, "a size unit mix-up of conventions: MB converted with 2^20 (MiB), not 10^6"),
            (8.0, f"a bits-for-bytes mix-up: bits where {whole} are due (x8)"),
            (0.125, f"a bits-for-bytes mix-up: divided by 8 once too often, a figure already in {whole} taken for "
                    "bits"),
        ]
    return found


#: Ratios no unit's power explains, said as they are: the numbers establish the ratio, not its cause.
_PLAIN_RATIOS = (2.0, 0.5)


def _times(ratio: float) -> str:
    """``1000x``, ``1/2^20 of``, ``half``, ``twice``: how a ratio reads."""
    if ratio == 0.5:
        return "half"
    if ratio == 2.0:
        return "twice"
    big = ratio if ratio >= 1 else 1 / ratio
    exponent = math.log2(big)
    text = f"2^{exponent:.0f}" if exponent >= 10 and exponent.is_integer() else f"{big:.6g}"
    return f"{text}x" if ratio >= 1 else f"1/{text} of"


def part_counts(device: Device) -> dict[str, int]:
    """How many of each of its own parts ``device`` has (its partitions, its units), where more than one: a value
    that many times the one due may be summed over them, one that fraction of it one of them."""
    counts = {"partitions": len(device.partitions), "units": len(device.units)}
    return {name: count for name, count in counts.items() if count > 1}


def _as_many_as_parts(ratio: float, parts: Mapping[str, int] | None) -> tuple[float, str] | None:
    """(the factor, ``as many times as the device has partitions (8: summed over them?)``) where ``ratio`` is a
    count of the device's own parts, or its inverse (``the device has 2 units (one of them taken for the
    whole?)``); None otherwise."""
    for name, count in (parts or {}).items():
        if abs(ratio - count) <= RATIO_TOLERANCE * count:
            return count, f"as many times as the device has {name} ({count}: summed over them?)"
        if abs(ratio - 1 / count) <= RATIO_TOLERANCE / count:
            return 1 / count, f"the device has {count} {name} (one of them taken for the whole?)"
    return None


def ratio_mixup(observed: float, expected: float, unit: str, lanes: int | None = None,
                parts: Mapping[str, int] | None = None) -> str | None:
    """The unit mix-up ``observed / expected`` is, with both values and their unit; with ``lanes`` (a link's, more
    than 2: a ratio of 1/2 is :func:`plain_ratio`'s), also one lane's figure taken for the link's. None where the
    ratio is none of them. Where the ratio is also a count of the device's own ``parts`` (:func:`part_counts`: 8x
    on a device of 8 partitions), both causes are said: the numbers do not tell which."""
    if not expected or not observed:
        return None
    ratio = observed / expected
    named = [(factor, why) for factor, why in _mixups(unit)]
    if lanes and lanes > 2:
        named.append((1 / lanes, f"one lane's figure taken for the link's {lanes} lanes (not multiplied by them)"))
    for factor, why in named:
        if abs(ratio - factor) <= RATIO_TOLERANCE * factor:
            also = _as_many_as_parts(ratio, parts)
            return (f"{observed:g} {unit} is {_times(factor)} the {expected:g} {unit} due: {why}"
                    + (f"; or, {also[1]} (the numbers do not tell which)" if also else ""))
    return None


def plain_ratio(observed: float, expected: float, unit: str, parts: Mapping[str, int] | None = None) -> str | None:
    """``observed`` twice or half ``expected``, or a count of the device's own ``parts`` times it (or that
    fraction), said with both values and nothing more than the count (no unit's power gives these, and many
    defects do: one of two cores, one direction of two, one link of two). None otherwise."""
    if not expected or not observed:
        return None
    ratio = observed / expected
    also = _as_many_as_parts(ratio, parts)
    factor = next((f for f in _PLAIN_RATIOS if abs(ratio - f) <= RATIO_TOLERANCE * f), None)
    if factor is None:
        if also is None:
            return None
        return f"{observed:g} {unit} is {_times(also[0])} the {expected:g} {unit} due, {also[1]}"
    return (f"{observed:g} {unit} is {_times(factor)} the {expected:g} {unit} due"
            + (f"; {also[1]}" if also else ""))


def _field(reading: Reading) -> str:
    """The name of a reading's field within its record: a file's name, an object's key, a table's column."""
    if reading.where == "file":
        return reading.key.rsplit("/", 1)[-1]
    if reading.where == "table":
        return f"field {reading.path[1]}"
    return str(reading.path[-1]) if reading.path else reading.key


def _record(reading: Reading) -> tuple[str, str, tuple[str | int, ...]]:
    """Where a reading's record sits: its directory, its object, its table row."""
    if reading.where == "file":
        return reading.where, reading.key.rsplit("/", 1)[0], ()
    if reading.where == "table":
        return reading.where, reading.key, reading.path[:1]
    return reading.where, reading.key, reading.path[:-1]


def _kind_of_record(record: tuple[str, str, tuple[str | int, ...]]) -> str:
    """Records of one kind (one per core, category, card): their place with its numbers and last step left out,
    so a value summed over several of them is found."""
    where, key, path = record
    if where == "file":
        return re.sub(r"\d+", "#", key.rsplit("/", 1)[0])
    if where == "table":
        return f"{where} {key}"
    return f"{where} {key} " + re.sub(r"\d+", "#", ".".join(str(p) for p in path[:-1]))


def field_source(observed: float, expected: float, metric: str, device: Device,
                 readings: Iterable[Reading]) -> str | None:
    """Which other field of the records the machine's reading sits in the plugin read: the device's own readings,
    summed over records of one kind (a value per core or per category adds up), where the field ``expected``
    comes from has a sibling field giving ``observed`` (times the same unit factor). None where none does."""
    records: dict[tuple[str, str, tuple[str | int, ...]], dict[str, Reading]] = {}
    for reading in readings:
        if owned_by(reading, device):
            records.setdefault(_record(reading), {})[_field(reading)] = reading
    kinds: dict[str, list[dict[str, Reading]]] = {}
    for record, fields in records.items():
        kinds.setdefault(_kind_of_record(record), []).append(fields)
    factors = UNIT_FACTORS.get(metric, (1.0,))
    for group in kinds.values():
        names = sorted({name for fields in group for name in fields})
        sums = {name: sum(f[name].value for f in group if name in f) for name in names}
        for factor in factors:
            due = [n for n in names if abs(sums[n] * factor - expected) <= SOURCE_TOLERANCE * abs(expected)]
            read = [n for n in names if abs(sums[n] * factor - observed) <= SOURCE_TOLERANCE * abs(observed)]
            if due and read and not set(due) & set(read):
                example = next(f[read[0]] for f in group if read[0] in f)
                over = sum(read[0] in f for f in group)
                summed = f"the sum of {over} records' " if over > 1 else ""
                return (f"read from another field of the record: {observed:g} is {summed}`{read[0]}` (e.g. "
                        f"{example.describe()}), the machine's reading its `{due[0]}` beside it")
    return None


def published_as(device: str, metric: str, expected: float, samples: Iterable[tuple[str, str, float]]) -> str | None:
    """Where the value the machine reads for ``device``'s ``metric`` is the plugin's own sample of another metric of
    that device (a ``vendor.*`` one, or another standard one): the plugin has the machine's reading and publishes it
    under another name, ``metric`` taken from another reading. ``samples``: (device, metric, value). A value of 0 is
    no evidence (an idle device reads it in many fields)."""
    if not expected:
        return None
    names = sorted({name for other, name, value in samples if other == device and name != metric
                    and abs(value - expected) <= SOURCE_TOLERANCE * abs(expected)})
    if not names:
        return None
    return (f"{expected:g}, the machine's reading for {metric}, is what the plugin publishes for {device} as "
            f"{' and '.join(names)}: {metric} is read from another reading, and the machine's own published under "
            f"another name (publish that reading as {metric})")


def reindexed(device: str, metric: str, expected: float, samples: Iterable[tuple[str, str, float]],
              stated: dict[str, dict[str, float]], known: Iterable[str] = ()) -> str | None:
    """Where the value the machine reads for ``device`` is given under another key: one no device of the node has,
    or another device's whose own stated value is another (the two swapped): the metric indexed by another key
    than the device's. ``samples``: (device, metric, value); ``known``: the node's device ids. A device of the
    node giving the same value with no value stated for it is no evidence (every card's memory_total is one
    figure), nor is a value of 0 (idle devices all read it)."""
    if not expected:
        return None
    devices = set(known) | set(stated)
    for other, name, value in samples:
        if other == device or name != metric or abs(value - expected) > SOURCE_TOLERANCE * abs(expected):
            continue
        own = stated.get(other, {}).get(metric)
        if other not in devices:
            where = f"{other!r}, no device of this node"
        elif own is not None and abs(own - value) > SOURCE_TOLERANCE * abs(own or 1):
            where = f"device {other!r}, whose own reading is {own:g}"
        else:
            continue
        return (f"the value the machine reads for {device} is given under {where}: {metric} indexed by another key "
                "than the device's own (a listing index, or its place in a slice, worker or rack)")
    return None


#: A timestamp since 1970 tells its unit by its size (years 2001 to 2286): (lowest value, unit, seconds per unit).
_STAMP_UNITS = ((1e9, "seconds", 1.0), (1e12, "milliseconds", 1e-3), (1e15, "microseconds", 1e-6),
                (1e18, "nanoseconds", 1e-9))
#: Units a counter of traffic may count, by the bytes one of them is.
_COUNTER_UNITS = ((1.0, "bytes"), (1e3, "kB"), (2.0**10, "KiB"), (1e6, "MB"), (2.0**20, "MiB"))
#: A rate's ratio to the one due that a time or a decimal size step explains: (ratio, the time defect, the counter's
#: unit it needs for a size defect of the counter's, that defect, a size defect of the rate's own or "").
_RATE_STEPS = (
    (1e-3, "the interval between the counter's two samples taken 1000x too long (timestamps in microseconds divided "
           "as milliseconds, or in milliseconds as seconds)", "kB", "a kB counter's advance taken for bytes",
     "the rate given in kB/s"),
    (1e3, "the interval between the counter's two samples taken 1000x too short (timestamps in milliseconds divided "
          "as microseconds, or in seconds as milliseconds)", "bytes", "a bytes counter's advance taken for kB", ""),
    (1e-6, "the interval between the counter's two samples taken 10^6x too long (timestamps in microseconds divided "
           "as seconds)", "MB", "an MB counter's advance taken for bytes", "the rate given in MB/s"),
    (1e6, "the interval between the counter's two samples taken 10^6x too short (timestamps in seconds divided as "
          "microseconds)", "bytes", "a bytes counter's advance taken for MB", ""),
)


def _stamp_unit(stamp: float) -> tuple[str, float] | None:
    """The unit of a timestamp since 1970, from its size; None for one that is no such date in any unit."""
    return next(((name, seconds) for low, name, seconds in _STAMP_UNITS if low <= stamp < low * 300), None)


Place = tuple[str, str, tuple[str | int, ...]]


def recorded_counters(device: Device, readings: Iterable[Reading]) -> dict[Place, list[tuple[float, float]]]:
    """The device's counters the machine was recorded reading more than once: each a list of records holding a
    ``value`` beside a ``timestamp`` (NVML's field values as recorded), as (timestamp, value) in order."""
    fields: dict[Place, dict[str, float]] = {}
    for reading in readings:
        if (reading.where != "table" and len(reading.path) >= 2 and reading.path[-1] in ("timestamp", "value")
                and isinstance(reading.path[-2], int) and owned_by(reading, device)):
            record = fields.setdefault((reading.where, reading.key, reading.path[:-1]), {})
            record[str(reading.path[-1])] = reading.value
    series: dict[Place, list[tuple[int, float, float]]] = {}
    for (where, key, path), record in fields.items():
        if {"timestamp", "value"} <= set(record):
            series.setdefault((where, key, path[:-1]), []).append(
                (int(path[-1]), record["timestamp"], record["value"]))
    return {place: [(stamp, value) for _, stamp, value in sorted(points)]
            for place, points in series.items() if len(points) > 1}


def counter_units(expected: float, device: Device, readings: Iterable[Reading]) -> tuple[str, str, str] | None:
    """What the device's recorded counters show of the units of a rate ``expected`` (bytes per second) comes from:
    (their timestamps' unit, told by its size; the unit the counter counts, the one whose advance per second, of
    one counter or summed over its siblings (a GPU's links), is the rate; one counter's place). None where no
    recorded counter gives the rate in one of the units."""
    series = recorded_counters(device, readings)
    per_second: dict[Place, float] = {}
    stamps = set()
    for place, points in series.items():
        (t0, v0), (t1, v1) = points[0], points[-1]
        unit = _stamp_unit(t0)
        if unit is None or t1 <= t0:
            continue
        stamps.add(unit[0])
        per_second[place] = (v1 - v0) / ((t1 - t0) * unit[1])
    if len(stamps) != 1:
        return None
    groups: dict[Place, list[float]] = {}
    for place, advance in per_second.items():
        groups.setdefault(place, []).append(advance)
        groups.setdefault((place[0], place[1], place[2][:-1]), []).append(advance)
    for place, advances in groups.items():
        total = sum(advances)
        for size, name in _COUNTER_UNITS:
            if total and abs(total * size - expected) <= RATIO_TOLERANCE * abs(expected):
                example = next(p for p in series if p[:2] == place[:2] and p[2][:len(place[2])] == place[2])
                where, key, path = example
                return stamps.pop(), name, f"{where} {key} " + ".".join(str(p) for p in path)
    return None


def rate_mixup(observed: float, expected: float, device: Device, readings: Iterable[Reading]) -> str | None:
    """The defect a rate ``observed`` (bytes per second) a power of 1000 off the one due names: the time step (the
    interval between the counter's samples in the wrong unit) or a decimal size step. Both fit a rate alone; the
    device's recorded counters (:func:`counter_units`) tell them apart where their unit needs no decimal step (bytes,
    KiB: leaving KiB unconverted shows as 2^10, not 1000). None where the ratio is no power of 1000."""
    if not expected or not observed:
        return None
    ratio = observed / expected
    step = next((step for step in _RATE_STEPS if abs(ratio - step[0]) <= RATIO_TOLERANCE * step[0]), None)
    if step is None:
        return None
    factor, time, counts_for_it, counter_size, rate_size = step
    units = counter_units(expected, device, readings)
    evidence = ""
    if units is not None:
        stamps, counts, place = units
        evidence = (f"; the machine's counters ({place}, recorded twice) are stamped in {stamps} and count {counts} "
                    "(their advance per second is the rate due)")
    sizes = [why for why, fits in ((counter_size, units is None or units[1] == counts_for_it), (rate_size, True))
             if why and fits]
    return (f"{observed:g} bytes/s is {_times(factor)} the {expected:g} bytes/s due: a time unit mix-up, {time}"
            + (f"; or a size one, {' or '.join(sizes)}" if sizes else "; no size step of the counter's unit gives "
               "this ratio") + evidence)


#: A topology as a machine writes it (``16x16``, ``2x2x4``): its product is the chips it holds.
_TOPOLOGY = re.compile(r"(?<![\w.])(\d+(?:x\d+){1,2})(?![\w.])")
#: A product name ending in its count (``v6e-256``, ``v5p-16``): the count a vendor names a slice by.
_NAMED_COUNT = re.compile(r"(?<![\w.-])([a-z][a-z0-9-]*?)-(\d+)(?![\w.])", re.IGNORECASE)
#: Per-chip and per-host counts a count is divided or multiplied by once too often.
_PER_UNIT = (2, 4, 8)


def _machine_texts(state: dict[str, Any]) -> Iterator[tuple[str, str]]:
    """Every text the machine answers with, and where: files, metadata (HTTP) bodies, commands' output."""
    for path, text in (state.get("files") or {}).items():
        yield f"file {path}", text or ""
    for url, answer in (state.get("http") or {}).items():
        yield url, str((answer or {}).get("body") or "")
    for line, answer in (state.get("commands") or {}).items():
        yield f"`{line}` output", str((answer or {}).get("stdout") or "")


def machine_counts(state: dict[str, Any]) -> list[tuple[int, str]]:
    """The counts a machine states in its text: a topology's product (``16x16`` is 256) and the count a name ends
    in (``v6e-256``), each with what and where it is."""
    found = []
    for where, text in _machine_texts(state):
        for match in _TOPOLOGY.finditer(text):
            found.append((math.prod(int(n) for n in match.group(1).split("x")), f"topology {match.group(1)} ({where})"))
        for match in _NAMED_COUNT.finditer(text):
            found.append((int(match.group(2)), f"name {match.group(0)} ({where})"))
    return found


def count_mixup(observed: int, expected: int, state: dict[str, Any]) -> str | None:
    """A whole-number count ``observed`` that is 1/k or k times the ``expected`` one (k 2, 4, 8), said as that
    ratio; where the machine's text states the count due two ways that agree (its topology's product and the count
    its name ends in), that its chips hold one unit each, so no per-chip factor applies to it. None where the ratio
    is none of them."""
    if observed <= 0 or expected <= 0 or observed == expected:
        return None
    factor = next((k for k in _PER_UNIT if observed * k == expected or expected * k == observed), None)
    if factor is None:
        return None
    low = observed < expected
    # The ratio is what the numbers establish; which per-unit factor (cores per chip, chips per host) gave it, they
    # do not say.
    head = f"{observed} is {_times(1 / factor if low else float(factor))} the {expected} due"
    sources = machine_counts(state)
    due = [what for value, what in sources if value == expected]
    topologies = [what for what in due if what.startswith("topology")]
    names = [what for what in due if what.startswith("name")]
    if topologies and names:
        return (f"{head}; the machine states {expected} twice, its {topologies[0]} and its {names[0]}: its chips "
                f"hold one unit each (the name counts chips, as the topology does), so no per-chip factor of "
                f"{factor} applies to this machine")
    if due:
        return f"{head}; the machine states {expected}: {due[0]}"
    return head


def _all_texts(state: dict[str, Any]) -> Iterator[tuple[str, str]]:
    """Every text of the machine, a library's data as JSON too."""
    yield from _machine_texts(state)
    for name, data in (state.get("libraries") or {}).items():
        yield f"library {name}", json.dumps(data)


def _stated_at(value: str, state: dict[str, Any]) -> str | None:
    """Where the machine states ``value`` as a whole: a library's field (its path), a file, a tool's output; None
    where it states it nowhere."""
    def walk(data: Any, path: str) -> str | None:
        if isinstance(data, dict):
            return next((found for key, item in data.items() if (found := walk(item, f"{path}.{key}"))), None)
        if isinstance(data, list):
            return next((found for n, item in enumerate(data) if (found := walk(item, f"{path}.{n}"))), None)
        return path if data == value else None

    for name, data in (state.get("libraries") or {}).items():
        if found := walk(data, f"library {name}"):
            return found
    token = re.compile(r"(?<![\w.:/-])" + re.escape(value) + r"(?![\w.:/-])")
    return next((where for where, text in _machine_texts(state) if token.search(text)), None)


def renamed_partitions(device: str, missing: Sequence[str], found: Sequence[str], state: dict[str, Any]) -> str | None:
    """Where a device's expected partitions (``missing``) are all stated by the machine and the ones discovered in
    their place (``found``, as many) are stated nowhere: the partitions found under names of the plugin's own, not
    the ids the machine gives them, which every answer keyed by the machine's ids misses. Says so, with where the
    machine states the first expected id, and where every name found holds the device's id, that they are built
    from it. None where the counts differ, an expected id is stated nowhere or a name found is stated."""
    if not missing or len(missing) != len(found):
        return None
    places = [_stated_at(p, state) for p in missing]
    if None in places or any(_stated_at(p, state) for p in found):
        return None
    built = f", each built from the device's own id {device} and more" if all(device in p for p in found) else ""
    return (f"{device}'s partitions are discovered as {', '.join(found)}, ids the machine states nowhere{built}, "
            f"where the machine gives them ids of their own: {missing[0]} at {places[0]}"
            f"{f' and {len(missing) - 1} more' if len(missing) > 1 else ''}: the partitions are named otherwise than "
            "the machine names them, so the answers keyed by the machine's ids (its tools, metrics, events, the "
            "fixture) find none; use the id the machine gives each partition")


def trimmed_ids(device_ids: Sequence[str], state: dict[str, Any]) -> str | None:
    """Where every device id is the machine's id for it with one prefix or suffix cut off (``5e1f4c2a-0000`` where
    the tool prints ``DUNLIN-5e1f4c2a-0000``), nowhere printed alone: an id normalised in one hook, which answers
    keyed by the machine's form (health, metrics, links) then miss. Names the affix and the places the machine's form
    is printed; None where some device's id is printed as it is, or the affixes differ."""
    if not device_ids:
        return None
    texts = list(_all_texts(state))
    affixes: set[tuple[str, str]] = set()
    places: dict[str, list[str]] = {}
    for device in device_ids:
        pattern = re.compile(r"([\w.:-]*)" + re.escape(device) + r"([\w.:-]*)")
        for where, text in texts:
            for match in pattern.finditer(text):
                if not match.group(1) and not match.group(2):
                    return None  # printed as it is: not trimmed
                affixes.add((match.group(1), match.group(2)))
                places.setdefault(device, []).append(where)
    if len(affixes) != 1 or set(places) != set(device_ids):
        return None
    prefix, suffix = affixes.pop()
    cut = " and ".join(f"{what} {text!r}" for what, text in (("prefix", prefix), ("suffix", suffix)) if text)
    first = device_ids[0]
    seen = sorted(set(places[first]))
    return (f"every device id is the machine's id with the {cut} cut off: {first} is {prefix}{first}{suffix} in "
            f"{', '.join(seen[:4])}{' and more' if len(seen) > 4 else ''}, and printed alone nowhere: an id "
            "normalised in one hook (discovery) while the answers the others read (health, metrics, links) are keyed "
            "by the machine's form, so they find no device; key every hook by one form of the id")
