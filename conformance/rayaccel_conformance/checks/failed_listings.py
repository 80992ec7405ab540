"""A vendor interface that cannot answer: reported, and never taken for an answer (RAC204's
``a-failed-listing-loses-nothing`` and ``a-failed-interface-is-reported``).

A device listing fails in ways every fleet sees: nvidia-smi exits 9 with "NVIDIA-SMI has failed because it
couldn't communicate with the NVIDIA driver", a tool hangs on a wedged driver, a library's calls raise (pynvml's
``NVMLError_DriverNotLoaded`` for ``NVML_ERROR_DRIVER_NOT_LOADED``, ``NVMLError_Unknown`` for
``NVML_ERROR_UNKNOWN``; amdsmi's ``AmdSmiLibraryException``). What the listing would have said is then unknown,
so two shortcuts are wrong on every such machine and right on every recorded one: health polled with the devices
discovered before (as a health monitor polls) taking the failure for every device lost (a fatal loss drains the
node for a tool that hung once), and discovery taking a library that raises for a machine without devices (zero
devices and nothing said: the node silently offers none). The suite takes both paths on RAC204's scenarios:
every command hanging or printing garbage, the fixture's own ``tool-hang``/``tool-garbage`` faults, and every
library of the fixture raising on each call (``rayaccel_fault``, docs/fixtures.md).
"""

from __future__ import annotations

from typing import Any

from rayaccel.hosts.fixtures import Fixture
from rayaccel.hosts.simulated import LIBRARY_FAULT_KEY
from rayaccel.records import HealthReport, Problem

#: What each library's calls raise in the suite's scenario: the driver gone from under a loaded library, as
#: pynvml raises it (``pynvml.NVMLError_DriverNotLoaded: Driver Not Loaded`` for ``NVML_ERROR_DRIVER_NOT_LOADED``,
#: wookayin/gpustat#110).
LIBRARY_ERROR = "Driver Not Loaded"
EVERY_LIBRARY_RAISES = "every library raises"


def library_failure_patches(fx: Fixture) -> dict[str, dict[str, Any]]:
    """Merge patches making every library of the fixture raise on each call (none: the fixture has no library)."""
    names = [name for name, data in fx.host.libraries.items() if isinstance(data, dict)]
    if not names:
        return {}
    return {EVERY_LIBRARY_RAISES: {"libraries": {name: {LIBRARY_FAULT_KEY: {"raise": LIBRARY_ERROR}}
                                                 for name in names}}}


def unreported_losses(scenario: str, baseline: set[str], devices: set[str], problems: list[Problem]) -> list[str]:
    """Devices the healthy machine has, gone under a failing tool or library with no problem saying why."""
    lost = sorted(baseline - devices)
    if not lost or problems:
        return []
    return [f"invariant a-failed-interface-is-reported, {scenario}: {len(lost)} of the {len(baseline)} devices "
            f"not discovered ({', '.join(lost[:3])}{', ...' if len(lost) > 3 else ''}) and no problem says why: a "
            "vendor interface that raises, hangs or prints garbage is a failure to report (report_problem, or let "
            "the exception reach the SDK), not a machine without devices; zero devices with no problem only when "
            "the vendor interface answers that there are none"]


def losses_from_a_failed_listing(scenario: str, polled: list[HealthReport] | None,
                                 healthy: list[HealthReport]) -> list[str]:
    """Every device the healthy machine does not already report unhealthy, reported unhealthy for a fatal reason
    by health polled with them while the listing fails: the failure taken for every device lost."""
    if not polled:
        return []  # no answer (the hook raised): the SDK reports every device unknown, and the failure
    before = {r.device: r.state for r in healthy}
    candidates = [d for d, state in before.items() if state != "unhealthy"]
    by_id = {r.device: r for r in polled}
    fatal = [d for d in candidates
             if (r := by_id.get(d)) and r.state == "unhealthy" and any(x.fatal for x in r.reasons)]
    if not candidates or len(fatal) < len(candidates):
        return []
    codes = sorted({x.code for d in fatal for x in by_id[d].reasons if x.fatal})
    return [f"invariant a-failed-listing-loses-nothing, {scenario}: rayaccel_health, polled with the devices "
            f"discovered before (as a health monitor polls), reports all {len(fatal)} unhealthy for a fatal reason "
            f"({', '.join(codes)}): while the vendor interface cannot list the devices their health is unknown; "
            "report the failure as a problem and the devices unknown, never every device lost (a fatal loss "
            "drains the node for a tool that failed once)"]
