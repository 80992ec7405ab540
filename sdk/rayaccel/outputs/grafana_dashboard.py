"""A Grafana dashboard for any vendor's accelerators: the metrics of :mod:`rayaccel.outputs.metric_series`.

Built with grafana-foundation-sdk (typed builders generated from Grafana's dashboard schema), so the JSON is
a dashboard Grafana 11 loads. Every query names the metrics by their catalogue entries, so a renamed metric
cannot leave a panel graphing nothing. Variables: the Prometheus data source, and ``node`` / ``family`` from
``ray_rayaccel_device_info``. ``rayaccel start --head`` writes it beside Ray's own dashboards
(:func:`rayaccel.ray.grafana.install_dashboard`), where Ray's Grafana provisioning picks it up.
"""

from __future__ import annotations

from typing import Any

from rayaccel.outputs.metric_series import (
    FAMILY_DRAINED,
    HEALTH,
    HEALTH_REASON,
    INFO,
    LINK_BANDWIDTH,
    SCHEDULABLE_PARTITIONS,
    SCHEDULABLE_UNITS,
    STANDARD,
    MetricFamily,
)
from rayaccel.transports import metrics as transport_metrics

UID = "rayaccel-accelerators"
TITLE = "Accelerators (rayaccel)"
FILE_NAME = "rayaccel_accelerators_grafana_dashboard.json"
#: Every registered tensor transport's metrics (rayaccel.transports.metrics), as Ray exports them.
TRANSPORT_BYTES = f"ray_{transport_metrics.BYTES}"
TRANSPORT_TRANSFERS = f"ray_{transport_metrics.TRANSFERS}"
TRANSPORT_FAILURES = f"ray_{transport_metrics.FAILURES}"
TRANSPORT_LATENCY = f"ray_{transport_metrics.LATENCY}"

SELECT = '{node=~"$node", family=~"$family"}'
DEVICE_LEGEND = "{{family}} {{device}} ({{node}})"


def _metric(quantity: str) -> MetricFamily:
    return STANDARD[quantity][0]


