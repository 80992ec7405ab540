"""rayaccel conformance: ``pytest --conformance`` grades an accelerator plugin into maturity tiers.

The pytest plugin (:mod:`rayaccel_conformance.plugin`) is registered through the ``pytest11`` entry point of
the ``rayaccel`` distribution. Checks live in :mod:`~rayaccel_conformance.experimental`,
:mod:`~rayaccel_conformance.supported` and :mod:`~rayaccel_conformance.certified`; each has a stable ID, a tier
and an entry in docs/conformance.md.
"""

from __future__ import annotations

from rayaccel_conformance.checks import CHECKS, TIERS, Check, CheckFailed, CheckSkipped, all_checks

__all__ = ["CHECKS", "TIERS", "Check", "CheckFailed", "CheckSkipped", "all_checks"]
