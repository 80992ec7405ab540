"""The accelerators' Grafana dashboard: built with grafana-foundation-sdk, every query names catalogued metrics
and every catalogued device metric is on a panel with its unit. (That ``rayaccel start`` writes it beside Ray's
dashboards, and that Prometheus answers every query, is tested in tests/outputs/test_metrics_prometheus.py.)"""

from __future__ import annotations

import re

from rayaccel.outputs.grafana_dashboard import UID, dashboard_json, panels
from rayaccel.outputs.metric_series import all_metric_families

TRANSPORT = {"ray_rayaccel_transport_bytes_total", "ray_rayaccel_transport_transfers_total",
             "ray_rayaccel_transport_failures_total", "ray_rayaccel_transport_latency_seconds_bucket"}


def test_the_dashboard_is_grafana_json_with_one_panel_per_query():
    board = dashboard_json()
    assert board["uid"] == UID and board["schemaVersion"] >= 39
    graphs = [p for p in board["panels"] if p["type"] == "timeseries"]
    assert len(graphs) == sum(len(row) for _, row in panels())
    for panel in graphs:
        assert panel["fieldConfig"]["defaults"]["unit"], panel["title"]
        (target,) = panel["targets"]
        assert target["refId"] == "A" and target["expr"]
        assert panel["datasource"] == {"type": "prometheus", "uid": "${datasource}"}
    assert [v["name"] for v in board["templating"]["list"]] == ["datasource", "node", "family"]


def test_every_query_names_catalogued_metrics_and_every_metric_is_shown():
    catalogued = {m.exported for m in all_metric_families()} | TRANSPORT
    named = {name for _, row in panels() for _, _, expr, _ in row for name in re.findall(r"ray_rayaccel_\w+", expr)}
    assert named <= catalogued, named - catalogued
    assert {m.exported for m in all_metric_families()} <= named


def test_every_transport_panel_shows_each_transport_and_direction():
    (row,) = [row for title, row in panels() if title == "Tensor transports"]
    assert len(row) == 4
    for title, _, expr, legend in row:
        assert "by (transport, direction" in expr and "{{transport}} {{direction}}" in legend, title


def test_the_dashboard_is_documented():
    from pathlib import Path

    text = (Path(__file__).resolve().parents[2] / "docs" / "observability.md").read_text(encoding="utf-8")
    assert "rayaccel_accelerators_grafana_dashboard.json" in text and "grafana-foundation-sdk" in text
