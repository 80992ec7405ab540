"""A link rate moves with its own direction's counter and only with it (RAC246, ``invariant
a-rate-follows-its-own-counter``; held-out round 17's n1 and c1m).

RAC246 compares a rate measured between two polls with the traffic the fixture states; a plugin publishing NVML's
TX counter as ``interconnect_rx`` (n1) was caught only by ``expected.metric_values``, and with those swapped it
reached supported. One publishing a link's rated speed as both rates (c1m: a constant, whatever the traffic) was
never compared with anything on a machine stating no traffic. The machine says which counter is which: NVML's field
ids (``NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX`` = 138, ``..._RX`` = 139, the raw ones 140 and 141; nvml.h), and a
counter's own name elsewhere (Linux's ``statistics/tx_bytes``, ``port_xmit_data``/``port_rcv_data``, a JSON record's
``tx``/``rx``). The suite advances one direction's counters of one device through the host seam between two polls
and compares the rates with two polls of the machine left alone: the other direction's rate must not move (a rate
read from the other direction's counter, or both summed, moves). And a rate equal to one of the device's named
readings that states no direction (a link's rated ``gbytes_per_s``), times a unit factor, must not move with it when
that reading alone is doubled: a rate is the traffic counted, never a link's speed.
"""

from __future__ import annotations

import math
import re
import shlex
from collections.abc import Callable, Sequence
from typing import Any

from rayaccel import hookspec
from rayaccel.hosts.fixtures import Fixture, HostState
from rayaccel.records import Device, MetricSample
from rayaccel.simulation.host_factory import simulated_host
from rayaccel_conformance.checks.readings import Reading, host_readings, owned_by, scaled_host, with_reading
from rayaccel_conformance.harness.subject import Subject

INVARIANT = "invariant a-rate-follows-its-own-counter"
#: The rate each direction's traffic counter feeds.
RATE_OF = {"tx": "interconnect_tx", "rx": "interconnect_rx"}
#: NVML's NVLink throughput field ids (nvml.h: NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX 138, _DATA_RX 139, _RAW_TX
#: 140, _RAW_RX 141), the keys of a simulated NVML's ``field_values``.
NVML_FIELDS = {"138": "tx", "139": "rx", "140": "tx", "141": "rx"}
#: Words naming a direction in a counter's name (Linux net statistics tx_bytes/rx_bytes, InfiniBand port_xmit_data/
#: port_rcv_data, a tool's sent/received).
_WORDS = {"tx": {"tx", "xmit", "transmit", "transmitted", "sent", "send", "egress"},
          "rx": {"rx", "rcv", "recv", "receive", "received", "ingress"}}
_TOKENS = re.compile(r"[a-z]+")
#: The factors by which a rate (bytes per second) can differ from a reading stating it: bytes, KiB .. GiB, kB .. GB.
RATE_FACTORS = (1.0, 2.0**10, 2.0**20, 2.0**30, 1e3, 1e6, 1e9)
#: How far a rate may move between two measurements of the same traffic (timestamps' jitter, integer counters).
SAME = 0.02
#: What an advanced counter gains besides doubling, so a counter at 0 moves too (a whole number: an int stays one).
STEP = 2**20


def _names(reading: Reading) -> list[str]:
    """The names a reading is known by: its file's name, its keys in library or JSON data, or its CSV field as the
    command line queries it (``--query-link=a,b,gbytes_per_s``); [] where nothing names it."""
    if reading.where == "file":
        return [reading.key.rstrip("/").rsplit("/", 1)[-1]]
    if reading.where == "table":
        for word in shlex.split(reading.key):
            if word.startswith("--query") and "=" in word:
                fields = word.split("=", 1)[1].split(",")
                at = int(reading.path[1])
                return [fields[at]] if at < len(fields) else []
        return []
    return [str(p) for p in reading.path if not isinstance(p, int) and not str(p).isdigit()]


def direction(reading: Reading) -> str | None:
    """"tx" or "rx" where the reading's names say which way its traffic goes; None otherwise."""
    if reading.where == "library" and "field_values" in reading.path:
        field = reading.path[reading.path.index("field_values") + 1]
        return NVML_FIELDS.get(str(field))
    words = {w for name in _names(reading) for w in _TOKENS.findall(name.lower().replace("_", " "))}
    found = [way for way, names in _WORDS.items() if words & names]
    return found[0] if len(found) == 1 else None


def _counters(readings: Sequence[Reading]) -> list[Reading]:
    return [r for r in readings if r.path[-1:] != ("timestamp",)]


