"""What one probe of the host (:mod:`rayaccel_gaudi.probe`) read, as records: each device's hl-smi query
row (:class:`rayaccel_gaudi.hlsmi.AipRecord`) with its port types and states, driver status and NUMA node.
Discovery, topology, health and metrics all work on these.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from rayaccel_gaudi.hlsmi import AipRecord


@dataclass
class GaudiDevice:
    aip: AipRecord
    port_types: dict[int, str] = field(default_factory=dict)
    port_states: dict[int, str] = field(default_factory=dict)
    driver_status: str | None = None
    #: the module's entry in /sys/class/accel (``accel3``): its device file is /dev/accel/<accel>
    accel: str | None = None
    numa_node: int | None = None

    def ports(self, kind: str, state: str | None = None) -> list[int]:
        return sorted(p for p, t in self.port_types.items()
                      if t == kind and (state is None or self.port_states.get(p) == state))


@dataclass
class Snapshot:
    devices: list[GaudiDevice]

    def by_uuid(self) -> dict[str, GaudiDevice]:
        return {d.aip.uuid: d for d in self.devices}
