"""Corpus mutants whose instance-type listing cannot be read (issue 46, held-out round 16's ``c3``: a command-csv
bake keying its hints by ``ec2``, the vendor's name for AWS, so ``rayaccel_cloud_instance_types`` raised building a
``CloudHint`` the SDK refuses and the hints hook answered nothing under ``aws``). The SDK contains the failure and
answers the hook's default, no listing, so RAC222 had nothing to round-trip and the plugin graded ``supported``;
``rayaccel export`` writes none of its node types. RAC222's ``the-listing-is-readable`` names the SDK's problem.

Two shapes: the table keyed by the vendor's name for the cloud, the listing raising as it builds each hint; the
listing answering its table's rows as they are written (``cards`` for the count), every record refused.

Imported by tests/conformance/test_conformance_corpus.py (``corpus.MUTANT_MODULES``); each is bound here under its
name so a Ray node or a fresh process loads it (``c-listing-vendor-provider`` as ``c_listing_vendor_provider``).
"""

from __future__ import annotations

from typing import Any

from rayaccel import CloudHint
from rayaccel_testplugins.corpus import Healthy, add_import_defect


class ListingVendorProvider(Healthy):
    DEFECT = ("hints keyed by the vendor's name for the cloud ('ec2' for AWS): rayaccel_cloud_instance_types raises "
              "building each CloudHint (the SDK knows no provider 'ec2'), and provider 'aws' gets no hint")
    KILLED_BY = ("RAC222", "invariant the-listing-is-readable")
    #: (provider as the vendor writes it, instance type) -> cards.
    TABLE = {("ec2", "acme1.4xlarge"): 4, ("ec2", "acme1.16xlarge"): 16}

    def hint(self, provider: str, instance_type: str) -> CloudHint | None:
        key = (provider.strip().lower(), instance_type.strip().lower())
        if key not in self.TABLE:
            return None
        return CloudHint(provider=key[0], instance_type=key[1], family=self.name, count=self.TABLE[key],
                         accelerator_type="R1")

    def rayaccel_cloud_instance_types(self) -> list[CloudHint]:
        return [CloudHint(provider=p, instance_type=t, family=self.name, count=n, accelerator_type="R1")
                for (p, t), n in self.TABLE.items()]


class ListingRowsAsWritten(Healthy):
    DEFECT = ("rayaccel_cloud_instance_types answers its table's rows as written ('cards' for the count): the SDK "
              "refuses every record, so no node type is exported and no listed hint is checked")
    KILLED_BY = ("RAC222", "invariant the-listing-is-readable")
    ROWS = ({"provider": "aws", "instance_type": "acme1.4xlarge", "cards": 4},
            {"provider": "aws", "instance_type": "acme1.16xlarge", "cards": 16})

    def hint(self, provider: str, instance_type: str) -> CloudHint | None:
        for row in self.ROWS:
            if (provider, instance_type.strip().lower()) == (row["provider"], row["instance_type"]):
                return CloudHint(provider="aws", instance_type=row["instance_type"], family=self.name,
                                 count=row["cards"], accelerator_type="R1")
        return None

    def rayaccel_cloud_instance_types(self) -> list[dict[str, Any]]:
        return [{**row, "family": self.name, "accelerator_type": "R1"} for row in self.ROWS]


MUTANTS = (ListingVendorProvider, ListingRowsAsWritten)
for _cls in MUTANTS:
    _plugin = add_import_defect(_cls)
    globals()[_plugin.name.replace("-", "_")] = _plugin
