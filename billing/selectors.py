"""Reads of the Collector's pages: the counter search, a statement and a receipt ready for a
template, a parcel's payments and the office's day report with its over/short. Nothing here
writes; amounts are ``Decimal`` dollars, dates are ``date``."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date
from decimal import Decimal
from typing import Any

from django.db.models import QuerySet

from parcels import search
from parcels.models import Parcel

from . import services
from .models import BooksCheck, Office, Payment, Receipt

ZERO = Decimal("0.00")  # dollars
SEARCH_LIMIT = 50


def parcel_search(*, query: str, limit: int = SEARCH_LIMIT) -> QuerySet[Parcel]:
    """Parcels whose cadastre number (with or without prefix and dashes), owner name (whatever
    the accents and case) or owner key contains every word typed (``parcels.search``). At most
    ``limit + 1`` rows, so the page can say "more"."""
    if not search.words(query):
        return Parcel.objects.none()
    return search.parcels_matching(Parcel.objects.all(), query).select_related("owner").order_by("parcel_id")[: limit + 1]


def books_check_list() -> QuerySet[BooksCheck]:
    """Every recorded check of the books, the latest first."""
    return BooksCheck.objects.select_related("acting_user").order_by("-started_at", "-pk")


def _decimal(value: Any) -> Decimal | None:
    return None if value is None or value == "" else Decimal(str(value))


def _date(value: Any) -> date | None:
    return date.fromisoformat(value) if value else None


@dataclass(frozen=True)
class StatementLine:
    description: str
    fiscal_year: str
    number: int | None
    kind: str
    due_date: date
    last_day_to_pay: date
    principal: Decimal
    surcharge: Decimal
    surcharge_periods: int
    surcharge_basis: str
    paid: Decimal
    balance: Decimal
    as_of: date

    @property
    def status(self) -> str:
        """``paid``, ``late`` (past the last day to pay, ¶12), ``due`` or ``upcoming``."""
        if self.balance <= 0:
            return "paid"
        if self.as_of > self.last_day_to_pay:
            return "late"
        if self.as_of >= self.due_date:
            return "due"
        return "upcoming"


@dataclass(frozen=True)
class Statement:
    parcel: Parcel
    as_of: date
    lines: list[StatementLine]
    total_due: Decimal
    total_balance: Decimal
    credit_balance: Decimal

    @property
    def totals(self) -> dict[str, Decimal]:
        return {
            "principal": sum((line.principal for line in self.lines), ZERO),
            "surcharge": sum((line.surcharge for line in self.lines), ZERO),
            "paid": sum((line.paid for line in self.lines), ZERO),
            "balance": sum((line.balance for line in self.lines), ZERO),
        }


def statement_for(*, parcel: Parcel, as_of: date) -> Statement:
    """¶12, ¶13: ``services.statement`` with its strings turned back into dates and Decimals."""
    data = services.statement(parcel=parcel, as_of=as_of)
    lines = [
        StatementLine(
            description=item["description"], fiscal_year=item["fiscal_year"], number=item["number"], kind=item["kind"],
            due_date=date.fromisoformat(item["due_date"]), last_day_to_pay=date.fromisoformat(item["last_day_to_pay"]),
            principal=Decimal(item["principal"]), surcharge=Decimal(item["surcharge"]),
            surcharge_periods=item["surcharge_periods"], surcharge_basis=item["surcharge_basis"],
            paid=Decimal(item["paid"]), balance=Decimal(item["balance"]), as_of=as_of,
        )
        for item in data["installments"] + data["other_charges"]
    ]
    lines.sort(key=lambda line: (line.due_date, line.fiscal_year, line.number or 0))
    return Statement(
        parcel=parcel, as_of=as_of, lines=lines, total_due=Decimal(data["total_due"]),
        total_balance=Decimal(data["total_balance"]), credit_balance=Decimal(data["credit_balance"]),
    )


@dataclass(frozen=True)
class EarlyPayment:
    """Part of a payment that goes to a charge not yet due (paid early, ¶12)."""

    description: str
    due_date: date
    amount: Decimal


@dataclass(frozen=True)
class PaymentDestination:
    """Where an amount typed at the counter would go, replayed as if paid ``on`` (¶12, ¶13):
    what is due today, then charges not yet due in due-date order, and the rest a credit on the
    account (*crédito a favor*). ``excess`` is the part above what is due today."""

    amount: Decimal
    total_due: Decimal
    to_due: Decimal
    early: tuple[EarlyPayment, ...]
    credit: Decimal

    @property
    def excess(self) -> Decimal:
        return self.amount - self.to_due


def payment_destination(*, parcel: Parcel, amount: Decimal, on: date) -> PaymentDestination:
    """The replay of the account with the amount added as one more payment (nothing is written)."""
    from .rules import PaymentInput

    key = "PREVIEW"  # sorts after every stored payment key (P000…) of the same day, as the real one will
    before = services.account_state(parcel=parcel, as_of=on)
    after = services.account_state(parcel=parcel, as_of=on, extra_payment=PaymentInput(key=key, paid_on=on, amount=amount))
    states = {state.key: state for state in after.state.charges}
    to_due = ZERO
    early: list[EarlyPayment] = []
    for application in after.state.applications:
        if application.payment_key != key:
            continue
        state = states[application.charge_key]
        if state.due <= on:
            to_due += application.amount
        else:
            early.append(EarlyPayment(description=after.charges[application.charge_key].description, due_date=state.due,
                                      amount=application.amount))
    credit = amount - to_due - sum((item.amount for item in early), ZERO)
    return PaymentDestination(amount=amount, total_due=before.state.total_due, to_due=to_due, early=tuple(early),
                              credit=credit)


def parcel_payments(*, parcel: Parcel, until: date | None = None) -> QuerySet[Payment]:
    """The parcel's payments (newest first) with their receipts and voids, for the statement page."""
    payments = Payment.objects.filter(parcel=parcel).select_related("receipt", "receipt__office", "void")
    if until is not None:
        payments = payments.filter(paid_on__lte=until)
    return payments.order_by("-paid_on", "-id")


