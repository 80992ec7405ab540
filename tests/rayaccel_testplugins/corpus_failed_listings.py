"""Corpus mutants that take a vendor interface that cannot answer for an answer (held-out round 7: a failing device
listing taken for every device lost, a library that raises taken for a machine without devices), two shapes each:
a command that fails (``acme-smi`` exiting non-zero, as nvidia-smi exits 9 when it cannot reach its driver) and a
library whose calls raise (as pynvml raises ``NVMLError_DriverNotLoaded``). RAC204's
``a-failed-listing-loses-nothing`` kills the first two, ``a-failed-interface-is-reported`` the other two; every
fixture records a tool and a library that answer.

Imported by tests/conformance/test_conformance_corpus.py (``corpus.MUTANT_MODULES``); each is bound here under
its name so a Ray node or a fresh process loads it (``c-status-failure-as-all-lost`` as
``c_status_failure_as_all_lost``).
"""

from __future__ import annotations

from typing import Any

from rayaccel import Device, HealthReason, HealthReport, Host, HostError, LibraryAdapter, LibraryUnavailable
from rayaccel_testplugins.corpus import TOOL, Healthy, _card_id, add_import_defect, read_machine, write_machine
from rayaccel_testplugins.corpus_cut_listings import STATUS, with_listing

LIBRARY = "acmelib"


class CardLibrary:
    """ACME's management library, simulated: the cards it enumerates, by uuid (``cards`` in the fixture), and the
    driver's version (``driver_version``)."""

    def __init__(self, data: dict[str, Any]) -> None:
        self._cards = [str(card) for card in data.get("cards") or []]
        self._driver = data.get("driver_version")

    def driver_version(self) -> str | None:
        return None if self._driver is None else str(self._driver)

    def card_count(self) -> int:
        return len(self._cards)

    def card_uuids(self) -> list[str]:
        return list(self._cards)


def _no_real_library() -> Any:
    raise LibraryUnavailable(f"{LIBRARY}: simulated only")


ACME_LIB = LibraryAdapter(LIBRARY, _no_real_library, CardLibrary)


def with_library(plugin: str) -> None:
    """The plugin's fixture with acmelib enumerating its four cards under the driver acme-smi names (written
    atomically, where it does not yet)."""
    data = read_machine(plugin)
    library = {"cards": [_card_id(i) for i in range(4)], "driver_version": "3.1.4"}
    if (data["host"].get("libraries") or {}).get(LIBRARY) == library:
        return
    data["host"].setdefault("libraries", {})[LIBRARY] = library
    write_machine(plugin, "acme-4", data)


def _all_lost(devices: list[Device], why: str) -> list[HealthReport]:
    return [HealthReport(device=d.id, state="unhealthy", reasons=[HealthReason(code="acme-lost", message=why,
                                                                               fatal=True)]) for d in devices]


class StatusFailureAsAllLost(Healthy):
    DEFECT = ("`acme-smi status` exiting non-zero (the tool cannot reach the driver) is taken for every card lost: "
              "health polled while the tool fails drains the node with a fatal loss of every card")
    KILLED_BY = ("RAC204", "invariant a-failed-listing-loses-nothing")

    def __init__(self, name: str) -> None:
        super().__init__(name)
        with_listing(name, STATUS, "".join(f"{_card_id(i)}: ok\n" for i in range(4)))

    def rayaccel_health(self, host: Host, devices: list[Device]) -> list[HealthReport]:
        try:
            failed = host.run(STATUS, timeout=1.0).returncode != 0
        except HostError:
            failed = False  # a hang: asked again next poll
        if failed:  # the defect: the tool's failure read as the cards' answer
            return _all_lost(devices, "acme-smi status cannot list the cards")
        return super().rayaccel_health(host, devices)


class LibraryErrorAsAllLost(Healthy):
    DEFECT = ("acmelib raising when asked for its cards (the driver gone from under it) is taken for every card "
              "lost: health polled while the library fails drains the node with a fatal loss of every card")
    KILLED_BY = ("RAC204", "invariant a-failed-listing-loses-nothing")

    def __init__(self, name: str) -> None:
        super().__init__(name)
        with_library(name)

    def rayaccel_health(self, host: Host, devices: list[Device]) -> list[HealthReport]:
        try:
            listed = set(host.library(ACME_LIB).card_uuids())
        except LibraryUnavailable:
            return super().rayaccel_health(host, devices)
        except Exception:  # the defect: the library's failure read as no card being there
            listed = set()
        lost = [d for d in devices if d.id not in listed]
        reports = super().rayaccel_health(host, devices)
        gone = _all_lost(lost, "acmelib no longer enumerates the card")
        return [next((g for g in gone if g.device == r.device), r) for r in reports]


class LibraryErrorAsNoCards(Healthy):
    DEFECT = ("acmelib raising on its card count is taken for a machine without cards: discovery finds none and "
              "nothing says the library failed (the node silently offers no card)")
    KILLED_BY = ("RAC204", "invariant a-failed-interface-is-reported")

    def __init__(self, name: str) -> None:
        super().__init__(name)
        with_library(name)

    def rayaccel_discover(self, host: Host) -> list[Device]:
        try:
            count = host.library(ACME_LIB).card_count()
        except LibraryUnavailable:
            count = None
        except Exception:  # the defect: 'the bindings raise when there is no driver'
            return []
        found = super().rayaccel_discover(host)
        return found if count is None else found[:count]


class ToolFailureAsNoDriver(Healthy):
    DEFECT = ("`acme-smi --version` exiting non-zero is taken for 'no driver installed': discovery finds no card "
              "and nothing says the tool failed (nvidia-smi exits 9 when it cannot reach a driver that is there)")
    KILLED_BY = ("RAC204", "invariant a-failed-interface-is-reported")

    def rayaccel_discover(self, host: Host) -> list[Device]:
        try:
            if host.run(TOOL, timeout=1.0).returncode != 0:
                return []  # the defect: the tool's failure read as the machine's answer
        except HostError:
            pass  # a hang: the sysfs version stands in
        return super().rayaccel_discover(host)


for _cls in (StatusFailureAsAllLost, LibraryErrorAsAllLost, LibraryErrorAsNoCards, ToolFailureAsNoDriver):
    _plugin = add_import_defect(_cls)
    globals()[_plugin.name.replace("-", "_")] = _plugin
