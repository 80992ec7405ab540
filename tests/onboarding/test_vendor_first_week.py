"""The small frictions of a vendor's first week (issue 43, low items): the probe-kind prompt takes the names the
docs use, a family's product name keeps its case, a hung tool's fix line agrees with a probe raising on purpose,
``rayaccel inspect`` says it ignores a visible-devices variable, and the KubeRay export says its default image
has no rayaccel."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

import pytest

from rayaccel.cli.template import read_choice
from rayaccel.hosts.seam import CommandTimeout
from rayaccel.plugins.manager import raised_fix

ROOT = Path(__file__).resolve().parents[2]
TEMPLATE = ROOT / "templates" / "vendor-plugin"
PROMPTS = {"probe_kind": {"__prompt__": "How does the plugin find devices?", "sysfs": "sysfs files",
                          "command-json": "a command that prints JSON"}}
KINDS = ["sysfs", "command-json", "command-csv", "python-library"]


def rayaccel(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "rayaccel", *args], capture_output=True, text=True, timeout=120,
                          env={**os.environ, **(env or {})})


@pytest.mark.parametrize(("typed", "chosen"), [("command-json\n", "command-json"), ("3\n", "command-csv"),
                                               ("\n", "sysfs"), ("json\npython-library\n", "python-library")])
def test_the_probe_kind_prompt_takes_a_number_or_the_name_the_docs_use(typed: str, chosen: str) -> None:
    assert read_choice("probe_kind", KINDS, PROMPTS, stream=io.StringIO(typed)) == chosen


@pytest.mark.parametrize(("family", "product"), [("QTS", "QTS X1"), ("acme", "acme X1"), ("Big Chip", "Big Chip X1"),
                                                 ('x"y', "X-Y X1")])
def test_the_sample_product_keeps_the_family_name_as_typed(family: str, product: str) -> None:
    sys.path.insert(0, str(TEMPLATE))
    try:
        import rayaccel_vendor_template as template
    finally:
        sys.path.remove(str(TEMPLATE))
    derived = template.derived({"vendor_name": "QTS Labs", "family_name": family}, TEMPLATE)
    assert derived["__product"] == product


def test_a_hung_tools_fix_line_agrees_with_a_probe_that_raises_on_purpose() -> None:
    class ProbeError(Exception):
        pass

    hung = raised_fix(ProbeError("qts-smi list --json did not finish within 10s"))
    assert "did not answer within its timeout" in hung and "Raising is right" in hung
    assert "report zero devices" not in hung
    assert raised_fix(CommandTimeout("x did not finish within 1s")) == hung
    assert "fix the plugin" in raised_fix(KeyError("uuid"))


ACME = {"RAYACCEL_PLUGINS": "acme=rayaccel_testplugins.acme", "RAYACCEL_NO_AUTOLOAD": "1"}


def test_inspect_says_it_ignores_the_familys_visible_devices_variable() -> None:
    done = rayaccel("inspect", "--simulate", "acme/acme-4", "--json", env={**ACME, "ACME_VISIBLE_DEVICES": "0,1"})
    assert done.returncode == 0, done.stderr
    assert "note: ACME_VISIBLE_DEVICES='0,1' is set; inspect shows every acme device of the node, ignoring it" \
        in done.stderr
    assert '"ACME": 4.0' in done.stdout  # the whole node, as the note says
    quiet = rayaccel("inspect", "--simulate", "acme/acme-4", "--json", env=ACME)
    assert "VISIBLE_DEVICES" not in quiet.stderr


def test_the_kuberay_export_says_its_default_image_has_no_rayaccel() -> None:
    done = rayaccel("export", "--format", "kuberay", "--simulate", "acme/acme-4", env=ACME)
    assert done.returncode == 0, done.stderr
    assert "warning: the worker group runs rayproject/ray:2.60.0, Ray's image without rayaccel" in done.stderr
    own = rayaccel("export", "--format", "kuberay", "--simulate", "acme/acme-4", "--image", "acme/ray:1", env=ACME)
    assert own.returncode == 0 and "without rayaccel" not in own.stderr, own.stderr
