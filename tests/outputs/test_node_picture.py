"""The node as a picture (``rayaccel inspect --html/--svg``): one element per device and per link, partitions
inside their device, the scale-up domain, readable layouts from 1 to 72 devices and for a 2x2x4 TPU torus,
vendor strings as text; opened by headless Chromium (Debian's), whose screenshot is not blank and whose DOM
holds what the inventory holds.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path

import pytest
import yaml

from rayaccel.inventory.builder import collect_inventory
from rayaccel.outputs.node_picture import node_html, node_svg
from rayaccel.plugins.manager import PluginManager
from rayaccel.records import Domain, NodeInventory
from rayaccel.simulation.host_factory import make_host

ROOT = Path(__file__).resolve().parents[2]
SVG = "{http://www.w3.org/2000/svg}"
SHOWN = ["nvidia/dgx-h100", "nvidia/gb200-nvl72-tray", "tpu/v5p-16-worker0", "neuron/trn2.48xlarge",
         "amd/mi300x-cpx-nps4"]
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
SCRIPT = "<script>alert(1)</script>"
ACME_ENV = {"RAYACCEL_PLUGINS": "acme=rayaccel_testplugins.acme"}


def inventory_of(fixture: str) -> NodeInventory:
    manager = PluginManager()
    return collect_inventory(manager, make_host(fixture, [], manager=manager), with_metrics=False)


def elements(svg: str, css_class: str) -> list[ET.Element]:
    return [e for e in ET.fromstring(svg).iter() if css_class in (e.get("class") or "").split()]


def device_boxes(svg: str) -> list[tuple[float, float, float, float]]:
    boxes = []
    for group in elements(svg, "device"):
        rect = group.find(f"{SVG}rect")
        assert rect is not None
        boxes.append((float(rect.get("x", 0)), float(rect.get("y", 0)), float(rect.get("width", 0)),
                      float(rect.get("height", 0))))
    return boxes


def assert_readable(svg: str) -> None:
    """Every device box lies inside the drawing and no two overlap."""
    root = ET.fromstring(svg)
    width, height = float(root.get("width", 0)), float(root.get("height", 0))
    boxes = device_boxes(svg)
    for x, y, w, h in boxes:
        assert x >= 0 and y >= 0 and x + w <= width and y + h <= height
    for i, (x, y, w, h) in enumerate(boxes):
        for x2, y2, w2, h2 in boxes[i + 1:]:
            assert x + w <= x2 or x2 + w2 <= x or y + h <= y2 or y2 + h2 <= y, "device boxes overlap"


@pytest.mark.parametrize("fixture", [*SHOWN, "nvidia/a100-mig", "nvidia/l4-single", "tpu/v6e-256-worker"])
def test_one_element_per_device_and_per_link(fixture):
    inventory = inventory_of(fixture)
    svg = node_svg(inventory)
    devices = [d for f in inventory.families for d in f.devices]
    links = [link for f in inventory.families for link in f.topology.links]
    assert len(elements(svg, "device")) == len(devices) > 0
    assert sorted(e.get("data-device") for e in elements(svg, "device")) == sorted(d.id for d in devices)
    assert len(elements(svg, "link")) == len(links)
    assert {e.get("data-kind") for e in elements(svg, "link")} == {link.kind for link in links}
    assert len(elements(svg, "numa")) >= 1
    assert_readable(svg)


def test_partitions_sit_inside_their_device():
    inventory = inventory_of("nvidia/a100-mig")
    (device,) = elements(node_svg(inventory), "device")
    partitions = [e for e in device.iter() if "partition" in (e.get("class") or "").split()]
    assert len(partitions) == len(inventory.families[0].devices[0].partitions) == 3


def test_amd_compute_partitions_are_drawn_inside_their_gpu_with_their_profile():
    inventory = inventory_of("amd/mi300x-cpx-nps4")
    svg = node_svg(inventory)
    gpus = elements(svg, "device")
    assert len(gpus) == 8  # 8 MI300X, each in CPX mode: 8 partitions apiece, inside it
    for gpu in gpus:
        parts = [e for e in gpu.iter() if "partition" in (e.get("class") or "").split()]
        assert len(parts) == 8
        for p in parts:  # the profile, shown: clipped to its box, whole in the box's tooltip
            (label,) = [t.text or "" for t in p.iter(f"{SVG}text")]
            assert label.endswith("…") and "cpx.1xcd.24gb".startswith(label[:-1]) and label.startswith("cpx.")
            assert "compute-partition cpx.1xcd.24gb " in p.findtext(f".//{SVG}title", "")
    assert_readable(svg)


def test_a_partitions_own_fault_is_drawn_on_it_alone_and_its_id_is_text():
    from rayaccel.records import HealthReason, HealthReport

    inventory = inventory_of("nvidia/a100-mig")
    (family,) = inventory.families
    gpu = family.devices[0]
    hostile = gpu.partitions[1].model_copy(update={"id": SCRIPT})
    gpu = gpu.model_copy(update={"partitions": [gpu.partitions[0], hostile, *gpu.partitions[2:]]})
    fault = HealthReport(device=SCRIPT, state="unhealthy", reasons=[HealthReason(code="xid-94", message="ecc")])
    changed = inventory.model_copy(update={"families": [family.model_copy(
        update={"devices": [gpu], "health": [*family.health, fault]})]})
    svg = node_svg(changed)
    parts = elements(svg, "partition")
    assert ["health-unhealthy" in (p.get("class") or "") for p in parts] == [False, True, False]
    assert "<script" not in svg and "&lt;script&gt;" in svg


def test_the_scale_up_domain_and_a_tpu_slices_hosts_are_shown():
    svg = node_svg(inventory_of("tpu/v5p-16-worker0"))
    (domain,) = elements(svg, "domain")
    text = "".join(domain.itertext())
    assert "tpu-v5p-16-slice-a" in text and "topology 2x2x2" in text and "this host is #0 of 2 hosts" in text
    assert len(elements(svg, "domain-host")) == 2
    assert len(elements(svg, "domain-outline")) == 1


def test_a_2x2x4_tpu_torus_worker_is_readable():
    """A v5p-32 slice (2x2x4, 16 chips on 4 hosts): this host's 4 chips, their ICI links, the 4 hosts."""
    inventory = inventory_of("tpu/v5p-16-worker0")
    family = inventory.families[0]
    domain = Domain(kind="tpu-slice", id="tpu-v5p-32-slice-b", size=16, members=[d.id for d in family.devices],
                    host_index=2, hosts=4)
    labels = {**family.labels, "ray.io/tpu-topology": "2x2x4"}
    family = family.model_copy(update={"topology": family.topology.model_copy(update={"domains": [domain]}),
                                       "labels": labels})
    svg = node_svg(inventory.model_copy(update={"families": [family], "labels": labels}))
    assert "topology 2x2x4" in "".join(elements(svg, "domain")[0].itertext())
    hosts = elements(svg, "domain-host")
    assert len(hosts) == 4 and [h.get("fill") for h in hosts].count("#1a73e8") == 1  # this host marked
    assert len(elements(svg, "link")) == len(family.topology.links) == 4
    assert_readable(svg)


