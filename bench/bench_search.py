"""Search at 100,000 parcels (parcels.search, issue 12): the counter's search for a name typed
without accents, a cadastre number without its dashes, and a part of a number; median and worst
of repeated runs, with the plan's index named. Also how long the import takes with the trigram
indexes in place (bench_registry_and_roll measured 6.65 s without them)."""

from __future__ import annotations

import random
import statistics
import time

from common import setup_fresh_database, timed

PARCELS = 100_000
GIVEN = ["José", "María", "Ángel", "Inés", "Raúl", "Sofía", "Andrés", "Lucía", "Ramón", "Begoña", "Iván", "Nuria"]
SURNAMES = ["Vélez", "Muñoz", "Rodríguez", "Pérez", "Martínez", "Irizarry", "Toro", "Ramos", "Ortiz", "Colón", "Rivera",
            "Hernández", "Nieves", "Quiñones", "Cintrón", "Ávila", "Báez", "Santiago", "Acevedo", "Ibáñez"]
QUERIES = {"name without accents (\"quinones avila\")": "quinones avila",
           "cadastre number without dashes (\"laj0012345\")": "laj0012345",
           "part of a number (\"12345\")": "12345",
           "upper-case name (\"VELEZ\")": "VELEZ"}
RUNS = 30


def registry_csv(count: int, *, seed: int = 11) -> bytes:
    rng = random.Random(seed)
    lines = ["parcel_id,owner_id,owner_name,owner_email,owner_kind,gravity_acres,pumped_acres,inclusion,water_since,credit_percent"]
    names: dict[int, str] = {}
    for n in range(1, count + 1):
        owner = n // 2  # two parcels an owner, one name each
        name = names.setdefault(owner, f"{rng.choice(GIVEN)} {rng.choice(SURNAMES)} {rng.choice(SURNAMES)}")
        lines.append(f"LAJ-{n:07d},OW-{owner:06d},{name},,private,{rng.randint(1, 300)}.5,0,permanent,1990-01-01,0")
    return ("\n".join(lines) + "\n").encode()


def main() -> list[tuple[str, str]]:
    setup_fresh_database()
    from django.db import connection

    from billing.selectors import parcel_search
    from parcels.services import parcels_import

    results: list[tuple[str, str]] = []
    with timed(f"import {PARCELS:,} parcels with the search indexes", results):
        assert parcels_import(acting_user=None, data=registry_csv(PARCELS), source="bench").ok
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE parcels_parcel; ANALYZE parcels_owner")
    for label, query in QUERIES.items():
        times = []
        for _ in range(RUNS):
            start = time.perf_counter()
            found = len(list(parcel_search(query=query)))
            times.append((time.perf_counter() - start) * 1000)
        sql, params = parcel_search(query=query).query.sql_with_params()
        with connection.cursor() as cursor:
            cursor.execute("EXPLAIN " + sql, params)
            plan = " ".join(row[0] for row in cursor.fetchall())
        indexes = sorted({name for name in ("owner_name_search", "parcel_code_search") if name in plan}) or ["none"]
        figure = f"median {statistics.median(times):.1f} ms, worst {max(times):.1f} ms ({found} shown; index: {', '.join(indexes)})"
        print(f"counter search, {label}: {figure}", flush=True)
        results.append((f"counter search at {PARCELS:,} parcels, {label}", figure))
    return results


if __name__ == "__main__":
    main()
