"""Shared test set-up: the in-test plugins are importable by subprocesses (CLI, Ray workers) too."""

from __future__ import annotations

import os
from pathlib import Path

TESTS_DIR = Path(__file__).parent

# Subprocesses (the rayaccel CLI, Ray workers) find the test plugins through PYTHONPATH.
os.environ["PYTHONPATH"] = os.pathsep.join(
    [str(TESTS_DIR), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))])

# Ray 2.60 turns token authentication on for `ray start` when ~/.ray/auth_token exists (any earlier
# ray.init may have written it). Tests start their own clusters, so run them without auth on every machine.
os.environ.setdefault("RAY_AUTH_MODE", "disabled")
