"""Reads of the Collector's pages: the counter search, a receipt ready for a template (from its
snapshot), a parcel's payments and the office's day report with its over/short. The statement
itself is ``billing.accounts.statement``. Nothing here writes; amounts are ``Decimal`` dollars,
dates are ``date``."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date
from decimal import Decimal
from typing import Any

from django.db.models import Count, Q, QuerySet, Sum
from django.utils.translation import pgettext_lazy

from parcels import search
from parcels.models import Parcel

from .accounts import Statement, StatementLine
from .models import BooksCheck, LedgerEntry, Office, Payment, Receipt, Refund, RefundRequest, ReminderAttempt
from .snapshots import ReceiptApplication, ReceiptSnapshot

ZERO = Decimal("0.00")  # dollars
SEARCH_LIMIT = 50


def parcel_search(*, query: str, limit: int = SEARCH_LIMIT) -> QuerySet[Parcel]:
    """Parcels whose cadastre number (with or without prefix and dashes), owner name (whatever
    the accents and case) or owner key contains every word typed (``parcels.search``). At most
    ``limit + 1`` rows, so the page can say "more"."""
    if not search.words(query):
        return Parcel.objects.none()
    return search.parcels_matching(Parcel.objects.all(), query).select_related("owner").order_by("parcel_id")[: limit + 1]


@dataclass(frozen=True)
class LedgerLine:
    """One row of a parcel's ledger with the balance after it (Σ debits − Σ credits so far)."""

    entry: LedgerEntry
    balance: Decimal


def parcel_ledger(*, parcel: Parcel) -> list[LedgerLine]:
    """¶12, ¶13: the parcel's append-only ledger in date order (a charge on its due date), each
    row with the running balance; the last balance is what the statement equals (issue 17: a
    void's reversals are rows of their own, naming the void). One query."""
    lines, balance = [], ZERO
    for entry in LedgerEntry.objects.filter(parcel=parcel).order_by("entry_date", "id"):
        balance += entry.debit.amount - entry.credit.amount
        lines.append(LedgerLine(entry=entry, balance=balance))
    return lines


def parcel_reminder_log(*, parcel: Parcel, limit: int = 50) -> QuerySet[ReminderAttempt]:
    """Issue 19: the e-mail reminders tried for the parcel, newest first: each send or failure,
    to which address, when, with the charge or seizure notice it was about (one query)."""
    return (ReminderAttempt.objects.filter(send__parcel=parcel)
            .select_related("send__charge__fiscal_year", "send__seizure_step").order_by("-attempted_at", "-id")[:limit])


def books_check_list() -> QuerySet[BooksCheck]:
    """Every recorded check of the books, the latest first."""
    return BooksCheck.objects.select_related("acting_user").order_by("-started_at", "-pk")


def parcel_payments(*, parcel: Parcel, until: date | None = None) -> QuerySet[Payment]:
    """The parcel's payments (newest first) with their receipts and voids, for the statement page."""
    payments = Payment.objects.filter(parcel=parcel).select_related("receipt", "receipt__office", "void")
    if until is not None:
        payments = payments.filter(paid_on__lte=until)
    return payments.order_by("-paid_on", "-id")


# --- the receipt, from its snapshot only ---------------------------------------------------------


@dataclass(frozen=True)
class ReceiptDisplay:
    receipt: Receipt
    number: str
    office_code: str
    office_name: str
    paid_on: date
    payer: str
    owner_key: str
    collector: str
    parcel_id: str
    gravity_acres: Decimal
    pumped_acres: Decimal
    equivalent_acres: Decimal
    amount: Decimal
    method: str
    reference: str
    lines: list[ReceiptApplication]
    credit_balance: Decimal
    total_due_after: Decimal
    total_balance_after: Decimal
    void: Any = None
    totals: dict[str, Decimal] = field(default_factory=dict)
    tendered: Decimal | None = None  # cash handed over, and the change given back (cash payments only)
    change: Decimal | None = None
    backdate_reason: str = ""  # a back-dated payment: the reason, and the day it was recorded
    recorded_on: date | None = None

    @property
    def method_label(self) -> str:
        return str(Payment.Method(self.method).label) if self.method in Payment.Method.values else self.method

    @property
    def partial(self) -> bool:
        return self.total_due_after > 0

    @property
    def levies(self) -> list[ReceiptApplication]:
        """¶9: the O&M levy and the water-right credit of each fiscal year the payment touched,
        once per year (both installments of a year carry the same roll figures)."""
        seen: dict[str, ReceiptApplication] = {}
        for line in self.lines:
            if line.om_charge is not None and line.fiscal_year not in seen:
                seen[line.fiscal_year] = line
        return list(seen.values())