@pytest.mark.parametrize("count", [1, 72])
def test_layouts_stay_readable_from_1_to_72_devices(count):
    inventory = inventory_of("nvidia/gb200-nvl72-tray")
    family = inventory.families[0]
    template = family.devices[0]
    devices = [template.model_copy(update={"index": i, "id": f"GPU-{i:04d}", "numa_node": i // 36})
               for i in range(count)]
    family = family.model_copy(update={"devices": devices, "health": [], "topology": family.topology.model_copy(
        update={"links": [], "affinities": [], "domains": []})})
    svg = node_svg(inventory.model_copy(update={"families": [family]}))
    assert len(elements(svg, "device")) == count
    assert_readable(svg)
    assert float(ET.fromstring(svg).get("width", 0)) <= 1600


def test_health_colours_and_reasons_show_on_a_faulted_device():
    manager = PluginManager()
    inventory = collect_inventory(manager, make_host("nvidia/dgx-h100", ["xid-79"], manager=manager),
                                  with_metrics=False)
    svg = node_svg(inventory)
    states = {e.get("data-device"): e.get("class") for e in elements(svg, "device")}
    unhealthy = [h.device for h in inventory.families[0].health if h.state == "unhealthy"]
    assert unhealthy and all("health-unhealthy" in (states[d] or "") for d in unhealthy)


def test_problems_are_listed_beside_the_devices():
    inventory = inventory_of("nvidia/dgx-h100")
    from rayaccel.records import Problem

    problem = Problem(plugin="nvidia", hook="rayaccel_health", severity="warning", code="demo-code",
                      message="a message", fix="a fix")
    svg = node_svg(inventory.model_copy(update={"problems": [problem]}))
    (shown,) = elements(svg, "problem")
    assert "demo-code" in "".join(shown.itertext()) and "a fix" in "".join(shown.itertext())


def test_vendor_strings_are_text_never_markup():
    inventory = inventory_of("nvidia/l4-single")
    family = inventory.families[0]
    hostile = family.devices[0].model_copy(update={"product_name": SCRIPT, "id": 'GPU-"><svg onload=alert(2)>'})
    family = family.model_copy(update={"devices": [hostile], "health": []})
    inventory = inventory.model_copy(update={"families": [family], "host": SCRIPT})
    for document in (node_svg(inventory), node_html(inventory)):
        assert "<script" not in document and '"><svg' not in document  # neither as text nor in an attribute
        assert "&lt;script&gt;alert(1)&lt;/script&gt;" in document
    assert [e.get("data-device") for e in elements(node_svg(inventory), "device")] == [hostile.id]


def test_the_html_page_is_self_contained():
    page = node_html(inventory_of("nvidia/dgx-h100"))
    assert not re.search(r"(src|href)\s*=\s*[\"'](https?:)?//", page)
    assert "<script" not in page and "@import" not in page


# The command and Chromium ----------------------------------------------------------------------------------


def rayaccel_cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "rayaccel", *args], capture_output=True, text=True, timeout=180,
                          env={**os.environ, **(env or {})})


