"""The accelerators' Grafana dashboard, written beside Ray's own in the session's Grafana dashboards folder.

Ray's dashboard (``ray/dashboard/modules/metrics/metrics_head.py``) writes its dashboards to
``$RAY_METRICS_GRAFANA_DASHBOARD_OUTPUT_DIR``, by default ``<session dir>/metrics/grafana/dashboards``, and
provisions Grafana from that folder (``<session dir>/metrics/grafana/provisioning/dashboards/default.yml``).
A dashboard file placed there shows in Grafana started with Ray's documented set-up
(``grafana-server --config <session dir>/metrics/grafana/grafana.ini``).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from rayaccel.files.atomic import write_atomically
from rayaccel.outputs.grafana_dashboard import FILE_NAME, dashboard_text

#: Ray's own variable naming the folder it writes its dashboards to.
DASHBOARD_DIR_ENV = "RAY_METRICS_GRAFANA_DASHBOARD_OUTPUT_DIR"


def dashboards_folder(session_dir: str | Path) -> Path:
    """Where Ray writes (and provisions) its Grafana dashboards for this session."""
    return Path(os.environ.get(DASHBOARD_DIR_ENV) or Path(session_dir) / "metrics" / "grafana" / "dashboards")


def install_dashboard(session_dir: str | Path) -> Path | None:
    """Write the dashboard beside Ray's; None when Ray's metrics set-up did not run here (no dashboard, or
    not the head), since Grafana is provisioned from the head's folder only."""
    folder = dashboards_folder(session_dir)
    if not folder.is_dir():
        return None
    path = folder / FILE_NAME
    write_atomically(path, dashboard_text())
    return path


def session_dir() -> str:
    """The session directory of the cluster this process is connected to (needs a connected driver)."""
    import ray._private.worker

    node: Any = ray._private.worker.global_worker.node
    return str(node.get_session_dir_path())