def receipt_display(receipt: Receipt) -> ReceiptDisplay:
    """The receipt as issued: read from its stored snapshot, never recomputed (house style:
    issued documents are immutable). Only the void, a later document of its own, is looked up."""
    snap = ReceiptSnapshot.from_json(receipt.snapshot)
    lines = list(snap.applications)
    payment = receipt.payment
    return ReceiptDisplay(
        receipt=receipt, number=receipt.display_number, office_code=snap.office_code, office_name=snap.office_name,
        paid_on=snap.paid_on, payer=snap.owner_name, owner_key=snap.owner_key, collector=snap.received_by,
        parcel_id=snap.parcel_id, gravity_acres=snap.gravity_acres, pumped_acres=snap.pumped_acres,
        equivalent_acres=snap.equivalent_acres, amount=snap.amount, method=snap.method, reference=snap.reference, lines=lines,
        credit_balance=snap.credit_balance, total_due_after=snap.total_due_after, total_balance_after=snap.total_balance_after,
        void=getattr(payment, "void", None),
        tendered=snap.tendered, change=snap.change, backdate_reason=snap.backdate_reason, recorded_on=snap.recorded_on,
        totals={
            "surcharge": sum((line.surcharge for line in lines), ZERO),
            "principal_paid": sum((line.principal_paid for line in lines), ZERO),
        },
    )


# --- the office's day ------------------------------------------------------------------------------


@dataclass(frozen=True)
class MethodTotal:
    method: str
    label: str
    count: int
    amount: Decimal


@dataclass(frozen=True)
class DayReport:
    office: Office
    day: date
    payments: QuerySet[Payment]  # the day's receipts in number order, unread: the page reads one page of them
    by_method: list[MethodTotal]
    total: Decimal
    count: int
    voided_total: Decimal
    voided_count: int
    # Issue 18: the refunds the office recorded that day; those paid in cash left the drawer.
    refunds: list[Refund] = field(default_factory=list)

    @property
    def cash_refunds(self) -> Decimal:
        return sum((r.amount.amount for r in self.refunds if r.method == Refund.Method.CASH), ZERO)

    @property
    def expected_cash(self) -> Decimal:
        return self.expected(Payment.Method.CASH)

    def expected(self, method: str) -> Decimal:
        """What the drawer should hold of ``method``: the receipts, less the cash refunds for cash."""
        received = next((row.amount for row in self.by_method if row.method == method), ZERO)
        return received - self.cash_refunds if method == Payment.Method.CASH else received


def day_report(*, office: Office, day: date) -> DayReport:
    """The office's receipts of ``day`` in number order, with totals by method of payment, and
    the refunds it recorded that day (issue 18). The totals in one grouped query, whatever the
    number of receipts; the receipts themselves as a query the page reads a page of (issue 20:
    an office's day of 2,000 receipts took a second of CPU to list whole)."""
    payments = Payment.objects.filter(office=office, paid_on=day)
    # A payment voided the same day never stayed in the drawer; one voided later (a check that
    # bounced afterwards) was in the drawer when the day was counted.
    in_drawer = Q(void__isnull=True) | Q(void__voided_on__gt=day)
    voided_that_day = Q(void__voided_on__lte=day)
    sums = {row["method"]: row for row in payments.order_by().values("method").annotate(
        drawer_count=Count("pk", filter=in_drawer), drawer_amount=Sum("amount", filter=in_drawer),
        voided_count=Count("pk", filter=voided_that_day), voided_amount=Sum("amount", filter=voided_that_day),
    )}

    def dollars(value: Any) -> Decimal:
        return getattr(value, "amount", value) or ZERO  # django-money may hand a sum back as Money

    by_method = [MethodTotal(method=method.value, label=str(method.label), count=sums.get(method.value, {}).get("drawer_count", 0),
                             amount=dollars(sums.get(method.value, {}).get("drawer_amount"))) for method in Payment.Method]
    refunds = list(Refund.objects.filter(office=office, refunded_on=day).select_related("parcel", "refunded_by").order_by("number", "id"))
    return DayReport(
        office=office, day=day,
        payments=payments.select_related("receipt", "receipt__office", "parcel", "collector", "void").order_by("receipt__number", "id"),
        by_method=by_method, total=sum((row.amount for row in by_method), ZERO), count=sum(row.count for row in by_method),
        voided_total=sum((dollars(row["voided_amount"]) for row in sums.values()), ZERO),
        voided_count=sum(row["voided_count"] for row in sums.values()), refunds=refunds,
    )


