"""A recorded check of the books (``billing.books``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.db import connection, transaction
from django.utils import timezone

from .. import books, chain
from ..models import BooksCheck, BooksCheckpoint


def books_check_run(*, acting_user: Any, trigger: str, expected_totals: dict[str, str] | None = None,
                    compared_with: str = "", limit: int = books.DEFAULT_LIMIT, issued_sample: int | None = None,
                    extra_findings: Sequence[books.Finding] = ()) -> BooksCheck:
    """Checks the books and records the run (``BooksCheck``): its findings (and, with
    ``expected_totals``, each control total that differs from them) and the control totals, all
    read in one REPEATABLE READ snapshot with the record written in the same transaction.
    ``extra_findings`` (the signed anchors' differences, ``billing.anchors.anchor_check``) are
    recorded with them: a check that has any stores no checkpoint."""
    if connection.in_atomic_block:  # inside a caller's transaction (a test): its snapshot rules
        return _books_check_record(acting_user=acting_user, trigger=trigger, expected_totals=expected_totals,
                                   compared_with=compared_with, limit=limit, issued_sample=issued_sample,
                                   extra_findings=extra_findings)
    connection.ensure_connection()
    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        return _books_check_record(acting_user=acting_user, trigger=trigger, expected_totals=expected_totals,
                                   compared_with=compared_with, limit=limit, issued_sample=issued_sample,
                                   extra_findings=extra_findings)


@transaction.atomic
def _books_check_record(*, acting_user: Any, trigger: str, expected_totals: dict[str, str] | None, compared_with: str,
                        limit: int, issued_sample: int | None = None,
                        extra_findings: Sequence[books.Finding] = ()) -> BooksCheck:
    started_at = timezone.now()
    findings, totals = books.check(limit=limit, expected_totals=expected_totals, issued_sample=issued_sample)
    findings = [*findings, *extra_findings]
    check = BooksCheck(
        started_at=started_at, finished_at=timezone.now(), passed=not findings,
        findings=[{"check": finding.check, "message": finding.message} for finding in findings],
        totals=[[name, value] for name, value in totals.items()], compared_with=compared_with[:255], trigger=trigger,
        acting_user=acting_user,
    )
    check.full_clean()
    check.save()
    checkpoint_record(check)  # a passing check's control totals, which later checks must find again
    return check


def checkpoint_record(check: Any) -> Any:
    """After a passing ``BooksCheck``: store the marks and totals the next checks must find
    again (``billing.books.check_checkpoint``). A failing check stores none, so the last
    checkpoint stays the last state known to be right."""
    if not check.passed:
        return None
    with connection.cursor() as cursor:
        marks = books.checkpoint_marks(cursor, until=check.started_at - chain.CHECKPOINT_SETTLE)
        totals = books.checkpoint_totals(cursor, marks)
    return BooksCheckpoint.objects.create(books_check=check, marks=marks, totals=[[name, value] for name, value in totals.items()])