def panels() -> list[tuple[str, list[tuple[str, str, str, str]]]]:
    """Rows of (title, unit, expression, legend) panels: what the dashboard shows, as data tests can read."""
    util, used, cap = _metric("utilization"), _metric("memory_used"), _metric("memory_total")
    power, temp = _metric("power"), _metric("temperature")
    tx, rx = _metric("interconnect_tx"), _metric("interconnect_rx")
    ecc_c, ecc_u = _metric("ecc_errors_corrected"), _metric("ecc_errors_uncorrected")
    return [
        ("Health", [
            ("Device health (0 healthy, 1 unknown, 2 degraded, 3 unhealthy)", "short",
             f"{HEALTH.exported}{SELECT}", DEVICE_LEGEND),
            ("Schedulable units per family", "short", f"sum by (family) ({SCHEDULABLE_UNITS.exported}{SELECT})",
             "{{family}}"),
            ("Schedulable partitions per profile", "short",
             f"sum by (family, resource) ({SCHEDULABLE_PARTITIONS.exported}{SELECT})", "{{resource}}"),
            ("Devices per SKU", "short", f"count by (family, sku) ({INFO.exported}{SELECT})", "{{family}} {{sku}}"),
        ]),
        ("Health policy", [
            ("Reasons reported, by the action taken (drain, degrade, ignore, count)", "short",
             f"count by (family, reason, action) ({HEALTH_REASON.exported}{SELECT})",
             "{{family}} {{reason}}: {{action}}"),
            ("Nodes with nothing left of a family (every device drained: replace them)", "short",
             f"sum by (family) ({FAMILY_DRAINED.exported}{SELECT})", "{{family}}"),
        ]),
        ("Utilisation and memory", [
            ("Utilisation", "percentunit", f"{util.exported}{SELECT}", DEVICE_LEGEND),
            ("Memory in use", "bytes", f"{used.exported}{SELECT}", DEVICE_LEGEND),
            ("Memory in use (fraction of capacity)", "percentunit",
             f"{used.exported}{SELECT} / {cap.exported}{SELECT}", DEVICE_LEGEND),
        ]),
        ("Power and temperature", [
            ("Power", "watt", f"{power.exported}{SELECT}", DEVICE_LEGEND),
            ("Temperature", "celsius", f"{temp.exported}{SELECT}", DEVICE_LEGEND),
            ("Power per node", "watt", f"sum by (node) ({power.exported}{SELECT})", "{{node}}"),
        ]),
        ("Interconnect and links", [
            ("Interconnect send", "Bps", f"{tx.exported}{SELECT}", DEVICE_LEGEND),
            ("Interconnect receive", "Bps", f"{rx.exported}{SELECT}", DEVICE_LEGEND),
            ("Link bandwidth by kind (per node, one direction)", "Bps",
             f"sum by (node, kind) ({LINK_BANDWIDTH.exported}{SELECT})", "{{kind}} ({{node}})"),
        ]),
        ("Errors", [
            ("Corrected ECC errors per second", "short", f"rate({ecc_c.exported}{SELECT}[5m])", DEVICE_LEGEND),
            ("Uncorrected ECC errors per second", "short", f"rate({ecc_u.exported}{SELECT}[5m])", DEVICE_LEGEND),
        ]),
        ("Tensor transports", [
            ("Bytes moved per second", "Bps", f"sum by (transport, direction) (rate({TRANSPORT_BYTES}[5m]))",
             "{{transport}} {{direction}}"),
            ("Transfers per second", "short", f"sum by (transport, direction) (rate({TRANSPORT_TRANSFERS}[5m]))",
             "{{transport}} {{direction}}"),
            ("Failed transfers per second", "short",
             f"sum by (transport, direction, step) (rate({TRANSPORT_FAILURES}[5m]))",
             "{{transport}} {{direction}} {{step}}"),
            ("Transfer latency, 99th percentile", "s",
             f"histogram_quantile(0.99, sum by (transport, direction, le) (rate({TRANSPORT_LATENCY}_bucket[5m])))",
             "p99 {{transport}} {{direction}}"),
        ]),
    ]


def dashboard_json() -> dict[str, Any]:
    """The dashboard as Grafana's JSON model."""
    import json

    from grafana_foundation_sdk.builders import dashboard, prometheus, timeseries
    from grafana_foundation_sdk.cog.encoder import JSONEncoder
    from grafana_foundation_sdk.models.dashboard import DataSourceRef, VariableRefresh

    source = DataSourceRef(type_val="prometheus", uid="${datasource}")
    board = (dashboard.Dashboard(TITLE).uid(UID).tags(["rayaccel", "ray", "accelerators"]).refresh("30s")
             .time("now-1h", "now").timezone("browser").editable()
             .description("Every vendor's accelerators as rayaccel's health monitor publishes them "
                          "(docs/observability.md)")
             .with_variable(dashboard.DatasourceVariable("datasource").label("Data source").type("prometheus"))
             .with_variable(dashboard.QueryVariable("node").label("Node").datasource(source)
                            .query(f"label_values({INFO.exported}, node)")
                            .refresh(VariableRefresh.ON_TIME_RANGE_CHANGED).multi(True).include_all(True))
             .with_variable(dashboard.QueryVariable("family").label("Family").datasource(source)
                            .query(f"label_values({INFO.exported}, family)")
                            .refresh(VariableRefresh.ON_TIME_RANGE_CHANGED).multi(True).include_all(True)))
    for row, row_panels in panels():
        board = board.with_row(dashboard.Row(row))
        for title, unit, expr, legend in row_panels:
            board = board.with_panel(
                timeseries.Panel().title(title).unit(unit).datasource(source).height(8).span(24 // len(row_panels))
                .with_target(prometheus.Dataquery().ref_id("A").expr(expr).legend_format(legend)))
    data: dict[str, Any] = json.loads(JSONEncoder(sort_keys=True, indent=2).encode(board.build()))
    return data


def dashboard_text() -> str:
    import json

    return json.dumps(dashboard_json(), indent=2, sort_keys=True) + "\n"