@dataclass(frozen=True)
class OverShort:
    """Counted against expected for one kind of money: ``difference > 0`` is over (*sobrante*),
    ``< 0`` short (*faltante*)."""

    label: str
    expected: Decimal
    counted: Decimal

    @property
    def difference(self) -> Decimal:
        return self.counted - self.expected


def day_over_short(*, report: DayReport, counted_cash: Decimal | None, counted_checks: Decimal | None) -> list[OverShort]:
    """Cash and checks are counted in the drawer; card and transfer payments are not (the bank
    settles them). Only what was typed is compared."""
    rows = []
    if counted_cash is not None:
        rows.append(OverShort(label=str(Payment.Method.CASH.label), expected=report.expected(Payment.Method.CASH), counted=counted_cash))
    if counted_checks is not None:
        rows.append(OverShort(label=str(Payment.Method.CHECK.label), expected=report.expected(Payment.Method.CHECK),
                              counted=counted_checks))
    return rows


# --- the debt of a certificate or a seizure notice (¶11, ¶12) ----------------------------------------


DEBT_STATUS = {  # a charge's status on a certificate or notice
    "paid": pgettext_lazy("estado del cargo", "pagado"),
    "not_due": pgettext_lazy("estado del cargo", "por vencer"),
    "due": pgettext_lazy("estado del cargo", "vencido"),
    "delinquent": pgettext_lazy("estado del cargo", "moroso"),
}


@dataclass(frozen=True)
class DebtRow:
    """One charge of a certificate or a notice with its status on the document's date: paid,
    not yet due (*por vencer*: part of the lien, not owed today), due within its 60 days
    (*vencido*) or delinquent (*moroso*, ¶12: the surcharge runs)."""

    line: StatementLine
    status: str

    @property
    def status_label(self) -> str:
        return str(DEBT_STATUS[self.status])

    @property
    def due_today(self) -> bool:
        return self.status in ("due", "delinquent")


def _column_sums(rows: list[DebtRow]) -> dict[str, Decimal]:
    return {column: sum((getattr(row.line, column) for row in rows), ZERO) for column in ("principal", "surcharge", "paid", "balance")}


@dataclass(frozen=True)
class DebtTable:
    """¶11, ¶12, ¶13: the rows of a certificate or notice and its two totals, each the sum of its
    own rows, column by column: what is owed today (the rows already due: *adeudado hoy*) and the
    whole lien (every row, installments not yet due included: *gravamen total*, ¶11). The page
    and the PDF print this same table, so what the paper says adds up with a pencil."""

    as_of: date
    rows: tuple[DebtRow, ...]
    credit_balance: Decimal

    @property
    def due_today(self) -> dict[str, Decimal]:
        return _column_sums([row for row in self.rows if row.due_today])

    @property
    def lien(self) -> dict[str, Decimal]:
        return _column_sums(list(self.rows))

    @property
    def has_not_due(self) -> bool:
        return any(row.status == "not_due" and row.line.balance > 0 for row in self.rows)


def debt_row_status(line: StatementLine, as_of: date) -> str:
    if line.balance <= 0:
        return "paid"
    if line.due_date > as_of:
        return "not_due"
    if line.last_day_to_pay < as_of:
        return "delinquent"
    return "due"