# --- the receipt, from its snapshot only ---------------------------------------------------------


@dataclass(frozen=True)
class ReceiptLine:
    """¶9: what one payment paid on one charge, as printed on the receipt when it was issued."""

    description: str
    fiscal_year: str
    number: int | None
    kind: str
    om_charge: Decimal | None  # the parcel's O&M charge for the whole fiscal year (¶6, ¶9)
    credit_percent: Decimal | None  # ¶7
    credit: Decimal | None  # the year's credit for ceded water rights (¶7, ¶9)
    net: Decimal | None  # the year's net charge, split in two installments (¶12)
    principal: Decimal  # this charge (the installment)
    due_date: date | None
    last_day_to_pay: date | None
    surcharge: Decimal  # surcharge paid by this payment (¶12)
    surcharge_basis: str
    principal_paid: Decimal
    balance_after: Decimal

    @property
    def paid(self) -> Decimal:
        return self.surcharge + self.principal_paid


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
    lines: list[ReceiptLine]
    credit_balance: Decimal
    total_due_after: Decimal
    total_balance_after: Decimal
    void: Any = None
    totals: dict[str, Decimal] = field(default_factory=dict)
    tendered: Decimal | None = None  # cash handed over, and the change given back (cash payments only)
    change: Decimal | None = None

    @property
    def method_label(self) -> str:
        return str(Payment.Method(self.method).label) if self.method in Payment.Method.values else self.method

    @property
    def partial(self) -> bool:
        return self.total_due_after > 0

    @property
    def levies(self) -> list[ReceiptLine]:
        """¶9: the O&M levy and the water-right credit of each fiscal year the payment touched,
        once per year (both installments of a year carry the same roll figures)."""
        seen: dict[str, ReceiptLine] = {}
        for line in self.lines:
            if line.om_charge is not None and line.fiscal_year not in seen:
                seen[line.fiscal_year] = line
        return list(seen.values())