def chromium(tmp: Path, *args: str) -> subprocess.CompletedProcess[str]:
    profile = tmp / "chromium-profile"
    return subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                           "--disable-component-update", "--no-first-run", f"--user-data-dir={profile}",
                           "--hide-scrollbars", *args], capture_output=True, text=True, timeout=120)


class Classes(HTMLParser):
    """Counts the elements of the DOM Chromium dumped, by class, and every tag name."""

    def __init__(self) -> None:
        super().__init__()
        self.classes: dict[str, int] = {}
        self.tags: set[str] = set()
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.add(tag)
        for name, value in attrs:
            if name == "class" and value:
                for one in value.split():
                    self.classes[one] = self.classes.get(one, 0) + 1

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def dom_of(tmp: Path, page: Path) -> Classes:
    done = chromium(tmp, "--dump-dom", page.as_uri())
    assert done.returncode == 0, done.stderr[-2000:]
    parsed = Classes()
    parsed.feed(done.stdout)
    return parsed


def screenshot_colours(tmp: Path, page: Path, shot: Path) -> int:
    from PIL import Image

    done = chromium(tmp, "--window-size=1400,900", f"--screenshot={shot}", page.as_uri())
    assert done.returncode == 0 and shot.is_file(), done.stderr[-2000:]
    with Image.open(shot) as image:
        return len(image.convert("RGB").getcolors(maxcolors=1 << 20) or [])


@pytest.fixture(scope="module")
def pages(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Path]]:
    out = tmp_path_factory.mktemp("pictures")
    written: dict[str, Path] = {}
    for fixture in SHOWN:
        page = out / (fixture.replace("/", "_") + ".html")
        done = rayaccel_cli("inspect", "--simulate", fixture, "--html", str(page),
                            "--svg", str(page.with_suffix(".svg")))
        assert done.returncode == 0, done.stderr
        assert "wrote the picture" in done.stderr and not done.stdout
        written[fixture] = page
    yield written


@pytest.mark.parametrize("fixture", SHOWN)
def test_chromium_draws_the_page_and_its_dom_holds_every_device_and_link(pages, fixture, tmp_path):
    inventory = inventory_of(fixture)
    dom = dom_of(tmp_path, pages[fixture])
    assert dom.classes.get("device", 0) == sum(len(f.devices) for f in inventory.families)
    assert dom.classes.get("link", 0) == sum(len(f.topology.links) for f in inventory.families)
    assert "script" not in dom.tags
    # Not blank: a white page has one colour; a drawn one, boxes, health colours, text and links, many.
    assert screenshot_colours(tmp_path, pages[fixture], tmp_path / "shot.png") > 50
    svg = pages[fixture].with_suffix(".svg").read_text(encoding="utf-8")
    assert len(elements(svg, "device")) == dom.classes["device"]


