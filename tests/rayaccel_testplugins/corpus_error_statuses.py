"""Corpus mutants that read a metadata server and misread its HTTP error statuses (held-out round 6: TPU metadata
answered 403/404/500/503), two shapes: the error page taken as the value, and a failing server taken for a key
that is not set (the fact left out, nothing reported). RAC204's error-status scenarios kill both.

Each labels its node with the pool GCE's instance attribute ``acme-pool`` names (a custom attribute, as GCE serves
them under ``instance/attributes/``); its fixture's host is a GCE VM whose metadata server answers it.

Imported by tests/conformance/test_conformance_corpus.py (``corpus.MUTANT_MODULES``); each is bound here under
its name so a Ray node or a fresh process loads it (``c-metadata-error-page-as-pool`` as
``c_metadata_error_page_as_pool``).
"""

from __future__ import annotations

from rayaccel import FamilyInventory, Host, HttpUnavailable, report_problem, to_label_value
from rayaccel_testplugins.corpus import LABEL_PREFIX, Healthy, add_import_defect, read_machine, write_machine

POOL_URL = "http://metadata.google.internal/computeMetadata/v1/instance/attributes/acme-pool"
HEADERS = {"Metadata-Flavor": "Google"}
POOL = "training-a"


def serve_pool(plugin: str) -> None:
    """The plugin's fixture on a GCE VM whose metadata server names its pool (written atomically, once)."""
    data = read_machine(plugin)
    if POOL_URL in (data["host"].get("http") or {}):
        return
    data["host"]["http"] = {POOL_URL: {"body": POOL, "require_headers": HEADERS}}
    data["expected"]["labels"][f"{LABEL_PREFIX}/pool"] = POOL
    write_machine(plugin, "acme-4", data)


class MetadataErrorPageAsPool(Healthy):
    DEFECT = ("the pool label is the metadata server's answer whatever its status: a 403 or 500 labels the node "
              "with the error page's first words")
    KILLED_BY = ("RAC204", "invariant an-error-status-is-no-value")

    def __init__(self, name: str) -> None:
        super().__init__(name)
        serve_pool(name)

    def rayaccel_labels(self, host: Host, inventory: FamilyInventory) -> dict[str, str]:
        try:
            body = host.http_get(POOL_URL, headers=HEADERS, timeout=1.0).body
        except HttpUnavailable:
            return self.labels(inventory)
        return {**self.labels(inventory), f"{LABEL_PREFIX}/pool": to_label_value(body.strip()[:63])}


class MetadataFailureAsUnset(Healthy):
    DEFECT = ("every status but 200 is read as the attribute not being set: a metadata server failing with 500 or "
              "503 drops the pool label and nothing says why")
    KILLED_BY = ("RAC204", "invariant an-error-status-is-reported")

    def __init__(self, name: str) -> None:
        super().__init__(name)
        serve_pool(name)

    def rayaccel_labels(self, host: Host, inventory: FamilyInventory) -> dict[str, str]:
        try:
            response = host.http_get(POOL_URL, headers=HEADERS, timeout=1.0)
        except HttpUnavailable as e:
            report_problem("acme-metadata-unavailable", f"the metadata server did not answer: {e}")
            return self.labels(inventory)
        pool = {f"{LABEL_PREFIX}/pool": to_label_value(response.body.strip())} if response.status == 200 else {}
        return {**self.labels(inventory), **pool}


for _cls in (MetadataErrorPageAsPool, MetadataFailureAsUnset):
    _plugin = add_import_defect(_cls)
    globals()[_plugin.name.replace("-", "_")] = _plugin
