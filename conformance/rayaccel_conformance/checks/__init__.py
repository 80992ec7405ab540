"""The checks, one module per tier: :mod:`.experimental` (RAC1xx), :mod:`.supported` (RAC2xx),
:mod:`.certified` (RAC3xx); the cross-record invariants of the supported tier in :mod:`.invariants`
(RAC216-RAC220); the pure hooks' properties and the scaled readings in :mod:`.contract` (RAC221-RAC223). Each
registers its checks with :func:`rayaccel_conformance.registry.check` when imported; :func:`all_checks` imports
them all."""

from __future__ import annotations

from rayaccel_conformance.registry import CHECKS, TIERS, Check


def all_checks() -> list[Check]:
    """Every check, in tier then ID order (importing the tier modules registers them)."""
    from rayaccel_conformance.checks import (  # noqa: F401
        affinities,
        catalog_agreement,
        certified,
        contract,
        damaged_readings,
        experimental,
        first_build,
        invariants,
        layouts,
        link_readings,
        listing_order,
        metric_coverage,
        numa_readings,
        partition_sizes,
        pci_addresses,
        performance,
        poll_history,
        process_env,
        rate_metrics,
        ray_parity,
        reason_table,
        recovery,
        sensor_readings,
        settings,
        signals_seen,
        sku_rewrite,
        supported,
        transport_lifecycle,
        transport_reach,
        unsupported_readings,
        vendor_text,
        visible_ranges,
    )

    return sorted(CHECKS.values(), key=lambda c: (TIERS.index(c.tier), c.id))