def test_a_product_name_that_is_a_script_renders_as_text(tmp_path):
    fixture = yaml.safe_load((ROOT / "tests/rayaccel_testplugins/acme_fixtures/acme-4.yaml").read_text())
    fixture["host"]["files"]["/sys/class/acme/acme0/product"] = SCRIPT + "\n"
    fixture["name"] = "acme-script"
    path = tmp_path / "acme-script.yaml"
    path.write_text(yaml.safe_dump(fixture), encoding="utf-8")
    page = tmp_path / "node.html"
    done = rayaccel_cli("inspect", "--simulate", str(path), "--html", str(page), env=ACME_ENV)
    assert done.returncode == 0, done.stderr
    dom = dom_of(tmp_path, page)
    assert "script" not in dom.tags
    assert any(SCRIPT in text for text in dom.text)  # shown as the text it is
    assert dom.classes.get("device") == 4


@pytest.mark.parametrize(("option", "target", "expected"), [
    ("--html", "missing-dir/node.html", "does not exist; create it first"),
    ("--svg", ".", "is a directory; give a file path"),
])
def test_a_picture_path_that_cannot_take_a_file_is_one_line_and_exit_2(option, target, expected, tmp_path):
    done = rayaccel_cli("inspect", "--simulate", "nvidia/l4-single", option, str(tmp_path / target))
    assert done.returncode == 2 and expected in done.stderr and option in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr
    assert list(tmp_path.iterdir()) == [] or target == "."


def test_the_picture_options_are_documented():
    text = (ROOT / "docs" / "observability.md").read_text(encoding="utf-8")
    assert "rayaccel inspect" in text and "--html OUT.html" in text and "--svg OUT.svg" in text
    for shot in ("node-nvidia-dgx-h100.png", "node-tpu-v5p-16-worker0.png"):
        assert (ROOT / "docs" / "img" / shot).is_file() and f"img/{shot}" in text
        assert f"docs/img/{shot}" in (ROOT / "README.md").read_text(encoding="utf-8")


def test_link_labels_never_overlap_and_the_fastest_links_are_drawn_boldest(monkeypatch):
    """28 NVLinks get labels (none overlapping each other, a device or a NUMA title); on the QTS node the 200 GB/s
    fabric lies on top of the 32 GB/s PCIe links, bolder, and each scale-up domain has its own line."""
    from rayaccel.outputs.node_picture import label_box, overlaps

    svg = node_svg(inventory_of("nvidia/dgx-h100"))
    labels = elements(svg, "link-label")
    assert labels, "a full mesh of 8 gets bandwidth labels"
    boxes = [label_box(e.text or "", float(e.get("x", 0)), float(e.get("y", 0))) for e in labels]
    for i, box in enumerate(boxes):
        assert not any(overlaps(box, other) for other in boxes[i + 1:]), "two link labels overlap"
        assert not any(overlaps(box, device) for device in device_boxes(svg)), "a link label covers a device"

    monkeypatch.setenv("RAYACCEL_PLUGINS", "qts=rayaccel_testplugins.qts")
    svg = node_svg(inventory_of("qts/qts-6"))
    links = elements(svg, "link")  # in drawing order: later is on top
    fabric = [n for n, e in enumerate(links) if e.get("data-kind") == "other"]
    pcie = [n for n, e in enumerate(links) if e.get("data-kind") == "pcie"]
    assert fabric and pcie and min(fabric) > max(pcie)
    opacity = {e.get("data-kind"): float(e.get("stroke-opacity", 1)) for e in links}
    width = {e.get("data-kind"): float(e.get("stroke-width", 1)) for e in links}
    assert opacity["other"] > opacity["pcie"] and width["other"] > width["pcie"]
    domain_lines = [float(t.get("y", 0)) for g in elements(svg, "domain") for t in g if t.tag == f"{SVG}text"]
    assert len(domain_lines) == 2 and len(set(domain_lines)) == 2