def receipt_display(receipt: Receipt) -> ReceiptDisplay:
    """The receipt as issued: read from its stored snapshot, never recomputed (house style:
    issued documents are immutable). Only the void, a later document of its own, is looked up."""
    snap = receipt.snapshot
    lines = [
        ReceiptLine(
            description=item["description"], fiscal_year=item["fiscal_year"], number=item.get("number"), kind=item.get("kind", ""),
            om_charge=_decimal(item.get("om_charge")), credit_percent=_decimal(item.get("credit_percent")),
            credit=_decimal(item.get("credit")), net=_decimal(item.get("net")), principal=Decimal(item["principal"]),
            due_date=_date(item.get("due_date")), last_day_to_pay=_date(item.get("last_day_to_pay")),
            surcharge=Decimal(item["surcharge"]), surcharge_basis=item.get("surcharge_basis", ""),
            principal_paid=Decimal(item["principal_paid"]), balance_after=Decimal(item["balance_after"]),
        )
        for item in snap.get("applications", [])
    ]
    payment = receipt.payment
    return ReceiptDisplay(
        receipt=receipt, number=receipt.display_number, office_code=snap["office"]["code"], office_name=snap["office"]["name"],
        paid_on=date.fromisoformat(snap["paid_on"]), payer=snap["owner_name"], owner_key=snap.get("owner_key", ""),
        collector=snap.get("collector", ""), parcel_id=snap["parcel_id"], gravity_acres=Decimal(snap["gravity_acres"]),
        pumped_acres=Decimal(snap["pumped_acres"]), equivalent_acres=Decimal(snap["equivalent_acres"]),
        amount=Decimal(snap["amount"]), method=snap["method"], reference=snap.get("reference", ""), lines=lines,
        credit_balance=Decimal(snap["credit_balance"]), total_due_after=Decimal(snap["total_due_after"]),
        total_balance_after=Decimal(snap["total_balance_after"]),
        void=getattr(payment, "void", None),
        tendered=_decimal(snap.get("tendered")), change=_decimal(snap.get("change")),
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
    payments: list[Payment]
    by_method: list[MethodTotal]
    total: Decimal
    count: int
    voided_total: Decimal
    voided_count: int

    def expected(self, method: str) -> Decimal:
        return next((row.amount for row in self.by_method if row.method == method), ZERO)


def counts_in_drawer(payment: Payment, day: date) -> bool:
    """A payment voided the same day never stayed in the drawer; one voided later (a check that
    bounced afterwards) was in the drawer when the day was counted."""
    void = getattr(payment, "void", None)
    return void is None or void.voided_on > day


def day_report(*, office: Office, day: date) -> DayReport:
    """The office's receipts of ``day`` in number order, with totals by method of payment. One query."""
    payments = list(
        Payment.objects.filter(office=office, paid_on=day)
        .select_related("receipt", "receipt__office", "parcel", "collector", "void")
        .order_by("receipt__number", "id")
    )
    by_method = []
    for method in Payment.Method:
        rows = [p for p in payments if p.method == method and counts_in_drawer(p, day)]
        by_method.append(MethodTotal(method=method.value, label=str(method.label), count=len(rows),
                                     amount=sum((p.amount.amount for p in rows), ZERO)))
    voided = [p for p in payments if not counts_in_drawer(p, day)]
    return DayReport(
        office=office, day=day, payments=payments, by_method=by_method,
        total=sum((row.amount for row in by_method), ZERO), count=sum(row.count for row in by_method),
        voided_total=sum((p.amount.amount for p in voided), ZERO), voided_count=len(voided),
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
