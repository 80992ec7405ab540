"""RAC255's ``an-unoffered-metric-is-not-stated``: a fixture's statement that its vendor interface does not offer a
metric (``expected.metrics`` leaving it out) holds only where its answers state no number for it (held-out round 13's
``p2``).

RAC255 excuses a device that lacks, on one fixture, a metric its SKU's devices report on another, where that fixture
says its vendor interface does not offer the metric (a GPU under vGPU has no ECC counters). That statement is a
fixture's expectation, and one edited to the code's answer excused a TPU plugin that filed slice-indexed samples
under the host's chip indexes: on worker 1 of a v5p-16 the endpoint states ``memory_used{accelerator_id="...-4"}`` as it
does on worker 0, and the plugin dropped them. The answers say what is offered: where the other fixture's answers state
the numbers the plugin reads the metric from (each device's own reading that gives its sample, as RAC223 attributes
them, or a Prometheus sample of that value), and this fixture's answers state a number in the same place (the same
field of every device: a file's name, a library's or JSON key path, a table's column, a sample's name), the vendor
interface offers it here too.
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import urlsplit

from rayaccel.hosts.fixtures import Fixture
from rayaccel.records import FamilyInventory
from rayaccel_conformance.checks.live_labels import shape
from rayaccel_conformance.checks.readings import MATCH_TOLERANCE, UNIT_FACTORS, Reading, host_readings, owned_by

INVARIANT = "invariant an-unoffered-metric-is-not-stated"

#: A Prometheus text sample: its name, its labels and its value (``memory_used{accelerator_id="x-4"} 1.2e10``).
_SAMPLE = re.compile(r"^([A-Za-z_:][A-Za-z0-9_:]*)(\{[^}]*\})?\s+(\S+)")


def _shortened(name: str, labels: str) -> str:
    """A sample's name and its first label (the one that usually names the device), the rest elided."""
    first, _, rest = labels.strip("{}").partition(",")
    return f"{name}{{{first}{',...' if rest else ''}}}" if labels else name


def _http_numbers(host: dict[str, Any]) -> list[tuple[tuple[str, str], float, str]]:
    """(place, value, where) of every number an HTTP answer states as a Prometheus sample: the place is the URL's
    path and the sample's name (the node's address, which each node's endpoint has its own of, and the labels, which
    name the device, left out)."""
    found = []
    for url, answer in (host.get("http") or {}).items():
        endpoint = urlsplit(url).path
        for line in str((answer or {}).get("body") or "").splitlines():
            match = _SAMPLE.match(line.strip())
            if match is None or line.lstrip().startswith("#"):
                continue
            try:
                value = float(match.group(3))
            except ValueError:
                continue
            sample = _shortened(match.group(1), match.group(2) or "")
            found.append((("http", f"{endpoint} {match.group(1)}"), value, f"GET {url}: {sample} {match.group(3)}"))
    return found


def _places(host: dict[str, Any]) -> dict[tuple[str, str], list[tuple[Reading | None, float, str]]]:
    """Every number ``host`` states (zeros too), by its place (:func:`shape`; a Prometheus sample by its endpoint's
    path and name): (the reading where the suite has one, its value, where it is)."""
    found: dict[tuple[str, str], list[tuple[Reading | None, float, str]]] = {}
    for reading in host_readings(host, zeros=True):
        found.setdefault(shape(reading), []).append((reading, reading.value, reading.describe()))
    for place, value, where in _http_numbers(host):
        found.setdefault(place, []).append((None, value, where))
    return found


def metric_places(fixture: Fixture, fam: FamilyInventory, metric: str) -> dict[tuple[str, str], str]:
    """The places of ``fixture``'s answers ``metric`` is read from: each place that gives every (whole) device's
    non-zero sample of it, times one of the metric's unit factors (a device's own reading, as RAC223 attributes
    them; a Prometheus sample, which names its device in a label the suite does not read, by its value), with one
    example of it."""
    places = _places(fixture.host.model_dump(mode="json"))
    factors = UNIT_FACTORS.get(metric, (1.0,))
    by_id = {device.id: device for device in fam.devices if not device.partitions}
    common: dict[tuple[str, str], str] | None = None
    for sample in (s for s in fam.metrics if s.name == metric and s.device in by_id and s.value != 0):
        device, mine = by_id[sample.device], dict[tuple[str, str], str]()
        for place, numbers in places.items():
            for reading, value, where in numbers:
                if reading is not None and not owned_by(reading, device):
                    continue
                if any(abs(value * f - sample.value) <= MATCH_TOLERANCE * abs(sample.value) for f in factors):
                    mine.setdefault(place, where)
        common = mine if common is None else {p: w for p, w in common.items() if p in mine}
    return common or {}


def stated_after_all(here: Fixture, there: Fixture, there_family: FamilyInventory, excused: list[str]) -> list[str]:
    """Of the metrics ``here`` says its vendor interface does not offer (``excused``), each its answers state a number
    for where ``there``'s answers state the one the plugin reads it from: a sentence naming the place on both."""
    ours = _places(here.host.model_dump(mode="json"))
    found = []
    for metric in excused:
        theirs = metric_places(there, there_family, metric)
        shared = sorted(place for place in theirs if place in ours)
        if shared:
            place = shared[0]
            found.append(f"{metric} ({here.ref} states {ours[place][0][2]}, as {there.ref} states "
                         f"{theirs[place]}, which the plugin reads it from)")
    return found
