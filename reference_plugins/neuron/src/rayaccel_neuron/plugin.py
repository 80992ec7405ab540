"""The Neuron plugin's hooks: thin, each one calls the module that owns the concept."""

from __future__ import annotations

import copy
import json
import re
from typing import Any

from rayaccel import (
    CloudHint,
    CommandNotFound,
    CommandTimeout,
    Device,
    FamilyDeclaration,
    FamilyInventory,
    HealthReason,
    HealthReport,
    Host,
    MetricSample,
    QuantityRule,
    ResourceContribution,
    SkuRecord,
    SupportInfo,
    Topology,
    TransportSpec,
    hookimpl,
)
from rayaccel.host import OutputTooLarge
from rayaccel.reporting import malformed, plain_int, report_problem
from rayaccel_neuron import cloud, instance, neuronls, sysfs, topology, visibility

#: Below the SDK's per-hook limit, so a hung neuron-ls is reported as such and not as a hung hook.
NEURON_LS_TIMEOUT = 5.0

#: Device names by instance family, for hosts whose driver does not publish info/architecture.
PRODUCT_BY_FAMILY = {"trn1": "Trainium1", "trn1n": "Trainium1", "trn2": "Trainium2", "trn2u": "Trainium2",
                     "inf1": "Inferentia", "inf2": "Inferentia2"}


@hookimpl
def rayaccel_family() -> FamilyDeclaration:
    return FamilyDeclaration(
        name="neuron", vendor="AWS", resource_name="neuron_cores",
        visible_devices_env_var=visibility.VISIBLE_CORES, quantity_rule=QuantityRule(kind="whole"),
        spec_version="1.0", unit="core",
        support=SupportInfo(maintainers=["rayaccel maintainers", "rayaccel Neuron reviewers"],
                            contact="https://github.com/rayaccel/rayaccel/issues", license="Apache-2.0",
                            tested_ray_versions=["2.60.0"]),
    )


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


def _product_name(host: Host, index: int, instance_type: str | None) -> str:
    name = sysfs.read(host, f"{sysfs.device_dir(index, host)}/info/architecture/device_name")
    if name:
        return name
    family = instance_type.split(".")[0] if instance_type else ""
    return PRODUCT_BY_FAMILY.get(family, "AWS Neuron device")


def _pci_device_id(host: Host, bdf: str | None) -> str | None:
    if not bdf:
        return None
    full = bdf if bdf.count(":") == 2 else f"0000:{bdf}"
    raw = sysfs.read(host, f"/sys/bus/pci/devices/{full}/device")
    if raw and not re.fullmatch(r"0x[0-9a-fA-F]{4}", raw):
        malformed(f"/sys/bus/pci/devices/{full}/device", raw, "a PCI device id like 0x7164")
        return None
    return raw.lower() if raw else None


@hookimpl
def rayaccel_discover(host: Host) -> list[Device]:
    infos = read_neuron_ls(host)
    if not infos:
        return []
    instance_type = instance.instance_type(host) or next((i.instance_type for i in infos if i.instance_type), None)
    driver = sysfs.read(host, sysfs.DRIVER_VERSION)
    devices = []
    for info in infos:
        serial = sysfs.read(host, f"{sysfs.device_dir(info.index, host)}/info/serial_number")
        attributes: dict[str, str | int | float | bool] = {
            "nc_count": info.nc_count, "logical_nc_config": info.logical_nc_config,
            "physical_cores": info.nc_count * info.logical_nc_config, "processes": info.processes,
        }
        if info.cpu_affinity:
            attributes["cpu_affinity"] = info.cpu_affinity
        if info.connected_to:
            attributes["connected_to"] = ",".join(str(p) for p in info.connected_to)
        if instance_type:
            attributes["instance_type"] = instance_type
        devices.append(Device(
            index=info.index,
            id=f"neuron-{serial}" if serial else f"neuron{info.index}-{info.bdf or 'nobdf'}",
            product_name=_product_name(host, info.index, instance_type),
            pci_device_id=_pci_device_id(host, info.bdf), pci_bus_id=info.bdf,
            memory_mib=info.memory_bytes // 2**20 if info.memory_bytes else None,
            numa_node=info.numa_node, driver_version=driver,
            units=[str(c) for c in info.core_ids], attributes=attributes,
        ))
    return devices


def _connected(devices: list[Device]) -> dict[int, list[int]]:
    out: dict[int, list[int]] = {}
    for d in devices:
        raw = str(d.attributes.get("connected_to", ""))
        out[d.index] = [n for n in map(plain_int, raw.split(",")) if n is not None]
    return out


@hookimpl
def rayaccel_topology(host: Host, devices: list[Device]) -> Topology:
    cpus = {d.index: str(d.attributes["cpu_affinity"]) if "cpu_affinity" in d.attributes else None
            for d in devices}
    place = instance.ultraserver_place(host, instance.instance_type(host))
    domain = topology.ultraserver_domain(place, devices)
    return Topology(links=topology.neuronlink_links(devices, _connected(devices)),
                    affinities=topology.affinities(devices, cpus), domains=[domain] if domain else [])


