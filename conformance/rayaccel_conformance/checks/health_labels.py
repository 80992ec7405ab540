"""A vendor label named for the healthy (or unhealthy) devices counts them in every state (issue 46, held-out round
5: a ``healthy-devices`` label that counted every device, right on every fixture, where all are healthy).

A label's meaning is the vendor's, but a whole-number label whose name says ``healthy`` or ``unhealthy`` (a word
of its last segment: ``healthy-devices``, ``unhealthy_cards``, ``chips.healthy``) summarises the family's health
reports, so under a fault it must follow them: RAC203 holds it on each fault state, where the healthy devices
are fewer than the devices.
"""

from __future__ import annotations

import re

from rayaccel.records import FamilyInventory

#: The SDK's and Ray's own keys; their meaning is theirs (``rayaccel.io/health`` is a word, not a count).
_OWN_PREFIXES = ("rayaccel.io/", "ray.io/")
_WORDS = re.compile(r"[-_.]")


def health_word(key: str) -> str | None:
    """``healthy`` or ``unhealthy`` where a word of the key's last segment is one, else None."""
    words = set(_WORDS.split(key.rsplit("/", 1)[-1].lower()))
    return "unhealthy" if "unhealthy" in words else "healthy" if "healthy" in words else None


def counts(family: FamilyInventory, word: str) -> set[int]:
    """What a label named ``word`` may count: devices in that state, or (healthy) those not unhealthy and their
    schedulable units, or (unhealthy) those not healthy; a device without a report is not healthy."""
    states = {r.device: r.state for r in family.health}
    of = [states.get(d.id, "unknown") for d in family.devices]
    if word == "healthy":
        return {of.count("healthy"), sum(s != "unhealthy" for s in of), len(family.schedulable_units)}
    return {of.count("unhealthy"), sum(s != "healthy" for s in of)}


def health_count_label_errors(family: FamilyInventory, where: str) -> list[str]:
    """``invariant health-count-label-follows-health``: each vendor label whose name says healthy or unhealthy
    and whose value is a whole number, against the health reports of the same build."""
    wrong = []
    for key, value in sorted(family.labels.items()):
        word = health_word(key)
        if word is None or key.startswith(_OWN_PREFIXES) or not value.isdecimal():
            continue
        allowed = counts(family, word)
        if int(value) not in allowed:
            down = sorted(r.device for r in family.health if r.state != "healthy")
            wrong.append(f"invariant health-count-label-follows-health, {where}: label {key}={value!r}, but "
                         f"{' or '.join(str(n) for n in sorted(allowed))} of the {len(family.devices)} devices are "
                         f"{word} by the health reports (not healthy: {', '.join(down) or 'none'}): a label named "
                         f"for the {word} devices counts them, not every device or an earlier poll's")
    return wrong
