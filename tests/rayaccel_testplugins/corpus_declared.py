"""Corpus mutants whose declarations and settings part from what the code does (issue 46, found by ``make
mutation`` on the NVIDIA plugin), two shapes each: a health report that disagrees with the reason table the family
declares (RAC264), and a ``RAYACCEL_*`` setting that, set to garbage, falls back to a default without a word
(RAC265).

Round 5 added a transport declared otherwise than its class behaves (found on the NVIDIA plugin's ``one_sided``
flags): Ray's NCCL declared one-sided, and a one-sided transport of the family's own declared two-sided (RAC305,
invariant one-sided-as-its-class).

Imported by tests/conformance/test_conformance_corpus.py (``corpus.MUTANT_MODULES``); each is bound here under
its name so a Ray node or a fresh process loads it (``c-reason-undeclared`` as
``c_reason_undeclared``).
"""

from __future__ import annotations

import os

from rayaccel import Host, ReasonCode, TransportSpec, report_problem
from rayaccel_testplugins.corpus import Healthy, add_import_defect

#: The reason table of acme's health hook (rayaccel_testplugins.acme.rayaccel_health), row for row.
ACME_REASONS = (
    ("acme-lost", "unhealthy", True, "the card fell off the bus"),
    ("acme-counters-unreadable", "unknown", False, "the fatal-error counter cannot be read"),
    ("acme-fatal", "unhealthy", True, "the card counts fatal errors"),
)


def _declare(plugin: Healthy, reasons: tuple[tuple[str, str, bool, str], ...]) -> None:
    plugin.family = plugin.family.model_copy(update={"health_reasons": ReasonCode.table(reasons)})


class ReasonFatalMisdeclared(Healthy):
    DEFECT = ("the reason table says acme-fatal keeps the card in service (fatal false, degraded, copied from a "
              "correctable-error row) while the health hook drains the card for it: operators' health policies, "
              "written from the table, expect the other behaviour")
    KILLED_BY = ("RAC264", "invariant reported-reason-as-declared")

    def __init__(self, name: str) -> None:
        super().__init__(name)
        _declare(self, (*ACME_REASONS[:2], ("acme-fatal", "degraded", False, "fatal errors (the card keeps running)")))


class ReasonUndeclared(Healthy):
    DEFECT = ("the reason table was written before the hook learnt about lost cards: acme-lost is reported but "
              "not declared, so no health policy can name it")
    KILLED_BY = ("RAC264", "which health_reasons does not declare")

    def __init__(self, name: str) -> None:
        super().__init__(name)
        _declare(self, ACME_REASONS[1:])


def _tool_timeout_silently() -> float:
    """RAYACCEL_<plugin>_SMI_TIMEOUT from the process environment; anything unusable is the default, unsaid."""
    try:
        value = float(os.environ.get("RAYACCEL_ACME_SMI_TIMEOUT", "1.0"))
    except ValueError:
        return 1.0  # the defect: the operator's setting is dropped without a word
    return value if 0 < value < 60 else 1.0


class SettingDroppedSilently(Healthy):
    DEFECT = ("RAYACCEL_ACME_SMI_TIMEOUT, the operator's bound on acme-smi, falls back to 1 s on any value it "
              "cannot use, without a word: a typo runs the node with a bound nobody chose")
    KILLED_BY = ("RAC265", "invariant setting-garbage-is-named")

    def tool_version(self, host: Host) -> str | None:
        _tool_timeout_silently()  # read where the tool is run, as a bound would be
        return super().tool_version(host)


class HostSettingUnsaid(Healthy):
    DEFECT = ("RAYACCEL_ACME_RESERVED_CARDS on the host (how many cards the operator keeps for the system) is "
              "parsed as a whole number with 0 for anything else and clamped, without a word: '2 cards' or '-1' "
              "reserves nothing and nobody is told")
    KILLED_BY = ("RAC265", "with RAYACCEL_ACME_RESERVED_CARDS")

    def rayaccel_discover(self, host: Host) -> list:  # type: ignore[type-arg]
        raw = (host.getenv("RAYACCEL_ACME_RESERVED_CARDS") or "0").strip()
        reserved = max(0, int(raw)) if raw.lstrip("-").isdigit() else 0  # the defect: garbage is 0, unsaid
        if reserved > 4:
            report_problem("reserved-cards", f"RAYACCEL_ACME_RESERVED_CARDS={reserved} is more cards than exist",
                           severity="warning")
        return super().rayaccel_discover(host)[reserved:]


class TransportNcclOneSided(Healthy):
    DEFECT = ("Ray's NCCL is declared one-sided (the flag copied from the NIXL line above it): NCCL needs both ends "
              "in a collective group, which path selection and RAC301 then never arrange")
    KILLED_BY = ("RAC305", "invariant one-sided-as-its-class")

    def rayaccel_transports(self) -> list[TransportSpec]:
        return [TransportSpec(name="NCCL", devices=["cuda"], link_kinds=["pcie"], one_sided=True, builtin_in_ray=True,
                              manager_class="ray.experimental.rdt.collective_tensor_transport:NCCLTensorTransport")]


class TransportOwnLeftTwoSided(Healthy):
    DEFECT = ("the family's own file transport, one-sided (the receiver reads what the sender left), is declared "
              "without one_sided, so it defaults to two-sided and is treated as needing a collective group")
    KILLED_BY = ("RAC305", "invariant one-sided-as-its-class")

    def rayaccel_transports(self) -> list[TransportSpec]:
        return [TransportSpec(name="ACME_PIPE", devices=["cpu"], link_kinds=["other"],
                              manager_class="rayaccel_testplugins.acme_wired:AcmeFileTransport")]


c_reason_fatal_misdeclared = add_import_defect(ReasonFatalMisdeclared)
c_reason_undeclared = add_import_defect(ReasonUndeclared)
c_setting_dropped_silently = add_import_defect(SettingDroppedSilently)
c_host_setting_unsaid = add_import_defect(HostSettingUnsaid)
c_transport_nccl_one_sided = add_import_defect(TransportNcclOneSided)
c_transport_own_left_two_sided = add_import_defect(TransportOwnLeftTwoSided)