@hookimpl
def rayaccel_health(host: Host, devices: list[Device]) -> list[HealthReport]:
    reports = []
    for device in devices:
        if not sysfs.device_present(host, device.index):
            reports.append(HealthReport(device=device.id, state="unhealthy", reasons=[HealthReason(
                code="neuron-device-lost", fatal=True,
                message=f"Neuron device {device.index} ({device.pci_bus_id}) is gone from the driver's sysfs")]))
            continue
        ecc = sysfs.ecc_counters(host, device.index)
        if not ecc.readable:
            # No ECC counter published: errors would go unseen, so the device is not called healthy.
            reports.append(HealthReport(device=device.id, state="unknown", reasons=[HealthReason(
                code="neuron-ecc-unreadable", message=f"the driver publishes no uncorrected-ECC counters for Neuron "
                f"device {device.index} ({sysfs.device_dir(device.index, host)}/stats/hardware): ECC errors cannot "
                "be seen")]))
            continue
        reasons = []
        if ecc.mem_uncorrected:
            reasons.append(HealthReason(code="neuron-hbm-ecc-uncorrected", fatal=True, message=(
                f"{ecc.mem_uncorrected} unrepairable uncorrected ECC events in device memory (HBM)")))
        if ecc.sram_uncorrected:
            reasons.append(HealthReason(code="neuron-sram-ecc-uncorrected", fatal=True, message=(
                f"{ecc.sram_uncorrected} uncorrected ECC events in on-chip SRAM")))
        if ecc.mem_repairable_uncorrected:
            reasons.append(HealthReason(code="neuron-hbm-ecc-repairable", message=(
                f"{ecc.mem_repairable_uncorrected} repairable uncorrected HBM ECC events: the rows are repaired "
                "at the next device reset")))
        state = ("unhealthy" if any(r.fatal for r in reasons) else "degraded") if reasons else "healthy"
        reports.append(HealthReport(device=device.id, state=state, reasons=reasons))
    return reports


@hookimpl
def rayaccel_metrics(host: Host, devices: list[Device]) -> list[MetricSample]:
    # NeuronCore utilisation comes only from neuron-monitor, a streaming daemon: not sampled here.
    samples = []
    for device in devices:
        if device.memory_mib:
            samples.append(MetricSample(device=device.id, name="memory_total", unit="bytes",
                                        value=device.memory_mib * 2**20))
        used = sysfs.device_memory_used(host, device.index)
        if used is not None:
            samples.append(MetricSample(device=device.id, name="memory_used", unit="bytes", value=used))
        ecc = sysfs.ecc_counters(host, device.index)
        if ecc.mem_uncorrected is not None or ecc.sram_uncorrected is not None:
            samples.append(MetricSample(device=device.id, name="ecc_errors_uncorrected", unit="count",
                                        value=ecc.uncorrected))
    return samples


@hookimpl
def rayaccel_resources(host: Host, devices: list[Device], topology: Topology) -> ResourceContribution:
    return ResourceContribution(accelerator_type=cloud.ACCELERATOR_TYPE)


@hookimpl
def rayaccel_labels(host: Host, inventory: FamilyInventory) -> dict[str, str]:
    labels = {}
    first = inventory.devices[0] if inventory.devices else None
    if first is not None:
        if "instance_type" in first.attributes:
            labels["aws.amazon.com/neuron.instance-type"] = str(first.attributes["instance_type"])
        labels["aws.amazon.com/neuron.logical-nc-config"] = str(first.attributes.get("logical_nc_config", 1))
    return labels


@hookimpl
def rayaccel_parse_visible(value: str) -> list[str]:
    return visibility.parse_visible_cores(value)


@hookimpl
def rayaccel_transports() -> list[TransportSpec]:
    # NeuronLink has no Ray tensor transport. EFA does, for host-staged tensors: Ray's built-in NIXL,
    # whose libfabric backend runs over EFA. Neuron device memory itself is not registered with it.
    return [TransportSpec(name="NIXL", devices=["cpu"], link_kinds=["efa"], one_sided=True,
                          manager_class="ray.experimental.rdt.nixl_tensor_transport:NixlTensorTransport",
                          builtin_in_ray=True)]


@hookimpl
def rayaccel_cloud_hints(provider: str, instance_type: str) -> CloudHint | None:
    return cloud.cloud_hint(provider, instance_type)


@hookimpl
def rayaccel_fixture_for_sku(fixture: dict[str, Any], sku: SkuRecord) -> dict[str, Any]:
    """Make the fixture's devices the SKU's: neuron-ls memory_size, sysfs device_name, PCI device id."""
    data = copy.deepcopy(fixture)
    host = data.setdefault("host", {})
    files: dict[str, str] = host.setdefault("files", {})
    for command in host.get("commands", {}).values():
        try:
            entries = json.loads(command.get("stdout", ""))
        except (json.JSONDecodeError, TypeError):
            continue
        # Before Neuron 2.34 a device list; from 2.34 an object holding it (see neuronls.DEVICE_LIST_KEYS).
        listed = entries if isinstance(entries, list) else next(
            (entries[k] for k in neuronls.DEVICE_LIST_KEYS if isinstance(entries.get(k), list)), None) \
            if isinstance(entries, dict) else None
        if listed is not None and sku.memory_mib:
            for entry in listed:
                if isinstance(entry, dict):
                    entry["memory_size"] = sku.memory_mib * 2**20
            command["stdout"] = json.dumps(entries, indent=4) + "\n"
    name = sku.match.product_names[0] if sku.match.product_names else sku.marketing_name
    pci_id = sku.match.pci_device_ids[0].lower() if sku.match.pci_device_ids else None
    for path in list(files):
        if path.endswith("/info/architecture/device_name"):
            files[path] = name + "\n"
        elif path.startswith("/sys/bus/pci/devices/") and path.endswith("/device"):
            if pci_id:
                files[path] = pci_id + "\n"
            else:
                del files[path]
    return data
