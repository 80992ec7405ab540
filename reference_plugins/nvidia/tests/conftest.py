"""Shared set-up for the NVIDIA plugin's tests."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _nvml_gives_up_quickly(monkeypatch: pytest.MonkeyPatch) -> None:
    # A wedged driver (the nvml-hang fault) must be given up on quickly in tests; the default is seconds. A test
    # that needs another bound sets its own.
    monkeypatch.setenv("RAYACCEL_NVIDIA_NVML_TIMEOUT", "1")
