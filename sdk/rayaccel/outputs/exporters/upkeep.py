"""Export files a node keeps current: the health monitor rewrites them from each poll's inventory.

An operator names them in the environment ``rayaccel start`` (and so the node's raylet and the monitor's
worker) runs in:

- ``RAYACCEL_NFD_FILE``: an NFD local-source features file (``--format nfd``), rewritten after every poll, so
  its ``# +expiry-time`` keeps moving ahead while the monitor runs and the labels lapse when it stops; a device
  that fails leaves ``rayaccel.io/count`` at the next poll and comes back when it recovers.
- ``RAYACCEL_DRA_FILE``: the node's DRA ResourceSlices (``--format dra``), rewritten when they change (a
  device tainted or recovered), each change with the next pool generation, for a driver or an operator that
  publishes them. ``RAYACCEL_DRA_NODE_NAME`` is the Kubernetes node name (default: the host name).

Every write is by rename (:func:`rayaccel.files.atomic.write_atomically`): NFD and the publisher never read
half a file.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path

from rayaccel.files.atomic import write_atomically
from rayaccel.outputs.exporters import ExportOptions, export
from rayaccel.records import NodeInventory

NFD_FILE_ENV = "RAYACCEL_NFD_FILE"
DRA_FILE_ENV = "RAYACCEL_DRA_FILE"
DRA_NODE_NAME_ENV = "RAYACCEL_DRA_NODE_NAME"


class KeptFiles:
    """The files to keep current and what was last written to each."""

    def __init__(self, nfd_file: str | None, dra_file: str | None, options: ExportOptions) -> None:
        self.nfd_file = Path(nfd_file) if nfd_file else None
        self.dra_file = Path(dra_file) if dra_file else None
        self._options = options
        self._dra_devices: object = None
        self._generation = 0

    @classmethod
    def from_env(cls, interval: float, environ: Mapping[str, str] | None = None) -> KeptFiles:
        env = os.environ if environ is None else environ
        options = ExportOptions(monitor_interval=interval, node_name=env.get(DRA_NODE_NAME_ENV) or None)
        return cls(env.get(NFD_FILE_ENV) or None, env.get(DRA_FILE_ENV) or None, options)

    def __bool__(self) -> bool:
        return self.nfd_file is not None or self.dra_file is not None

    def write(self, inventory: NodeInventory) -> list[str]:
        """Rewrite the files from ``inventory``; the paths written."""
        written: list[str] = []
        if self.nfd_file is not None and any(f.devices for f in inventory.families):
            write_atomically(self.nfd_file, export("nfd", inventory, self._options).text)
            written.append(str(self.nfd_file))
        if self.dra_file is not None and any(f.devices for f in inventory.families):
            devices = [s["spec"]["devices"] for s in export("dra", inventory, self._options).data["items"]]
            if devices != self._dra_devices:  # a new generation only when a device changed
                self._generation += 1
                exported = export("dra", inventory, replace(self._options, generation=self._generation))
                write_atomically(self.dra_file, exported.text)
                self._dra_devices = devices
                written.append(str(self.dra_file))
        return written
