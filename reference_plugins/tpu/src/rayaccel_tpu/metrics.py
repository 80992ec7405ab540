"""Per-chip metrics from the GKE TPU device plugin's Prometheus endpoint (``$TPU_DEVICE_PLUGIN_ADDR``).

The same endpoint Ray's dashboard scrapes. Samples carry ``accelerator_id="<id>-<n>"``; tensorcore and
memory-bandwidth utilisation are indexed by the chip on this host, memory and duty cycle by the chip's
index in the slice, so the latter are mapped onto host indices in order (as Ray does). Off GKE there is
no such endpoint, and no metric is made up.
"""

from __future__ import annotations

from collections.abc import Sequence

# Imported with the plugin, not in the hook: importing prometheus_client registers its process collector, which
# reads /proc/self/stat and /proc/stat; inside rayaccel_metrics that is I/O around the Host seam (RAC109).
from prometheus_client.parser import text_string_to_metric_families

from rayaccel import Device, Host, HttpUnavailable, MetricSample, report_problem

ENV_ADDR = "TPU_DEVICE_PLUGIN_ADDR"
TIMEOUT = 1.0

HOST_INDEXED = {"tensorcore_utilization": ("utilization", "percent"),
                "memory_bandwidth_utilization": ("vendor.memory_bandwidth_utilization", "percent")}
SLICE_INDEXED = {"memory_used": ("memory_used", "bytes"), "memory_total": ("memory_total", "bytes"),
                 "duty_cycle": ("vendor.duty_cycle", "percent")}


def parse_device_plugin_metrics(text: str) -> dict[int, dict[str, tuple[str, float]]]:
    """Host chip index -> metric name -> (unit, value). Raises ValueError on text that is not Prometheus."""
    host: dict[int, dict[str, tuple[str, float]]] = {}
    other: dict[int, dict[str, tuple[str, float]]] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            accelerator_id = sample.labels.get("accelerator_id")
            if not accelerator_id or "-" not in accelerator_id:
                continue
            index = int(accelerator_id.rsplit("-", 1)[1])
            if sample.name in HOST_INDEXED:
                name, unit = HOST_INDEXED[sample.name]
                host.setdefault(index, {})[name] = (unit, float(sample.value))
            elif sample.name in SLICE_INDEXED:
                name, unit = SLICE_INDEXED[sample.name]
                other.setdefault(index, {})[name] = (unit, float(sample.value))
    if other and host and len(other) == len(host):
        for global_index, local_index in zip(sorted(other), sorted(host), strict=True):
            host[local_index].update(other[global_index])
    elif other and not host:
        host = {local: other[g] for local, g in enumerate(sorted(other))}
    return host


def sample_metrics(host: Host, devices: Sequence[Device]) -> list[MetricSample]:
    addr = host.getenv(ENV_ADDR)
    if not addr:
        return []
    url = f"http://{addr}/metrics"
    fix = f"check the GKE TPU device plugin and {ENV_ADDR}"
    try:
        response = host.http_get(url, timeout=TIMEOUT)
    except HttpUnavailable as e:
        report_problem("metrics-unavailable", f"the TPU device plugin's metrics did not answer ({str(e)[:120]}); "
                       "no TPU metrics this time", fix=fix)
        return []
    if response.status != 200:
        report_problem("metrics-unavailable", f"GET {url} answered HTTP {response.status}; no TPU metrics this time",
                       fix=fix)
        return []
    try:
        per_chip = parse_device_plugin_metrics(response.body)
    except (ValueError, TypeError) as e:
        # A garbled scrape is a missing sample, not a device fault: reported, not silent.
        report_problem("metrics-unavailable", f"GET {url} answered text that is not Prometheus metrics "
                       f"({type(e).__name__}: {str(e)[:80]}); no TPU metrics this time", fix=fix)
        return []
    by_index = {d.index: d for d in devices}
    return [MetricSample(device=by_index[i].id, name=name, unit=unit, value=value)
            for i, metrics in sorted(per_chip.items()) if i in by_index
            for name, (unit, value) in sorted(metrics.items())]
