"""RAC231's invariant pci-id-in-another-form: a PCI device id the vendor prints in another form (upper-case hex,
no ``0x``, five hex digits) is normalised to the record's ``0x`` + four lower-case digits or refused, and the device
kept. ACME reading its cards' id from a sysfs ``device`` file (as the kernel writes it: ``0x0a01``) passes with a
strict parser; two parsers of different shape fail naming the invariant: one that passes the text on as printed
(the record refuses it: the device is lost) and one that cuts the digits after ``0x`` to four (another card's id).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from mutant_grading import replaced

from rayaccel import Device, hookimpl, report_problem
from rayaccel_conformance.checks import all_checks
from rayaccel_conformance.checks.pci_id_forms import FORMS, host_with_id_in_form
from rayaccel_conformance.harness.subject import Subject
from rayaccel_testplugins import acme_onboard
from rayaccel_testplugins.acme import SYSFS

RAC231 = next(c for c in all_checks() if c.id == "RAC231")
PCI_ID = "0x0a01"
Parser = Callable[[str], str | None]


def strict(text: str) -> str | None:
    """Any hex form read as its number; past 16 bits, or no hex, refused."""
    try:
        value = int(text, 16)
    except ValueError:
        value = -1
    if not 0 <= value <= 0xFFFF:
        report_problem("malformed-output", f"PCI device id {text!r:.20} is not one; read as unknown")
        return None
    return f"0x{value:04x}"


def as_printed(text: str) -> str | None:
    """The defect: the text taken as it is printed (lower-cased), so any other form reaches the record."""
    return text.lower() or None


def first_four_digits(text: str) -> str | None:
    """The defect: the four digits after ``0x`` kept, whatever follows (``0x00a01`` -> ``0x00a0``)."""
    return "0x" + text.lower().removeprefix("0x")[:4]


def acme_reading_ids(tmp_path: Path, parse: Parser) -> Subject:
    shipped = yaml.safe_load((Path(acme_onboard.__file__).parent / "acme_fixtures" / "acme-4.yaml").read_text(
        encoding="utf-8"))
    cards = [p.rsplit("/", 1)[0] for p in shipped["host"]["files"] if p.endswith("/product")]
    shipped["host"]["files"].update({f"{card}/device": f"{PCI_ID}\n" for card in cards})
    (tmp_path / "acme-4.yaml").write_text(yaml.safe_dump(shipped), encoding="utf-8")

    @hookimpl
    def rayaccel_discover(host: Any) -> list[Device]:
        devices: list[Device] = []
        for device in acme_onboard.rayaccel_discover(host):
            try:
                pci = parse(host.read_text(f"{SYSFS}/acme{device.index}/device").strip())
                devices.append(Device.model_validate({**device.model_dump(), "pci_device_id": pci}))
            except ValueError as e:  # the record refuses the id: the device is left out, reported
                report_problem("unreadable-device", f"acme{device.index}: {e}"[:200])
        return devices

    return replaced(acme_onboard, "acme", rayaccel_discover=rayaccel_discover,
                    rayaccel_fixture_dirs=hookimpl(lambda: [str(tmp_path)]))


def test_a_strict_parser_passes_every_form() -> None:
    assert [strict(form(PCI_ID)) for _, form in FORMS] == [PCI_ID, PCI_ID, PCI_ID]


def test_an_id_is_rewritten_only_where_stated_whole() -> None:
    host = {"files": {"/sys/x/device": "0x0a01\n", "/sys/x/subsystem": "0x0a012\n"},
            "commands": {"tool": {"stdout": '{"id": "0X0A01", "reg": "0x0a0110de"}'}},
            "libraries": {"lib": {"gpus": [{"device_id": "0x0a01", "n": 2561}]}}}
    changed, places = host_with_id_in_form(host, PCI_ID, "0a01")
    assert places == 3
    assert changed["files"] == {"/sys/x/device": "0a01\n", "/sys/x/subsystem": "0x0a012\n"}
    assert changed["commands"]["tool"]["stdout"] == '{"id": "0a01", "reg": "0x0a0110de"}'
    assert changed["libraries"] == {"lib": {"gpus": [{"device_id": "0a01", "n": 2561}]}}


def test_acme_with_a_strict_parser_passes(tmp_path: Path) -> None:
    result = acme_reading_ids(tmp_path, strict).run(RAC231, "acme/acme-4")
    assert result.outcome == "passed", result.evidence
    assert "printed as upper-case hex (0x0A01), hex without 0x (0a01), five hex digits (0x00a01)" in \
        result.evidence[0]


@pytest.mark.parametrize(("parse", "said"), [
    (as_printed, "printed as hex without 0x (0a01) in 4 place(s): 4 device(s) lost"),
    (first_four_digits, "printed as five hex digits (0x00a01) in 4 place(s): ACME-0000-5e1f-4c2a-9d3b-000000000000 "
                        "reports 0x00a0, neither 0x0a01 nor unknown"),
])
def test_a_parser_that_lets_another_form_through_fails_naming_the_invariant(tmp_path: Path, parse: Parser,
                                                                           said: str) -> None:
    result = acme_reading_ids(tmp_path, parse).run(RAC231, "acme/acme-4")
    assert result.outcome == "failed", result.evidence
    text = " ".join(result.evidence)
    assert "invariant pci-id-in-another-form broken on acme/acme-4 with PCI device id 0x0a01" in text
    assert said in text, text
