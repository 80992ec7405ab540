"""Every string of the cluster picture is escaped for where it goes: a node id in an SVG/HTML attribute
(issue 39: a node id went unescaped into the group's id attribute)."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest

from rayaccel.outputs.cluster_picture import cluster_html, cluster_svg
from rayaccel.ray.cluster_view import build_view

HOSTILE_IDS = ['"><script>alert(1)</script><g x="', "a' onload='alert(1)", "id with spaces & <tags>",
               "\x1b[2J\u2028node"]


@pytest.mark.parametrize("node_id", HOSTILE_IDS)
def test_a_hostile_node_id_stays_data_in_the_svg_and_the_html(node_id: str) -> None:
    nodes = [{"NodeID": node_id, "NodeManagerAddress": "10.0.0.1", "Alive": True, "Resources": {"GPU": 4.0},
              "Labels": {"rayaccel.io/family": "nvidia", "rayaccel.io/count": "4", "rayaccel.io/health": "healthy"}}]
    view = build_view("10.0.0.1:6379", nodes, {}, [])
    svg = cluster_svg(view)
    root = ET.fromstring(svg.encode())  # well-formed: nothing broke out of an attribute
    tags = {element.tag.rsplit("}", 1)[-1] for element in root.iter()}
    assert "script" not in tags
    groups = [e for e in root.iter() if e.get("class", "").startswith("node ")]
    assert [g.get("data-node") for g in groups] == [node_id if node_id.isprintable() else "\\x1b[2J node"]
    assert all(set(g.get("id", "")) <= set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-")
               for g in groups)
    assert "<script" not in cluster_html(view)
