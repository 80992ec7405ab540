"""One probe of the host: neuron-ls's device list, through the Host seam, with the driver's sysfs as the
fallback when neuron-ls is missing or fails while the driver is loaded. The devices' own sysfs facts (serial,
name, ECC counters, memory use) are read where they are used: :mod:`rayaccel_neuron.discovery`,
:mod:`rayaccel_neuron.health`, :mod:`rayaccel_neuron.metrics`.
"""

from __future__ import annotations

from typing import Any

from rayaccel import CommandNotFound, CommandTimeout, Host, OutputTooLarge, report_problem
from rayaccel_neuron import instance, neuronls, sysfs

#: Below the SDK's per-hook limit, so a hung neuron-ls is reported as such and not as a hung hook.
NEURON_LS_TIMEOUT = 5.0


def _neuron_ls_path(host: Host) -> str | None:
    if host.exists(neuronls.NEURON_LS):
        return neuronls.NEURON_LS
    found = host.which("neuron-ls")
    return str(found) if found else None


def _run_neuron_ls(host: Host, tool: str, args: tuple[str, ...]) -> Any:
    try:
        return host.run([tool, *args], timeout=NEURON_LS_TIMEOUT)
    except CommandTimeout:
        raise neuronls.NeuronLsError(
            f"{tool} {' '.join(args)} did not finish within {NEURON_LS_TIMEOUT:g}s; the Neuron driver may be "
            "stuck (check 'dmesg | grep -i neuron', then reload aws-neuronx-dkms or reboot)") from None
    except OutputTooLarge as e:
        raise neuronls.NeuronLsError(str(e)) from None


def read_neuron_ls(host: Host) -> list[neuronls.NeuronDeviceInfo]:
    """neuron-ls's devices; [] when the driver is absent. Raises NeuronLsError otherwise.

    Neuron 2.34+ takes ``--output-format json``; older tools refuse it and take ``--json-output``, so the new
    flag is tried first. When neuron-ls fails, or is not installed (a container given the driver's devices but
    not aws-neuronx-tools), although the driver's sysfs tree is there, the devices are read from sysfs (with a
    warning) rather than reporting none.
    """
    tool = _neuron_ls_path(host)
    if tool is None:
        return _without_neuron_ls(host)
    failures: list[str] = []
    try:
        for args in (neuronls.NEURON_LS_NEW_ARGS, neuronls.NEURON_LS_ARGS):  # a tool before 2.34 refuses the new flag
            result = _run_neuron_ls(host, tool, args)
            if result.returncode == 0:
                break
            detail = (result.stderr or result.stdout).strip().splitlines()
            failures.append(f"{tool} {' '.join(args)} exited with {result.returncode}: "
                            f"{detail[0] if detail else 'no message'}")
    except CommandNotFound:
        return _without_neuron_ls(host)
    command = f"{tool} {' '.join(args)}"
    if result.returncode != 0:
        if not sysfs.present(host):
            return []  # tools installed, no driver loaded: a host without Neuron devices
        why = "; ".join(failures)
        fallback = sysfs.devices_from_sysfs(host, instance.instance_type(host))
        if not fallback:
            raise neuronls.NeuronLsError(why)
        report_problem("neuron-ls-failed", f"{why}; the {len(fallback)} devices are read from the driver's sysfs "
                       f"({sysfs.root(host)}) instead (no memory size or PCI address)",
                       fix=neuronls.NeuronLsError.FIX)
        return fallback
    if "\ufffd" in result.stdout:
        report_problem("non-utf-8-output", f"{tool} printed bytes that are not UTF-8; fields containing them are "
                       "ignored", fix=neuronls.NeuronLsError.FIX)
    infos = neuronls.parse_neuron_ls(result.stdout)
    in_sysfs = sysfs.device_count(host)
    if in_sysfs != len(infos) and (in_sysfs or infos):
        # The tool and the driver disagree (empty or cut output, a device the tool cannot open): say so.
        report_problem("neuron-ls-disagrees", f"{command} reported {len(infos)} Neuron devices but the driver's "
                       f"sysfs ({sysfs.root(host)}) shows {in_sysfs}", severity="error", fix=neuronls.NeuronLsError.FIX)
    return infos


def _without_neuron_ls(host: Host) -> list[neuronls.NeuronDeviceInfo]:
    """No neuron-ls on this host: the driver's sysfs devices, with a warning; [] when the driver is absent too."""
    if not sysfs.present(host):
        return []  # neither tools nor driver: a host without Neuron devices
    fallback = sysfs.devices_from_sysfs(host, instance.instance_type(host))
    if fallback:
        report_problem("neuron-ls-missing", f"neuron-ls is not installed ({neuronls.NEURON_LS} and PATH) but the "
                       f"Neuron driver is loaded: the {len(fallback)} devices are read from the driver's sysfs "
                       f"({sysfs.root(host)}) instead (no memory size or PCI address)",
                       fix="install aws-neuronx-tools (it provides neuron-ls) on the host or in the container image")
    return fallback
