"""Benchmarks run against a fresh database ``<name>_bench`` on the configured server (embedded
PostgreSQL when DATABASE_URL is unset). Run on demand; they print figures, they assert nothing."""

from __future__ import annotations

import os
import random
import sys
import time
from contextlib import contextmanager
from datetime import date, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "lajas_portal.settings_test")


def setup_fresh_database() -> None:
    """Point Django at a freshly created ``…_bench`` database and migrate it."""
    import django
    from django.conf import settings

    django.setup()
    import psycopg
    from django.core.management import call_command
    from django.db import connections

    db = settings.DATABASES["default"]
    # The configured name, even when an earlier benchmark of this process already switched to its
    # ``…_bench`` database (``make bench`` runs them all in one process).
    db.setdefault("BENCH_CONFIGURED_NAME", db["NAME"])
    bench_name = f"{db['BENCH_CONFIGURED_NAME']}_bench"
    admin = connections["default"]
    admin.ensure_connection()
    params = admin.get_connection_params()
    params["dbname"] = "postgres"
    connections["default"].close()
    with psycopg.connect(**params, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{bench_name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{bench_name}"')
    db["NAME"] = bench_name
    connections["default"].settings_dict["NAME"] = bench_name
    call_command("migrate", verbosity=0)


@contextmanager
def timed(label: str, results: list[tuple[str, str]]):
    start = time.perf_counter()
    yield
    elapsed = time.perf_counter() - start
    results.append((label, f"{elapsed:.2f} s"))
    print(f"{label}: {elapsed:.2f} s", flush=True)


def peak_rss_mb() -> float:
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def registry_csv(count: int, *, seed: int = 7) -> bytes:
    """A registry of ``count`` parcels as import CSV (``B-0000001``…), two parcels per owner, 92%
    permanent, 30% with pumped acres, some with a water-right credit."""
    rng = random.Random(seed)
    lines = ["parcel_id,owner_id,owner_name,owner_email,owner_kind,gravity_acres,pumped_acres,inclusion,water_since,credit_percent"]
    for n in range(1, count + 1):
        gravity = Decimal(rng.randint(1, 3_000_000)) / 10000
        pumped = Decimal(rng.randint(0, 1_000_000)) / 10000 if rng.random() < 0.3 else Decimal("0")
        inclusion = "permanent" if rng.random() < 0.92 else rng.choice(["trial", "excluded"])
        water = (date(1960, 1, 1) + timedelta(days=rng.randint(0, 24000))).isoformat()
        credit = rng.choice(["0", "0", "0", "0", "10", "25.5", "50"])
        lines.append(f"B-{n:07d},OW-{n // 2:06d},Dueño {n // 2},,private,{gravity},{pumped},{inclusion},{water},{credit}")
    return ("\n".join(lines) + "\n").encode()


def certified_estimates(fiscal_year: str = "2026-2027") -> tuple[Any, Any]:
    """An Authority user and a Hacienda officer, and the year's estimates entered and certified;
    returns ``(authority, hacienda)``."""
    from levy.services import estimate_certify, estimate_enter
    from parcels.services import user_create

    authority = user_create(username="bench_aut", role="authority", password=None)
    hacienda = user_create(username="bench_hac", role="hacienda", password=None)
    estimate_enter(acting_user=authority, fiscal_year=fiscal_year, om_estimate=Decimal("12500000.00"),
                   reserve=Decimal("250000.00"), misc_income=Decimal("400000.00"), deficit=Decimal("30000.00"))
    estimate_certify(acting_user=authority, fiscal_year=fiscal_year)
    return authority, hacienda
