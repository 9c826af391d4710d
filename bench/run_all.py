"""Runs every benchmark in bench/ and prints one table of figures (``make bench``)."""

from __future__ import annotations

import os
import platform

import bench_documents
import bench_registry_and_roll


def main() -> None:
    rows = bench_registry_and_roll.main() + bench_documents.main()
    print()
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}")
    width = max(len(label) for label, _ in rows)
    print(f"{'benchmark':<{width}}  figure")
    for label, figure in rows:
        print(f"{label:<{width}}  {figure}")


if __name__ == "__main__":
    main()
