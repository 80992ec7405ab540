"""One probe of the host: the hl-smi query, each device's port states, and the driver's sysfs status.

- ``hl-smi -Q ... -f csv,noheader``: the devices (required; no hl-smi means no Gaudi driver tools, so no
  devices and no problem);
- ``hl-smi -n ports -i <bus>`` / ``hl-smi -n link -i <bus>``: which ports are internal (scale-up, wired
  all-to-all on HLS boards) or external (scale-out), and which are UP;
- ``/sys/class/accel/accel<n>/device/{pci_addr,status}``: the habanalabs driver's device state
  ("operational", "in reset", "needs reset", "disabled", ...), and ``/sys/bus/pci/devices/<bus>/numa_node``.
"""

from __future__ import annotations

import re
import shlex
import time
from collections.abc import Callable

from rayaccel import CommandNotFound, CommandTimeout, HookError, Host, HostError, malformed, report_problem
from rayaccel_gaudi.hlsmi import FIX, QUERY_ARGV, HlSmiParseError, parse_ports, parse_query
from rayaccel_gaudi.readings import GaudiDevice, Snapshot

#: hl-smi talks to every device through the driver; on a loaded 8-card node it takes a second or two.
HL_SMI_TIMEOUT = 5.0
#: All per-device port queries of one probe share this budget, so a slow driver cannot push a hook past the
#: SDK's hook timeout (10 s by default); ports not read in time are simply not reported.
PORTS_BUDGET = 4.0


class HlSmiToolError(HookError):
    """hl-smi hung or failed: reported under its own code with the fix (the SDK's HookError), not as a crash of
    the plugin (``hook-raised``, which is what a bug in the plugin looks like)."""

    def __init__(self, message: str) -> None:
        super().__init__(message, fix=FIX, code="hl-smi-failed")


def _run(host: Host, argv: list[str], required: bool, timeout: float = HL_SMI_TIMEOUT) -> str | None:
    try:
        result = host.run(argv, timeout=timeout)
    except CommandTimeout:
        if not required:
            return None
        raise HlSmiToolError(f"`{shlex.join(argv)}` did not finish within {HL_SMI_TIMEOUT:g}s: hl-smi or the "
                             "habanalabs driver is hung; check `dmesg` for habanalabs errors") from None
    if result.returncode != 0:
        if not required:
            return None
        why = (result.stderr or result.stdout).strip().splitlines()
        raise HlSmiToolError(f"`{shlex.join(argv)}` exited with status {result.returncode}"
                             + (f": {why[0][:120]}" if why else ""))
    if "\ufffd" in result.stdout:
        report_problem("non-utf-8-output", f"`{shlex.join(argv)}` printed bytes that are not UTF-8; lines holding "
                       "them are not used", fix=FIX)
    return result.stdout


def _read(host: Host, path: str) -> str | None:
    try:
        return host.read_text(path).strip()
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError, PermissionError):
        return None


def driver_entries(host: Host) -> dict[str, tuple[str, str]]:
    """PCI address -> (accel<N>, habanalabs device status), from sysfs. Matched by the address the entry names:
    the driver probes modules asynchronously, so accel<N> need not be hl-smi's index N."""
    found = {}
    for path in host.glob("/sys/class/accel/accel*"):
        address, status = _read(host, f"{path}/device/pci_addr"), _read(host, f"{path}/device/status")
        if address and status:
            found[address.lower()] = (path.rsplit("/", 1)[-1], status.lower())
    return found


def probe(host: Host, port_types: bool = False, port_states: bool = False) -> Snapshot | None:
    """The devices; with ``port_types`` / ``port_states`` also each device's ``-n ports`` / ``-n link``."""
    try:
        text = _run(host, list(QUERY_ARGV), required=True)
    except CommandNotFound:
        return None
    statuses = driver_entries(host)
    deadline = time.monotonic() + PORTS_BUDGET
    wanted = [("ports", port_types), ("link", port_states)]
    devices = []
    aips = parse_query(text or "")
    if len(aips) != len(statuses) and statuses:
        # hl-smi cut short, empty, or unable to read a device the driver has: the count would be silently wrong.
        report_problem("hl-smi-disagrees", f"`{shlex.join(QUERY_ARGV)}` reported {len(aips)} devices but the "
                       f"habanalabs driver's sysfs (/sys/class/accel) shows {len(statuses)}", severity="error", fix=FIX)
    unanswered: list[str] = []
    hung = False
    for aip in aips:
        accel, status = statuses.get(aip.bus_id, (None, None))
        device = GaudiDevice(aip=aip, driver_status=status, accel=accel)
        for option, target in (("ports", device.port_types), ("link", device.port_states)):
            left = deadline - time.monotonic()
            if not dict(wanted)[option] or left <= 0:
                continue
            argv = ["hl-smi", "-n", option, "-i", aip.bus_id]
            if hung:  # one port query hung: the driver is stuck, the others would hang as well
                unanswered.append(shlex.join(argv))
                continue
            answer: str | None = None
            try:
                result = host.run(argv, timeout=min(HL_SMI_TIMEOUT, left))
            except CommandTimeout:
                hung = True
            except HostError:  # not found, or an answer over the host's size limit: these ports are unknown
                pass
            else:
                answer = result.stdout if result.returncode == 0 else None
            try:
                ports = parse_ports(answer, shlex.join(argv)) if answer is not None else {}
            except HlSmiParseError as e:
                report_problem("malformed-output", f"{e}; the ports of module {aip.module_id} are unknown", fix=FIX)
                ports = {}
            if not ports:
                unanswered.append(shlex.join(argv))
            target.update(ports)
        numa_path = f"/sys/bus/pci/devices/{aip.bus_id}/numa_node"
        numa = _read(host, numa_path)
        device.numa_node = int(numa) if numa and re.fullmatch(r"[0-9]{1,4}", numa) else None  # -1: no NUMA node
        if numa and numa != "-1" and device.numa_node is None:
            malformed(numa_path, numa, "a NUMA node number or -1")
        devices.append(device)
    listings: tuple[tuple[str, Callable[[GaudiDevice], dict[int, str]]], ...] = (
        ("-n ports", lambda d: d.port_types), ("-n link", lambda d: d.port_states))
    for what, ports_of in listings:
        counts = {len(ports_of(d)) for d in devices if ports_of(d)}
        if len(counts) > 1:
            # Identical boards have identical port counts: a shorter listing is a cut or garbled answer.
            report_problem("hl-smi-ports-inconsistent", f"`hl-smi {what}` lists {sorted(counts)} ports on different "
                           "modules of one board; a listing was cut short or garbled", fix=FIX)
    if unanswered:
        report_problem("hl-smi-ports-unknown", f"{len(unanswered)} port queries gave no answer (hung, failed or "
                       f"empty), e.g. `{unanswered[0]}`; port-based topology and health are incomplete", fix=FIX)
    return Snapshot(devices=devices)
