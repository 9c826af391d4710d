"""Runs the benchmarks in bench/ and prints every figure, then issue 20's table ("what | now |
target | met?", ``table.ROWS``) (``make bench``).

The district (``district``: import, roll, finalize, a season of payments, the delinquent list) is
built once and served by ``bench_load``; ``bench_documents`` and ``bench_search`` build their own
databases after it. ``BENCH_PARCELS`` makes a smaller district (a quick run), ``BENCH_BILLS`` fewer
bills. A benchmark that fails gets a FAILED row (and its traceback above the table); the others
still run, and the command exits 0: it reports figures, it asserts nothing."""

from __future__ import annotations

import os
import platform
import time
import traceback
from datetime import datetime

import bench_documents
import bench_load
import bench_search
import district
import table


def district_and_load() -> list[tuple[str, str]]:
    """Build the district (its rows of the table as it goes), then load its pages."""
    results: list[tuple[str, str]] = []
    district.build(results)
    return results + bench_load.run()


district_and_load.__name__ = "district + bench_load"
BENCHMARKS = (district_and_load, bench_documents, bench_search)


def machine() -> list[str]:
    """Where the figures were measured: CPU, cores, memory, PostgreSQL, Python, date, load."""
    cpu = next((line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name")), "?")
    ram = next((int(line.split()[1]) / 1024 / 1024 for line in open("/proc/meminfo") if line.startswith("MemTotal")), 0)
    try:
        from django.db import connection

        with connection.cursor() as cursor:
            cursor.execute("SHOW server_version")
            postgres = cursor.fetchone()[0]
    except Exception as exc:  # the table matters more than this line
        postgres = f"unknown ({type(exc).__name__})"
    return [
        f"machine: {cpu}, {os.cpu_count()} cores ({platform.machine()}), {ram:.1f} GiB RAM",
        f"PostgreSQL {postgres}, Python {platform.python_version()}, {datetime.now().astimezone():%Y-%m-%d %H:%M %Z}",
    ]


def main() -> None:
    load_before = os.getloadavg()
    start = time.perf_counter()
    rows: list[tuple[str, str]] = []
    for module in BENCHMARKS:
        name = module.__name__
        began = time.perf_counter()
        try:
            rows += module() if callable(module) else module.main()
        except Exception as exc:  # one broken benchmark must not hide the others
            traceback.print_exc()
            rows.append((f"{name}: FAILED", f"{type(exc).__name__}: {exc}"[:200]))
        print(f"[{name}: {time.perf_counter() - began:.0f} s]", flush=True)
    load_after = os.getloadavg()
    print()
    for line in machine():
        print(line)
    print(f"load average (1, 5, 15 min): {', '.join(f'{x:.2f}' for x in load_before)} before, "
          f"{', '.join(f'{x:.2f}' for x in load_after)} after; whole run {time.perf_counter() - start:.0f} s")
    width = max(len(label) for label, _ in rows)
    print(f"{'benchmark':<{width}}  figure")
    for label, figure in rows:
        print(f"{label:<{width}}  {figure}")
    print()
    print(f"Issue 20's table ({district.PARCELS:,} parcels; load average above; the machine may be shared):")
    print(table.markdown())


if __name__ == "__main__":
    main()
