"""Bulk writes with PostgreSQL's COPY, for the paths that move 100,000 rows (imports, rolls).

Row triggers (history, immutability) and constraints still run for every copied row: COPY only
skips Django's per-object SQL building, which dominates at this size.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from django.db import connection, models


def copy_insert(model: type[models.Model], columns: Sequence[str], rows: Iterable[Sequence[Any]]) -> int:
    """COPY ``rows`` (tuples in the order of ``columns``, database column names) into ``model``'s table."""
    table = connection.ops.quote_name(model._meta.db_table)
    names = ", ".join(connection.ops.quote_name(column) for column in columns)
    count = 0
    with connection.cursor() as cursor:
        # pghistory names the acting user by prefixing the next statement it does not ignore (it
        # ignores SELECT, and a COPY never passes through it); the setting lasts the transaction.
        cursor.execute("SET LOCAL lajas.bulk_write = 'copy'")
        with cursor.cursor.copy(f"COPY {table} ({names}) FROM STDIN") as copy:
            for row in rows:
                copy.write_row(row)
                count += 1
    return count


def copy_update(model: type[models.Model], key: str, columns: Sequence[str], rows: Iterable[Sequence[Any]]) -> int:
    """Update many rows at once: COPY ``(key, *columns)`` into a temporary table, then one
    ``UPDATE … FROM``. Each updated row still fires the table's row triggers."""
    table = connection.ops.quote_name(model._meta.db_table)
    quote = connection.ops.quote_name
    with connection.cursor() as cursor:
        cursor.execute(
            f"CREATE TEMPORARY TABLE _bulk_update ON COMMIT DROP AS SELECT {quote(key)}, "
            + ", ".join(quote(column) for column in columns)
            + f" FROM {table} WITH NO DATA"
        )
        with cursor.cursor.copy(
            f"COPY _bulk_update ({quote(key)}, {', '.join(quote(c) for c in columns)}) FROM STDIN"
        ) as copy:
            for row in rows:
                copy.write_row(row)
        assignments = ", ".join(f"{quote(column)} = u.{quote(column)}" for column in columns)
        cursor.execute(f"UPDATE {table} t SET {assignments} FROM _bulk_update u WHERE t.{quote(key)} = u.{quote(key)}")
        updated = cursor.rowcount
        cursor.execute("DROP TABLE _bulk_update")
    return updated
