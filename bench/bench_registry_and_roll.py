"""Import 100,000 parcels from CSV, then compute and store their roll (issue targets: import
under 30 s, roll under 15 s on 2 cores)."""

from __future__ import annotations

import random
from datetime import date, timedelta
from decimal import Decimal

from common import peak_rss_mb, setup_fresh_database, timed

PARCELS = 100_000


def make_csv(count: int) -> bytes:
    rng = random.Random(7)
    lines = ["parcel_id,owner_id,owner_name,owner_email,owner_kind,gravity_acres,pumped_acres,inclusion,water_since,credit_percent"]
    for n in range(1, count + 1):
        gravity = Decimal(rng.randint(1, 3_000_000)) / 10000
        pumped = Decimal(rng.randint(0, 1_000_000)) / 10000 if rng.random() < 0.3 else Decimal("0")
        inclusion = "permanent" if rng.random() < 0.92 else rng.choice(["trial", "excluded"])
        water = (date(1960, 1, 1) + timedelta(days=rng.randint(0, 24000))).isoformat()
        credit = rng.choice(["0", "0", "0", "0", "10", "25.5", "50"])
        lines.append(f"B-{n:07d},OW-{n // 2:06d},Dueño {n // 2},,private,{gravity},{pumped},{inclusion},{water},{credit}")
    return ("\n".join(lines) + "\n").encode()


def main() -> list[tuple[str, str]]:
    setup_fresh_database()

    from levy.services import estimate_certify, estimate_enter, levy_compute
    from parcels.services import parcels_import, user_create

    results: list[tuple[str, str]] = []
    data = make_csv(PARCELS)
    with timed(f"import {PARCELS:,} parcels (new)", results):
        result = parcels_import(acting_user=None, data=data, source="bench")
    assert result.ok, result.errors[:3]
    with timed(f"import {PARCELS:,} parcels again (all unchanged)", results):
        parcels_import(acting_user=None, data=data, source="bench")
    authority = user_create(username="bench_aut", role="authority", password=None)
    hacienda = user_create(username="bench_hac", role="hacienda", password=None)
    estimate_enter(acting_user=authority, fiscal_year="2026-2027", om_estimate=Decimal("12500000.00"),
                   reserve=Decimal("250000.00"), misc_income=Decimal("400000.00"), deficit=Decimal("30000.00"))
    estimate_certify(acting_user=authority, fiscal_year="2026-2027")
    with timed(f"compute and store the roll of {PARCELS:,} parcels", results):
        levy = levy_compute(acting_user=hacienda, fiscal_year="2026-2027")
    print(f"roll lines: {levy.parcels_in_roll:,}; levied: {levy.parcels_levied:,}; total {levy.total_levy}")
    results.append(("peak memory of the benchmark process", f"{peak_rss_mb():.0f} MB"))
    return results


if __name__ == "__main__":
    main()
