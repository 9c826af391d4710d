"""``verify_books``' check ``issued`` (issue 17 §1): an issued estado, debt certificate or bill
printed the statement of its date as the books stood when it was issued, and a statement of a day
never changes (``accounts.known_by_end_of``). So the statement recomputed now, reading only the rows
recorded before the document was issued, must equal what the document stored, to the cent.

Its cost is bounded by the documents it reads, not by the books: a sample of ``sample`` documents
of each kind (drawn in SQL), or every document with ``sample=None`` (``verify_books --full``).
Each document is a few queries (its parcel's account), so this check is kept out of
``books.verify()`` and its set-based query budget."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from datetime import datetime
from typing import Any

from django.db.models import QuerySet
from django.utils import timezone

from . import accounts
from .models import AccountStatement, Bill, DebtCertificate
from .pdf import document_language

DEFAULT_SAMPLE = 20  # documents of each kind read by default (``verify_books --sample N``)

# The account figures a bill froze (``snapshots.BillSnapshot``) that its statement decides; the rest
# (the owner, the office, the roll's figures) are not the account's.
BILL_FIGURES = ("principal", "due_date", "last_day_to_pay", "surcharge", "surcharge_rate", "grace_days", "paid",
                "balance", "total_due")
# Bills frozen since issue 18 also froze the one amount to pay and what it pays (``later_due`` marks them).
BILL_TO_PAY = ("amount_to_pay", "pay_by", "owed", "later_due")
# Bills frozen since issue 19 carry their charge's RF payment reference: it must still encode that charge.
BILL_REFERENCE = ("payment_reference",)


def issued_moment(*, as_of: Any, issued_at: datetime) -> datetime:
    """The moment a document's statement was read at: the end of its date when that date was
    already past on the day it was issued (``accounts.known_by_end_of``), else its issue moment."""
    past = accounts.known_by_end_of(as_of, today=timezone.localtime(issued_at).date())
    return past if past is not None else issued_at


def _sampled(rows: QuerySet, sample: int | None) -> list[Any]:
    rows = rows.select_related("parcel")
    if sample is not None:
        rows = rows.order_by("?")[:sample]
    return sorted(rows, key=lambda row: row.number)


def _difference(again: dict[str, Any], stored: dict[str, Any], names: Iterable[str]) -> str | None:
    """The first of ``names`` whose value differs, worded ``name: stored X, now Y`` (a list is
    named only: its items are too long for a finding), or ``None`` when all agree."""
    for name in names:
        was, now = stored.get(name), again.get(name)
        if was != now:
            if isinstance(was, list | dict) or isinstance(now, list | dict):
                return f"{name} differs"
            return f"{name}: stored {was}, now {now}"
    return None


def _statement_difference(parcel: Any, as_of: Any, known_by: datetime, stored: dict[str, Any]) -> str | None:
    """What differs between the statement read again and ``stored`` (the statement's keys only),
    or ``None``. How each surcharge was counted is worded in the document's language, which an
    estado does not record: a match in either language is a match, and a difference is named as
    read in the document's language. Each language is read as ``pdf.document_language`` words
    it, as the document was issued (an English estado writes its entries' dates long)."""
    keys = ("parcel_id", "as_of", "installments", "other_charges", "total_due", "total_balance", "credit_balance")
    language = stored.get("language") or "es"
    first = None
    for lang in dict.fromkeys((language, "es", "en")):
        with document_language(lang):  # worded as the document was: an English one's dates all long
            difference = _difference(accounts.statement(parcel=parcel, as_of=as_of, known_by=known_by).to_json(),
                                     stored, keys)
        if difference is None:
            return None
        first = first or difference
    return first


def _bill_difference(bill: Bill) -> str | None:
    from .services.bills import accounts_facts, bill_snapshot  # bills' writers sit above this check

    if bill.charge_id is None:  # a zero notice: nothing owed, no account figures
        return None
    known_by = issued_moment(as_of=bill.issued_on, issued_at=bill.issued_at)
    charge = bill.charge
    facts = accounts_facts(charges=[charge], issued_on=bill.issued_on, known_by=known_by)[charge.pk]
    again = bill_snapshot(charge=charge, issued_on=bill.issued_on, facts=facts, dues={})
    figures = BILL_FIGURES + (BILL_TO_PAY if "later_due" in bill.snapshot else ())
    figures += BILL_REFERENCE if "payment_reference" in bill.snapshot else ()
    return _difference(again, bill.snapshot, figures)


def _first_differences(documents: Iterable[Any], difference: Callable[[Any], str | None], limit: int,
                       describe: Callable[[Any], str]) -> list[str]:
    """The first ``limit`` documents that differ, described with what differs; a last line says
    when there are more."""
    bad: list[str] = []
    for document in documents:
        what = difference(document)
        if what is not None:
            if len(bad) == limit:
                bad.append(f"more findings of this kind not listed (first {limit} shown)")
                break
            bad.append(f"{describe(document)} ({what})")
    return bad


def check_issued(*, sample: int | None = DEFAULT_SAMPLE, limit: int = 50) -> list[str]:
    """¶11, ¶12, ¶13: for estados, debt certificates and bills (``sample`` of each, or all), the
    statement of the document's date recomputed now, as the books stood when it was issued,
    equals what the document stored. One message per document that differs, naming it and the
    first figure that differs (the books' check ``issued`` words them as findings)."""
    def statement_difference(doc: Any) -> str | None:
        return _statement_difference(doc.parcel, doc.as_of,
                                     issued_moment(as_of=doc.as_of, issued_at=doc.issued_at), doc.snapshot)

    found = _first_differences(_sampled(AccountStatement.objects.all(), sample), statement_difference, limit, lambda doc: (
        f"estado {doc.number} ({doc.parcel.parcel_id}, as of {doc.as_of.isoformat()}): the statement of that day "
        "recomputed now differs from the one it stored"))
    found += _first_differences(_sampled(DebtCertificate.objects.all(), sample), statement_difference, limit, lambda doc: (
        f"debt certificate {doc.number} ({doc.parcel.parcel_id}, as of {doc.as_of.isoformat()}): the statement "
        "of that day recomputed now differs from the one it certified"))
    bills = _sampled(Bill.objects.select_related("charge__fiscal_year", "charge__roll_line", "parcel__owner"), sample)
    found += _first_differences(bills, _bill_difference, limit, lambda doc: (
        f"bill {doc.number} ({doc.parcel.parcel_id}, issued {doc.issued_on.isoformat()}): its account figures "
        "recomputed now differ from the ones it printed"))
    return found
