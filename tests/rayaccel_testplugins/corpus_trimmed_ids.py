"""A corpus mutant whose discovery cuts the vendor's prefix off the id the driver prints (issue 46, held-out round
9's ``j1``: a command-json bake stripping ``DUNLIN-`` in discovery only, its health, stats and links still keyed by
the tool's full uuid; here another shape, the driver's sysfs ``uuid`` files, ``ACME-`` cut). RAC105 names the
prefix cut and where the machine prints the full form.
"""

from __future__ import annotations

from rayaccel import Device, Host
from rayaccel_testplugins.corpus import Healthy, add_import_defect


class IdPrefixCut(Healthy):
    DEFECT = ("discovery cuts 'ACME-' off each card's uuid ('the vendor part is noise'): the ids are no longer the "
              "ones the driver and every other answer about the card use")
    KILLED_BY = ("RAC105", "with the prefix 'ACME-' cut off")

    def device(self, host: Host, path: str, driver: str | None) -> Device:
        card = super().device(host, path, driver)
        # the defect: the vendor's prefix cut off the id discovery reports
        return card.model_copy(update={"id": card.id.removeprefix("ACME-")})


plugin = add_import_defect(IdPrefixCut)
c_id_prefix_cut = plugin
