"""The node's metrics through Ray: the health monitor's series set on ``ray.util.metrics``, at Ray's pace.

Every vendor's numbers reach Ray's Prometheus endpoint and dashboard under the same names (one metric per
quantity in base units: :mod:`rayaccel.outputs.metric_series` names them, docs/observability.md lists them).
Ray exports only a gauge's last value of each metrics report (``metrics_report_interval_ms``) and then forgets
it, so the plugins' metrics are sampled twice per report (or every poll, when polls are that rare) and, when
polls are rarer than half a report, the last sample is set again between polls.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from typing import Any

from rayaccel.outputs.metric_series import HEALTH, Series, counter_increment, node_series
from rayaccel.records import HEALTH_ORDER, NodeInventory


class SeriesPublisher:
    """Publishes :class:`~rayaccel.outputs.metric_series.Series` through ``ray.util.metrics``, making each
    metric on first use (vendor-specific ones are known only when a plugin reports them). A counter grows by
    what the device's running count grew since the last poll."""

    def __init__(self) -> None:
        self._metrics: dict[str, Any] = {}
        self._counts: dict[tuple[str, tuple[tuple[str, str], ...]], float] = {}
        self._gauges: dict[tuple[str, tuple[tuple[str, str], ...]], float] = {}  # the value each was last set to

    def publish(self, series: Sequence[Series], changed_only: bool = False) -> None:
        """Set each gauge and grow each counter. ``changed_only``: leave a gauge alone when it already holds
        the value. Ray exports the values a gauge was set to since its last report and then forgets them
        (``metrics_report_interval_ms``), so every series needs a full publish within each report interval."""
        from ray.util.metrics import Counter, Gauge

        for one in series:
            metric: Any = self._metrics.get(one.metric.name)
            if metric is None:
                kind = Counter if one.metric.kind == "counter" else Gauge
                metric = kind(one.metric.name, one.metric.help, tag_keys=one.metric.labels)
                self._metrics[one.metric.name] = metric
            if one.metric.kind == "counter":
                key = (one.metric.name, tuple(sorted(one.labels.items())))
                grown = counter_increment(self._counts.get(key), one.value)
                self._counts[key] = one.value
                if grown > 0:
                    metric.inc(grown, tags=one.labels)
            else:
                key = (one.metric.name, tuple(one.labels.items()))
                if changed_only and self._gauges.get(key) == one.value:
                    continue
                self._gauges[key] = one.value
                metric.set(one.value, tags=one.labels)


def metrics_report_interval() -> float:
    """Seconds between a Ray process's metric reports to its node's agent (Ray's ``metrics_report_interval_ms``,
    10 s unless the cluster sets it)."""
    import importlib

    raylet: Any = importlib.import_module("ray._raylet")  # compiled: no type information
    return float(raylet.Config.metrics_report_interval_ms()) / 1000


def poll_series(inventory: NodeInventory, node_id: str, vanished: Sequence[tuple[str, str]]) -> list[Series]:
    """One poll's series: the inventory's, and each vanished device (device, family) as unhealthy."""
    series = node_series(inventory, node_id)
    series.extend(Series(HEALTH, {"node": node_id, "family": family, "device": device},
                         float(HEALTH_ORDER["unhealthy"])) for device, family in vanished)
    return series


class MetricCadence:
    """When a monitor polling every ``interval`` seconds samples the plugins' metrics, and sets the last
    sample's series again between polls, so each Ray metrics report carries every series."""

    def __init__(self, interval: float) -> None:
        report = metrics_report_interval()
        self._interval = interval
        self.sample_every = max(interval, report / 2)
        self._sampled_at = -math.inf
        # Polls rarer than half a report: the last sample's series are set again between polls.
        self._resend_every = report / 2 if interval > report / 2 else math.inf
        self._series: list[Series] = []  # the last sample's series
        self._sent_at = -math.inf  # when they were last set
        self._publisher = SeriesPublisher()

    def sample_now(self, samples: int) -> bool:
        """Whether this poll samples the metrics (``samples``: how many polls sampled so far): half a poll early
        rather than late; the first two polls both sample, so rates (two samples) are in the first report too."""
        now = time.monotonic()
        sample = now - self._sampled_at >= self.sample_every - self._interval / 2 or samples < 2
        if sample:
            self._sampled_at = now
        return sample

    def publish(self, series: list[Series], sampled: bool) -> None:
        """A poll's series: all of a sample's; between samples only what changed (the next sample sets all)."""
        self._publisher.publish(series, changed_only=not sampled)
        if sampled:
            self._series, self._sent_at = series, time.monotonic()

    def resend_at(self) -> float:
        """When (``time.monotonic()``) the last sample's series are due to be set again."""
        return self._sent_at + self._resend_every

    def resend(self) -> None:
        self._publisher.publish(self._series)
        self._sent_at = time.monotonic()
