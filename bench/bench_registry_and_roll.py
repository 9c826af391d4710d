"""Import 100,000 parcels from CSV, then compute and store their roll (issue targets: import
under 30 s, roll under 15 s on 2 cores)."""

from __future__ import annotations

from common import certified_estimates, peak_rss_mb, registry_csv, setup_fresh_database, timed

PARCELS = 100_000


def main() -> list[tuple[str, str]]:
    setup_fresh_database()

    from levy.services import levy_compute
    from parcels.services import parcels_import

    results: list[tuple[str, str]] = []
    data = registry_csv(PARCELS)
    with timed(f"import {PARCELS:,} parcels (new)", results):
        result = parcels_import(acting_user=None, data=data, source="bench")
    assert result.ok, result.errors[:3]
    with timed(f"import {PARCELS:,} parcels again (all unchanged)", results):
        parcels_import(acting_user=None, data=data, source="bench")
    _, hacienda = certified_estimates("2026-2027")
    with timed(f"compute and store the roll of {PARCELS:,} parcels", results):
        levy = levy_compute(acting_user=hacienda, fiscal_year="2026-2027")
    print(f"roll lines: {levy.parcels_in_roll:,}; levied: {levy.parcels_levied:,}; total {levy.total_levy}")
    results.append(("peak memory of the benchmark process", f"{peak_rss_mb():.0f} MB"))
    return results


if __name__ == "__main__":
    main()
