"""rayaccel conformance: ``pytest --conformance`` grades an accelerator plugin into maturity tiers.

The pytest plugin (:mod:`rayaccel_conformance.plugin`) is registered through the ``pytest11`` entry point of
the ``rayaccel`` distribution; ``rayaccel certify`` is :mod:`rayaccel_conformance.cli`. Three packages, by
layer: :mod:`~rayaccel_conformance.report` (tiers, the report, attestations) above
:mod:`~rayaccel_conformance.checks` (one module per tier; each check has a stable ID, a tier and an entry in
docs/conformance.md) above :mod:`~rayaccel_conformance.harness` (the subject, the side-effect guard, the
shared Ray cluster), all on :mod:`~rayaccel_conformance.registry`.
"""

from __future__ import annotations

from rayaccel_conformance.checks import all_checks
from rayaccel_conformance.registry import CHECKS, TIERS, Check, CheckFailed, CheckSkipped

__all__ = ["CHECKS", "TIERS", "Check", "CheckFailed", "CheckSkipped", "all_checks"]
