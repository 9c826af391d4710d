"""Runs every benchmark in bench/ and prints one table of figures (``make bench``).

A benchmark that fails gets a FAILED row (and its traceback above the table); the others still
run, and the command exits 0: it reports figures, it asserts nothing."""

from __future__ import annotations

import os
import platform
import time
import traceback
from datetime import datetime

import bench_documents
import bench_installments
import bench_load
import bench_registry_and_roll
import bench_search

BENCHMARKS = (bench_registry_and_roll, bench_search, bench_installments, bench_documents, bench_load)


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
            rows += module.main()
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


if __name__ == "__main__":
    main()
