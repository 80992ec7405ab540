"""Value-space properties: the device facts a plugin turns into labels, resources and metrics, exercised over
the values those facts take on other machines (RAC214).

A fixture has one driver string and one card count, so a label valid only for ``3.1.4`` and invalid for
``3.2.0+rc1`` passes on it. Here hypothesis varies the discovered devices themselves, starting from the
fixture's own answers: version strings with ``+``, spaces, long and empty values; product names with
spaces and punctuation; memory at 0 and at its limit; none, one or many devices (copies with new ids). The
per-device hooks are asked about each variant, and what they answer must stay valid. The run is bounded:
derandomized (the same examples every run), few examples, and a time limit per plugin.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import Any

from hypothesis import HealthCheck, Phase, given, settings, strategies as st

from rayaccel import hookspec
from rayaccel.labels import label_errors
from rayaccel.records import Device, FamilyInventory, Problem

#: Examples per plugin, and the wall time they may take in all (examples past it are not run).
MAX_EXAMPLES = 30
TIME_LIMIT_S = 8.0

#: Suffixes real version strings carry (release candidates, distro builds, local builds).
VERSION_TAILS = ("+rc1", "-rc.2", "+cuda12.4", " (beta)", "-1ubuntu1~22.04", "_dev")


def version_strings(seen: str | None) -> st.SearchStrategy[str | None]:
    """Versions as vendors print them, derived from the one the fixture has."""
    base = seen or "1.0.0"
    return st.one_of(
        st.just(seen),
        st.sampled_from(VERSION_TAILS).map(lambda tail: base + tail),
        st.sampled_from(["3.2.0+rc1", "2.19.1 (build 42)", "", "v" + base, base * 12]),
        st.none(),
    )


def product_names(seen: str) -> st.SearchStrategy[str]:
    if not seen:  # a tool that prints no product name: it may start printing one
        return st.one_of(st.just(""), st.just("Accelerator"))
    return st.one_of(st.just(seen), st.sampled_from([f"{seen} (rev B)", f"{seen}/SXM", seen + " " * 3 + "X",
                                                     (seen + " ") * 8]))


def memories(seen: int | None) -> st.SearchStrategy[int | None]:
    return st.one_of(st.just(seen), st.sampled_from([0, 1, 2**31 - 1]), st.none())


@st.composite
def device_lists(draw: Callable[..., Any], devices: list[Device]) -> list[Device]:
    """The fixture's devices with varied facts, and none, one, the same or many of them (copies, new ids)."""
    count = draw(st.sampled_from([0, 1, len(devices), max(len(devices), 1) * 4]))
    template = devices[0]
    changed = template.model_copy(update={
        "driver_version": draw(version_strings(template.driver_version)),
        "runtime_version": draw(version_strings(template.runtime_version)),
        "product_name": draw(product_names(template.product_name)),
        "memory_mib": draw(memories(template.memory_mib)),
    })
    made = []
    for i in range(count):
        base = devices[i] if i < len(devices) else changed.model_copy(update={"index": i, "id": f"{template.id}-v{i}",
                                                                              "units": []})
        made.append(base.model_copy(update={k: getattr(changed, k) for k in (
            "driver_version", "runtime_version", "product_name", "memory_mib")}))
    return made


def value_space_failures(subject: Any, host: Any, family: FamilyInventory) -> tuple[list[str], int]:
    """Run the properties on ``family``'s devices varied; (what went wrong for the first failing example,
    examples run)."""
    found: list[str] = []
    ran = [0]
    started = time.monotonic()

    @settings(max_examples=MAX_EXAMPLES, derandomize=True, deadline=None, database=None,
              phases=(Phase.explicit, Phase.generate), suppress_health_check=list(HealthCheck),
              report_multiple_bugs=False)
    @given(device_lists(list(family.devices)))
    def holds(devices: list[Device]) -> None:
        if found or time.monotonic() - started > TIME_LIMIT_S:
            return
        ran[0] += 1
        wrong = properties(subject, host, family, devices)
        if wrong:
            shown = devices[0] if devices else None
            facts = (f"driver_version={shown.driver_version!r}, product_name={shown.product_name!r}, "
                     f"memory_mib={shown.memory_mib!r}" if shown else "no devices")
            found.extend(f"with {len(devices)} devices ({facts}): {w}" for w in wrong[:3])

    holds()
    return found, ran[0]


def properties(subject: Any, host: Any, family: FamilyInventory, devices: list[Device]) -> list[str]:
    """What must hold of the per-device hooks' answers for any devices."""
    manager, name = subject.manager, subject.name
    problems: list[Problem] = []
    ids = {d.id for d in devices}
    topology = family.topology.model_copy(update={"links": [ln for ln in family.topology.links
                                                            if ln.a in ids and ln.b in ids], "domains": []})
    varied = family.model_copy(update={"devices": devices, "topology": topology,
                                       "health": [h for h in family.health if h.device in ids]})
    wrong = []
    if devices:  # a family inventory, and so a labels call, exists only for a family with devices
        labels = manager.answer(name, hookspec.LABELS, problems, host=host, inventory=varied)
        wrong += [f"rayaccel_labels gives an invalid label: {e}" for e in label_errors(labels)]
        wrong += [p.render().splitlines()[0] for p in problems if p.severity == "error"]
    if not ids <= {d.id for d in family.devices}:
        return wrong  # copies are not on the host: the hooks that read it per device are asked about real ones
    problems = []
    contribution = manager.answer(name, hookspec.RESOURCES, problems, host=host, devices=devices, topology=topology)
    wrong += [f"rayaccel_resources: extra resource {k}={v} is not a positive finite number"
              for k, v in contribution.extra.items() if not (math.isfinite(v) and v > 0)]
    samples = manager.answer(name, hookspec.METRICS, problems, host=host, devices=devices)
    wrong += [f"rayaccel_metrics: {s.name} of {s.device} is {s.value}, not finite" for s in samples
              if not math.isfinite(s.value)]
    wrong += [f"rayaccel_metrics names {s.device!r}, which it was not given" for s in samples if s.device not in ids]
    wrong += [p.render().splitlines()[0] for p in problems if p.severity == "error"]
    return wrong