def _advanced(state: dict[str, Any], readings: Sequence[Reading]) -> dict[str, Any]:
    """The host state with each reading doubled and :data:`STEP` more, written as the vendor wrote it."""
    for reading in readings:
        value = reading.value * 2 + STEP

        def text(old: str, v: float = value) -> str:
            return str(int(v)) if v.is_integer() and "." not in old else repr(v)

        def number(old: Any, v: float = value) -> Any:
            return int(v) if isinstance(old, int) and v.is_integer() else v

        state = with_reading(state, reading, text, number)
    return state


def _rates(subject: Subject, fx: Fixture, moved: dict[str, Any] | None, device: Device,
           devices: Sequence[Device], wait: Callable[[], None]) -> dict[str, float]:
    """The device's rates on the second of two polls of one host, the machine changed to ``moved`` between them."""
    host = simulated_host(fx)
    subject.manager.answer(subject.name, hookspec.METRICS, [], host=host, devices=list(devices))
    if moved is not None:
        host.change_machine(fx.model_copy(update={"host": HostState.model_validate(moved), "faults": []}))
    wait()
    samples = subject.manager.answer(subject.name, hookspec.METRICS, [], host=host, devices=list(devices)) or []
    return {s.name: s.value for s in samples if s.device == device.id and s.name in RATE_OF.values()}


def _moved(before: float | None, after: float | None) -> bool:
    if before is None or after is None:
        return before is not after
    return not math.isclose(before, after, rel_tol=SAME, abs_tol=1.0)


def direction_failures(subject: Subject, fx: Fixture, devices: Sequence[Device], measured: Sequence[MetricSample],
                       wait: Callable[[], None]) -> tuple[list[str], str]:
    """(What is wrong, what was done) for the rates of the middle device with a rate: each direction's counters
    advanced alone, then each named reading without a direction that a rate equals doubled alone."""
    with_rates = [d for d in devices if any(s.device == d.id for s in measured)]
    if not with_rates:
        return [], ""
    device = with_rates[len(with_rates) // 2]
    base = fx.host.model_dump(mode="json")
    own = [r for r in host_readings(base, zeros=True) if owned_by(r, device)]
    left = _rates(subject, fx, None, device, devices, wait)
    wrong, done = [], []
    for way, rate in RATE_OF.items():
        counters = _counters([r for r in own if direction(r) == way])
        if not counters:
            continue
        after = _rates(subject, fx, _advanced(base, counters), device, devices, wait)
        other_way = "rx" if way == "tx" else "tx"
        other = RATE_OF[other_way]
        named = "; ".join(r.describe() for r in counters[:2]) + (" ..." if len(counters) > 2 else "")
        done.append(f"{way.upper()} counters advanced alone")
        if _moved(left.get(other), after.get(other)):
            follows = (f"; {rate} stayed at {left[rate]:g}" if rate in left and not _moved(left[rate], after.get(rate))
                       else "")
            wrong.append(f"{INVARIANT}, {fx.ref}: with only {device.id}'s {way.upper()} traffic counters advanced "
                         f"between two polls ({len(counters)}: {named}), {other} moved from "
                         f"{left.get(other, math.nan):g} to {after.get(other, math.nan):g} bytes/s{follows}: "
                         f"{other} is the other direction's traffic; read it from the {other_way.upper()} counter "
                         "alone (NVML: "
                         "NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX is 138, _RX 139)")
    for name, value in sorted(left.items()):
        way = next(w for w, r in RATE_OF.items() if r == name)
        for reading in own:
            if not _names(reading) or direction(reading) is not None or reading.path[-1:] == ("timestamp",):
                continue
            factor = next((f for f in RATE_FACTORS if math.isclose(reading.value * f, value, rel_tol=1e-4)), None)
            if factor is None or value == 0:
                continue
            after = _rates(subject, fx, scaled_host(base, reading, 2.0), device, devices, wait)
            done.append(f"{reading.describe()} doubled")
            if after.get(name) is not None and math.isclose(after[name], 2 * value, rel_tol=SAME):
                wrong.append(f"{INVARIANT}, {fx.ref}: {name} of {device.id} is {value:g} bytes/s, the machine's "
                             f"{reading.describe()} ({reading.value:g}, named {_names(reading)[-1]!r}, no traffic "
                             f"direction) times {factor:g}, and with that reading alone doubled it is "
                             f"{after[name]:g}: a rate is the advance of the {way.upper()} traffic counter over "
                             "the time between two polls, never a link's rated speed or another reading; on a "
                             "machine that counts no traffic publish no rate")
                break
    return wrong, (f"; {device.id}'s rates polled with {', '.join(done)}" if done else "")
