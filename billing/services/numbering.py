"""Gapless numbers of the document series (certificates, seizure notices, bills) and the
fiscal-year row a dated charge belongs to. Both lock or create rows inside the caller's transaction."""

from __future__ import annotations

from datetime import date

from levy.models import FiscalYear

from ..accounts import fiscal_year_of
from ..models import DocumentSeries


def document_number(kind: str, prefix: str, on: date) -> str:
    """The next gapless number of a document series (locked inside the caller's transaction)."""
    DocumentSeries.objects.get_or_create(kind=kind, year=on.year)
    series = DocumentSeries.objects.select_for_update().get(kind=kind, year=on.year)
    series.last_number += 1
    series.save(update_fields=["last_number"])
    return f"{prefix}-{on.year}-{series.last_number:06d}"


def numbers_allocate(kind: str, prefix: str, on: date, count: int) -> list[str]:
    """``count`` consecutive numbers of a gapless series (the same rows and format as
    ``document_number``), under the series' row lock in the caller's transaction."""
    DocumentSeries.objects.get_or_create(kind=kind, year=on.year)
    series = DocumentSeries.objects.select_for_update().get(kind=kind, year=on.year)
    first = series.last_number + 1
    series.last_number += count
    series.save(update_fields=["last_number"])
    return [f"{prefix}-{on.year}-{n:06d}" for n in range(first, first + count)]


def fiscal_year_for(day: date) -> FiscalYear:
    """The fiscal year a date falls in, created when it is not on file yet."""
    label = fiscal_year_of(day)
    year, _created = FiscalYear.objects.get_or_create(label=label, defaults={"start": date(int(label[:4]), 7, 1)})
    return year
