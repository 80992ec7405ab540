"""Shared test set-up: the in-test plugins are importable by subprocesses (CLI, Ray workers) too."""

from __future__ import annotations

import os
from pathlib import Path

TESTS_DIR = Path(__file__).parent

# Subprocesses (the rayaccel CLI, Ray workers) find the test plugins through PYTHONPATH.
os.environ["PYTHONPATH"] = os.pathsep.join(
    [str(TESTS_DIR), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))])
