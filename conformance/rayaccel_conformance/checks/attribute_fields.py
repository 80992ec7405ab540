"""An attribute named as the machine names a field holds what that field states (RAC216's
``an-attribute-holds-its-field``, issue 46, held-out round 17's ``a1``: an AMD wrapper naming a partitioned GPU's
compute partition mode, attribute ``compute_partition`` and the partitions' profiles, by the memory partition mode,
``NPS4`` where amdsmi's ``compute_partition`` states ``CPX``).

A vendor's records state a device's settings under field names of their own (amdsmi's ``compute_partition`` and
``memory_partition`` side by side, hl-smi's ``serial``), and a plugin that publishes a device's or a partition's
attribute under the same name tells every consumer (the DRA export, ``amd.com/{compute_partition}_{memory_partition}``,
the labels) that it is that field. Where the machine's records about the device (the library's or JSON records
stating its id, or one of its partitions' ids or uuids; the files of the directory its id file is in, as
:func:`.merged_profiles.partition_texts` finds them) state the field, the attribute must be one of the values they
state for it (any case, surrounding space ignored; a record answering ``N/A`` says nothing). Only text attributes and
text fields are compared. Each helper here is pure.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rayaccel.records import Device
from rayaccel_conformance.checks.merged_profiles import MachineRecords, machine_records

#: What a record answers for a field it cannot state (amdsmi's ``N/A`` off a GPU's primary partition).
NO_VALUE = {"", "n/a", "na", "none", "null", "unknown", "not supported", "-"}
#: Findings said in full per fixture (the same misread repeats on every card).
MAX_SAID = 4
#: Ids shorter than this are not looked up as values (``0``, a HIP id, is a value of many fields).
MIN_ID = 6


def _field(where: str) -> str:
    """The field a text is the value of: the last step of its record path or file path, normalised."""
    last = where.rsplit("/", 1)[-1].rsplit(".", 1)[-1]
    return last.strip().lower().replace("-", "_")


def stated_fields(state: Mapping[str, Any] | MachineRecords,
                  idents: list[str]) -> dict[str, dict[str, tuple[str, str]]]:
    """Each field the machine's records about ``idents`` state a value for: field -> value (lower case) -> the
    value as written and where."""
    found: dict[str, dict[str, tuple[str, str]]] = {}
    records = machine_records(state)
    for ident in dict.fromkeys(i for i in idents if len(i) >= MIN_ID):
        for where, text in records.texts(ident):
            if where.startswith("`") and " output line " in where:
                continue  # a line of text output has no field names
            value = text.strip()
            if value.lower() in NO_VALUE or "\n" in value:
                continue
            found.setdefault(_field(where), {}).setdefault(value.lower(), (value, where))
    return found


#: What an on/off attribute says, by its word. Vendors state a switch as 1 for on and 0 for off (nvml.h:
#: ``NVML_FEATURE_ENABLED`` 1, ``NVML_DEVICE_MIG_ENABLE`` 1 and ``_DISABLE`` 0; ``nvmlDeviceGetMigMode`` answers the
#: current and the pending mode, so a list of them states each).
SWITCH_WORDS = {"enabled": True, "enable": True, "on": True, "true": True, "yes": True,
                "disabled": False, "disable": False, "off": False, "false": False, "no": False}


def _switch(value: Any) -> list[bool]:
    if isinstance(value, bool) or (isinstance(value, int) and value in (0, 1)):
        return [bool(value)]
    if isinstance(value, list) and value and all(not isinstance(v, bool) and v in (0, 1) for v in value):
        return [bool(v) for v in value]
    return []


def stated_switches(state: Mapping[str, Any] | MachineRecords, idents: list[str]) -> dict[str, dict[bool, str]]:
    """Each field the machine's library or JSON records about ``idents`` state as a switch, a number 0 or 1 (or a
    list of them) beside the id: field -> each state it says -> where."""
    found: dict[str, dict[bool, str]] = {}
    records = machine_records(state)
    for ident in dict.fromkeys(i for i in idents if len(i) >= MIN_ID):
        for where, record in records.about(ident):
            for key, value in record.items():
                for on in _switch(value):
                    found.setdefault(str(key).strip().lower().replace("-", "_"), {}).setdefault(on, f"{where}.{key}")
    return found


def _own_ids(device: Device) -> list[str]:
    ids = [device.id]
    for part in device.partitions:
        ids += [part.id, *(str(v) for k, v in part.attributes.items() if k == "uuid" and isinstance(v, str))]
    return ids


def attribute_field_findings(devices: list[Device], state: Mapping[str, Any] | MachineRecords,
                             fixture: str) -> list[str]:
    """``invariant an-attribute-holds-its-field`` over the devices built on ``state`` and their partitions."""
    wrong = []
    records = machine_records(state)
    for device in devices:
        owners: list[tuple[str, Mapping[str, Any], list[str]]] = [
            (f"device {device.id}", device.attributes, _own_ids(device))]
        owners += [(f"partition {p.id} of {device.id}", p.attributes,
                    [p.id, *(str(v) for k, v in p.attributes.items() if k == "uuid" and isinstance(v, str))])
                   for p in device.partitions]
        for owner, attributes, idents in owners:
            texts = [(k, v) for k, v in attributes.items() if isinstance(v, str) and v.strip()]
            if not texts:
                continue
            fields = stated_fields(records, idents)
            switches = stated_switches(records, idents)
            for key, value in texts:
                said = SWITCH_WORDS.get(value.strip().lower())
                states = switches.get(key.strip().lower().replace("-", "_"), {})
                if said is not None and states and said not in states:
                    stated_as = ", ".join(f"{'on' if on else 'off'} ({where})" for on, where in states.items())
                    wrong.append(
                        f"invariant an-attribute-holds-its-field, {fixture}: {owner} has attribute {key}={value!r} "
                        f"({'on' if said else 'off'}), where the machine's records about it state {key} {stated_as} "
                        "(1 or true is on, as nvml.h's NVML_FEATURE_ENABLED). Fix: publish "
                        f"{key} from the vendor's value as the vendor defines it")
                    continue
                stated = fields.get(key.strip().lower().replace("-", "_"))
                if not stated or value.strip().lower() in stated:
                    continue
                other = next((f"{f} ({w})" for f, vs in sorted(fields.items()) for v, (_, w) in vs.items()
                              if v == value.strip().lower()), None)
                profiles = sorted({p.profile for p in device.partitions if value.strip().lower() in
                                   p.profile.lower().split(".")})
                values = ", ".join(f"{v!r} ({w})" for v, w in list(stated.values())[:2])
                wrong.append(
                    f"invariant an-attribute-holds-its-field, {fixture}: {owner} has attribute {key}={value!r}, "
                    f"where the machine's records about it state {key} as {values}"
                    + (f"; {value!r} is what they state as {other}" if other else "")
                    + (f"; its partitions' profiles carry it too ({', '.join(profiles)})" if profiles else "")
                    + f". Fix: publish {key} from the field the vendor names so (or name the attribute after the "
                    "field it is read from)")
    return wrong[:MAX_SAID] + ([f"invariant an-attribute-holds-its-field, {fixture}: {len(wrong) - MAX_SAID} more "
                                "attributes as above"] if len(wrong) > MAX_SAID else [])
