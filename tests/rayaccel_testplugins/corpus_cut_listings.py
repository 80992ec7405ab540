"""Corpus mutants that take what they could read of a tool's listing cut off mid-line for the whole (held-out
round 6: a cut ``hl-smi -n link`` listing), two shapes: a link listing whose unreadable lines are skipped (the
links after the cut are gone), and a status listing whose cards it no longer names are taken for lost. RAC204's
``a-cut-listing-is-reported`` kills both; every fixture records whole answers.

Each reads one more ``acme-smi`` listing, one line per pair of cards (their ids and lanes) or per card (its id and
state), as a tool prints a table; its fixture's host answers it.

Imported by tests/conformance/test_conformance_corpus.py (``corpus.MUTANT_MODULES``); each is bound here under
its name so a Ray node or a fresh process loads it (``c-link-listing-skips-cut-line`` as
``c_link_listing_skips_cut_line``).
"""

from __future__ import annotations

import re

from rayaccel import Device, HealthReason, HealthReport, Host, Topology
from rayaccel_testplugins.corpus import Healthy, _card_id, add_import_defect, read_machine, tool_output, write_machine

LINKS, STATUS = ["acme-smi", "links"], ["acme-smi", "status"]
_LINK_LINE = re.compile(r"^(\S+) (\S+) lanes=(\d+)$")
_STATUS_LINE = re.compile(r"^(\S+): (ok|fatal)$")


def with_listing(plugin: str, argv: list[str], stdout: str) -> None:
    """The plugin's fixture with ``argv`` answering ``stdout`` (written atomically, where it does not yet)."""
    data = read_machine(plugin)
    command = " ".join(argv)
    if (data["host"]["commands"].get(command) or {}).get("stdout") == stdout:
        return
    data["host"]["commands"][command] = {"stdout": stdout, "returncode": 0}
    write_machine(plugin, "acme-4", data)


def listing(host: Host, argv: list[str]) -> list[str] | None:
    stdout = tool_output(host, argv, timeout=1.0)
    return None if stdout is None else stdout.splitlines()


class LinkListingSkipsCutLine(Healthy):
    DEFECT = ("links are the pairs `acme-smi links` lists, a line it cannot read skipped: a listing cut off mid-line "
              "loses the pairs after the cut, and the mesh looks partial")
    KILLED_BY = ("RAC204", "invariant a-cut-listing-is-reported")

    def __init__(self, name: str) -> None:
        super().__init__(name)
        pairs = [(_card_id(i), _card_id(j)) for i in range(4) for j in range(i + 1, 4)]
        with_listing(name, LINKS, "".join(f"{a} {b} lanes=4\n" for a, b in pairs))

    def rayaccel_topology(self, host: Host, devices: list[Device]) -> Topology:
        found = super().rayaccel_topology(host, devices)
        lines = listing(host, LINKS)
        if lines is None:
            return found
        lanes = {}
        for line in lines:
            match = _LINK_LINE.match(line.strip())
            if match:  # the defect: an unreadable line is skipped, not reported
                lanes[frozenset(match.group(1, 2))] = int(match.group(3))
        return found.model_copy(update={"links": [ln.model_copy(update={"lanes": lanes[frozenset((ln.a, ln.b))]})
                                                  for ln in found.links if frozenset((ln.a, ln.b)) in lanes]})


class StatusListingMissingAsLost(Healthy):
    DEFECT = ("a card `acme-smi status` does not name is taken for lost: a listing cut off mid-line makes the cards "
              "after the cut unhealthy, and nothing says the listing was cut")
    KILLED_BY = ("RAC204", "invariant a-cut-listing-is-reported")

    def __init__(self, name: str) -> None:
        super().__init__(name)
        with_listing(name, STATUS, "".join(f"{_card_id(i)}: ok\n" for i in range(4)))

    def rayaccel_health(self, host: Host, devices: list[Device]) -> list[HealthReport]:
        reports = super().rayaccel_health(host, devices)
        lines = listing(host, STATUS)
        if lines is None:
            return reports
        named = {m.group(1) for m in (_STATUS_LINE.match(line.strip()) for line in lines) if m}
        return [r if d.id in named else HealthReport(device=d.id, state="unhealthy", reasons=[
            HealthReason(code="acme-lost", message="acme-smi status does not list the card", fatal=True)])
            for r, d in zip(reports, devices, strict=True)]


for _cls in (LinkListingSkipsCutLine, StatusListingMissingAsLost):
    _plugin = add_import_defect(_cls)
    globals()[_plugin.name.replace("-", "_")] = _plugin
