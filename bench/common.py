"""Benchmarks run against a fresh database ``<name>_bench`` on the configured server (embedded
PostgreSQL when DATABASE_URL is unset). Run on demand; they print figures, they assert nothing."""

from __future__ import annotations

import os
import sys
import time
from contextlib import contextmanager
from pathlib import Path

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
    bench_name = f"{db['NAME']}_bench"
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