def debt_table(statement: Statement, *, owing_only: bool = False) -> DebtTable:
    """The table of ``statement`` (a certificate lists every charge, a seizure notice only those
    that owe something). Its due-today total equals ``statement.total_due`` and its lien total
    ``statement.total_balance`` (``billing.accounts.account_state``); a statement where they would not
    is refused rather than printed."""
    rows = tuple(DebtRow(line=line, status=debt_row_status(line, statement.as_of)) for line in statement.lines
                 if not owing_only or line.balance > 0)
    table = DebtTable(as_of=statement.as_of, rows=rows, credit_balance=statement.credit_balance)
    if table.due_today["balance"] != statement.total_due or table.lien["balance"] != statement.total_balance:
        raise ValueError(f"the rows of {statement.parcel_id} as of {statement.as_of} do not add up to the statement's totals")
    return table


def owed_today_holds_through(*, parcel: Parcel, as_of: date) -> date | None:
    """¶12, ¶13: the last day the parcel's *adeudado* as of ``as_of`` stays that amount
    (``rules.owed_today_holds_through``): the estado and the public lookup say until when it
    holds, as a bill does (issue 18, point 6). ``None`` when nothing owed will change."""
    from . import rules
    from .accounts import account_states

    account = account_states(parcels=[parcel], as_of=as_of, roll_lines=False)[parcel.pk]
    return rules.owed_today_holds_through(account=account.state)


# --- an open seizure procedure, as its landowner reads it (¶14, issue 18) ------------------------


@dataclass(frozen=True)
class OpenSeizure:
    """¶14: a parcel's open seizure case with its steps, oldest first, for the alert the owner's
    home and statement show first: what the notice claimed, until when it may be paid (the
    notice's 30-day term) and what the parcel owes today (paying it all stops the procedure)."""

    parcel: Parcel
    steps: tuple[Any, ...]  # SeizureStep, issued order
    owed_now: Decimal
    today: date

    @property
    def notice(self) -> Any:
        return next((step for step in self.steps if step.kind == "notice"), None)

    @property
    def last(self) -> Any:
        return self.steps[-1]

    @property
    def claimed(self) -> Decimal:
        """What the latest step says is owed on its date (its frozen debt)."""
        return Decimal(self.last.debt["total_due"])

    @property
    def term_ends(self) -> date | None:
        return self.notice.term_ends if self.notice else None

    @property
    def term_running(self) -> bool:
        """Whether the notice's term to pay still runs today (its last day included)."""
        return self.term_ends is not None and self.today <= self.term_ends


def open_seizures(*, parcels: list[Parcel], owed: dict[int, Decimal], today: date) -> list[OpenSeizure]:
    """Every open seizure case of ``parcels`` (``owed``: each parcel's amount owed ``today``, by
    pk), in parcel order; two queries."""
    from .models import SeizureCase, SeizureStep

    by_pk = {parcel.pk: parcel for parcel in parcels}
    cases = {case.pk: case.parcel_id for case in SeizureCase.objects.filter(parcel_id__in=by_pk, status=SeizureCase.Status.OPEN)}
    steps: dict[int, list[Any]] = {}
    for step in SeizureStep.objects.filter(case_id__in=cases).defer("pdf").order_by("issued_on", "id"):
        steps.setdefault(cases[step.case_id], []).append(step)
    return [OpenSeizure(parcel=parcel, steps=tuple(steps[parcel.pk]), owed_now=owed.get(parcel.pk, ZERO), today=today)
            for parcel in parcels if steps.get(parcel.pk)]


def refund_requests_pending() -> QuerySet[RefundRequest]:
    """Issue 19: refund requests awaiting a second supervisor, oldest first."""
    return (RefundRequest.objects.filter(status=RefundRequest.Status.REQUESTED)
            .select_related("parcel__owner", "office", "requested_by").order_by("requested_at", "id"))


def refund_requests_decided() -> QuerySet[RefundRequest]:
    """Issue 19: decided refund requests, the latest first, with the refund an approval posted."""
    return (RefundRequest.objects.exclude(status=RefundRequest.Status.REQUESTED)
            .select_related("parcel", "office", "requested_by", "decided_by", "refund").order_by("-decided_at", "-id"))
