"""Reads only: a parcel's account built from its charges, payments and corrections with the pure
rules of ``billing.rules`` (¶12, ¶13), the statement (*estado de cuenta*) as typed, frozen
``Statement``/``StatementLine`` with one JSON form (certificates, seizure steps and the command
line store or print exactly ``Statement.to_json()``), the ledger's balance, the debt and the
delinquent list. The calendar of last days to pay and the parameters in force live here too.
Nothing here writes (the delinquent list's cache aside)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from datetime import date, datetime, time, timedelta
from decimal import Decimal
from typing import Any

from django.db import connections
from django.db.models import Sum
from django.utils import timezone
from django.utils.translation import gettext as _

from levy.models import LegalParameterSet, ParameterHistory, RollCorrection, RollLine
from levy.rules import fiscal_year_label, installments
from parcels.kept import kept
from parcels.models import Parcel
from parcels.search import one_by_code

from . import rules
from .errors import BillingError
from .models import (
    Charge,
    CreditApplication,
    GiveBack,
    LedgerEntry,
    OfficeClosure,
    Payment,
    PaymentAllocation,
    PrincipalAdjustment,
    Refund,
    VoidReversal,
    charge_names,
)
from .models import LastDayMove as LastDayMoveRecord
from .wording import (
    CREDIT_APPLIED,
    CREDIT_APPLIED_VOIDED,
    EVENT_KINDS,
    GIVE_BACK_VOIDED,
    GIVEN_BACK,
    LAST_DAY_MOVED,
    LOWERED,
    basis_text,
    event_text,
    line_label,
    name_from_json,
    name_to_json,
    surcharge_explanation,
    surcharge_runs,
)

ZERO = Decimal("0.00")


# --- What the books knew, and when --------------------------------------------------------------

# The default ``known_by`` of the reads below: the books as they stood at the end of the day read
# (``known_by_end_of``). ``None`` reads everything recorded so far; a moment reads the rows recorded
# before it (an issued document's ``issued_at``: what the books held when it was issued).
AS_OF_DAY = "as-of-day"
KnownBy = datetime | None | str


def known_by_end_of(as_of: date, *, today: date | None = None) -> datetime | None:
    """¶12, ¶13 (docs/interpretations.md, "a past day stays past"): a statement of a past day is
    the account as the books stood at the end of that day at the office (America/Puerto_Rico), so
    it reads only the rows recorded before midnight that ends it; a statement of ``today`` or a
    later day reads everything recorded so far (None)."""
    if as_of >= (today or timezone.localdate()):
        return None
    return datetime.combine(as_of + timedelta(days=1), time(0), tzinfo=timezone.get_default_timezone())


def known_by_of(known_by: KnownBy, as_of: date) -> datetime | None:
    """The cut-off moment a read as of ``as_of`` uses: ``AS_OF_DAY`` resolves to ``known_by_end_of``."""
    if known_by == AS_OF_DAY:
        return known_by_end_of(as_of)
    assert known_by is None or isinstance(known_by, datetime)
    return known_by


def _recorded(rows, known_by: datetime | None, field_name: str = "created_at"):  # noqa: ANN001, ANN202
    """The rows of a queryset recorded before ``known_by`` (all without one)."""
    return rows if known_by is None else rows.filter(**{f"{field_name}__lt": known_by})


# --- Calendar and parameters ------------------------------------------------------------------


def closed_days(years: Iterable[int], *, known_by: datetime | None = None) -> frozenset[date]:
    """¶12: Sundays aside, the days a last day to pay moves past: Puerto Rico legal holidays and
    the office closures staff recorded (hurricanes), those recorded before ``known_by`` if given."""
    years = sorted(set(years))
    closures = _recorded(OfficeClosure.objects.filter(day__year__in=years), known_by).values_list("day", flat=True)
    return rules.pr_legal_holidays(years=years) | frozenset(closures)


def delinquency_parameters(on: date, *, known_by: datetime | None = None) -> rules.DelinquencyParameters:
    return delinquency_parameters_of(LegalParameterSet.in_force(on, known_by=known_by))


def delinquency_parameters_of(params: LegalParameterSet) -> rules.DelinquencyParameters:
    """¶12: the delinquency rules of one legal-parameter row."""
    return rules.DelinquencyParameters(
        grace_days=params.grace_days, surcharge_rate=params.surcharge_rate, saturdays_move=params.saturdays_move_last_day,
    )


def due_and_last_day(*, due: date) -> tuple[date, date]:
    params = delinquency_parameters(due)
    return due, rules.last_day_to_pay(due=due, closed_days=closed_days([due.year, due.year + 1]), params=params)


def fiscal_year_of(day: date) -> str:
    """The fiscal year (July 1 – June 30) a date falls in, e.g. 2026-10-15 → ``2026-2027``."""
    return fiscal_year_label(day.year if day.month >= 7 else day.year - 1)


def charge_last_days(charges: Iterable[tuple[date, date]], *, known_by: datetime | None = None,
                     history: ParameterHistory | None = None) -> dict[tuple[date, date], date]:
    """¶12: the last day to pay an account counts for a charge, by its ``(due date, stored last
    day to pay)``: never earlier than the stored day; later if the legal-parameter row in force
    on the due date gives more grace days; moved past the closed days known now (Sundays, legal
    holidays, recorded closures; Saturdays when that row says so). A closure's dated
    ``LastDayMove`` may move it further from the move's date (``rules.ChargeRecord.last_day_on``).
    Each charge's grace days and Saturday rule are those in force on its due date: a later row
    changes no past. With ``known_by``, only the closures and rows recorded before it count.
    One query for the closures, one for the parameters (none when given their ``history`` read
    with the same ``known_by``), none without charges."""
    pairs = set(charges)
    if not pairs:
        return {}
    history = LegalParameterSet.history(known_by=known_by) if history is None else history
    by_row: dict[int, rules.DelinquencyParameters] = {}
    years = {stored.year for _due, stored in pairs}
    closed = closed_days(years | {year + 1 for year in years}, known_by=known_by)
    found = {}
    for due, stored in pairs:
        row = history.in_force(due)
        params = by_row.get(row.pk) or by_row.setdefault(row.pk, delinquency_parameters_of(row))
        day = max(stored, due + timedelta(days=params.grace_days))
        found[(due, stored)] = rules.next_open_day(day=day, closed_days=closed, params=params)
    return found


# --- A final roll line as corrected -----------------------------------------------------------


def earlier_corrections(corrections: Iterable[RollCorrection]) -> list[rules.EarlierCorrection]:
    """¶9: stored roll corrections, oldest first, as ``rules.line_standing`` and ``correction_plan`` read them."""
    return [rules.EarlierCorrection(charge_delta=c.om_charge_delta.amount, credit_delta=c.credit_delta.amount,
                                    credit_percent=c.credit_percent) for c in corrections]


@dataclass(frozen=True)
class CorrectedLine:
    """¶9, ¶11: what a receipt or bill states as the year's levy and credit: the line as it stands
    (``rules.line_standing``), the net split again by ¶12, and ``corrections``, their numbers in the
    roll (none for a line as finalized)."""

    standing: rules.LineStanding
    first_installment: Decimal  # ¶12: July carries the odd cent
    second_installment: Decimal
    corrections: tuple[int, ...]


def line_as_corrected(line: RollLine) -> CorrectedLine:
    """¶9: a final roll line with every correction recorded so far (the roll itself never changes)."""
    mine = list(RollCorrection.objects.numbered().filter(roll_line=line).order_by("pk"))
    standing = rules.line_standing(roll_charge=line.om_charge, roll_credit=line.credit, roll_credit_percent=line.credit_percent,
                                   earlier=earlier_corrections(mine))
    first, second = installments(net=standing.net) if mine else (line.first_installment, line.second_installment)
    return CorrectedLine(standing=standing, first_installment=first, second_installment=second,
                         corrections=tuple(c.number for c in mine))


# --- The account ------------------------------------------------------------------------------


def charge_key(charge_id: int) -> str:
    return f"C{charge_id:012d}"


def payment_key(payment_id: int) -> str:
    return f"P{payment_id:012d}"


def give_back_ref(pk: int) -> str:
    return f"G{pk}"


def credit_applied_ref(pk: int) -> str:
    return f"A{pk}"


def refund_ref(pk: int) -> str:
    return f"R{pk}"


@dataclass(frozen=True)
class Account:
    parcel: Parcel
    state: rules.AccountState
    charges: dict[str, Charge]
    ledger: rules.LedgerState | None = None
    records: Records | None = None
    known_by: datetime | None = None  # the rows read were those recorded before it (all when None)


@dataclass(frozen=True)
class Records:
    """¶12, ¶13: a parcel's stored records, as ``rules.ledger_state`` reads them (nothing derived)."""

    charges: tuple[rules.ChargeRecord, ...]
    payments: tuple[rules.StoredPayment, ...]
    credit_applied: tuple[rules.CreditApplied, ...]
    given_back: tuple[rules.GivenBack, ...]
    refunds: tuple[rules.RefundRecord, ...]
    reversals: tuple[rules.Reversal, ...] = ()

    def state(self, *, as_of: date, schedule: rules.RateSchedule | None = None) -> rules.LedgerState:
        return rules.ledger_state(
            charges=self.charges, payments=self.payments, credit_applied=self.credit_applied, given_back=self.given_back,
            refunds=self.refunds, reversals=self.reversals, as_of=as_of,
            schedule=LegalParameterSet.history().surcharge_schedule if schedule is None else schedule,
        )

    def surcharge_taken(self, *, charge_key: str, lowerings: Sequence[rules.PrincipalLowering], as_of: date,
                        schedule: rules.RateSchedule) -> tuple[Decimal, ...]:
        """¶9, ¶12: for each of ``lowerings`` (one charge's, recorded by ``as_of``, in the order
        they were recorded), the surcharge as of ``as_of`` it took off that charge: what
        ``rules.ledger_state`` counts on the charge with the lowerings before it, less what it
        counts with it too, every other record as stored. They add up to the surcharge the charge
        would have without them less the surcharge it has (the statement's *recargo recalculado*)."""

        def surcharge_with(count: int) -> Decimal:
            charges = tuple(replace(charge, lowerings=tuple(lowerings[:count])) if charge.key == charge_key else charge
                            for charge in self.charges)
            return replace(self, charges=charges).state(as_of=as_of, schedule=schedule).charge(charge_key).surcharge

        figures = [surcharge_with(count) for count in range(len(lowerings) + 1)]
        return tuple(figures[index] - figures[index + 1] for index in range(len(lowerings)))


def account_state(*, parcel: Parcel, as_of: date, known_by: KnownBy = AS_OF_DAY) -> Account:
    """¶12, ¶13: the parcel's account as of ``as_of`` from its stored records (voids dated after
    ``as_of`` do not count yet), as the books stood at the end of ``as_of`` when that day is past
    (``known_by``, ``account_states``)."""
    return account_states(parcels=[parcel], as_of=as_of, known_by=known_by)[parcel.pk]


def account_with_payment(account: Account, payment: rules.StoredPayment) -> Account:
    """¶12, ¶13: ``account`` (read with ``known_by=None``, its rows locked by the caller) as it
    stands once ``payment`` is stored too: its records plus the payment, replayed by
    ``rules.ledger_state`` as ``account_states`` replays them, without reading the rows again
    (the counter posts a payment and prints the account after it in one transaction)."""
    assert account.records is not None and account.ledger is not None and account.known_by is None
    records = replace(account.records, payments=(*account.records.payments, payment))
    ledger = records.state(as_of=account.ledger.as_of, schedule=LegalParameterSet.history().surcharge_schedule)
    return Account(parcel=account.parcel, state=_account_state_of(ledger, records.payments), charges=account.charges,
                   ledger=ledger, records=records, known_by=None)


def _account_state_of(ledger: rules.LedgerState, payments: Iterable[rules.StoredPayment]) -> rules.AccountState:
    """The ledger state in the shape pages, receipts and bills read (``rules.AccountState``): the
    applications are the stored allocations of the payments that count on ``as_of``."""
    states = []
    for c in ledger.charges:
        states.append(rules.ChargeState(
            key=c.key, principal=c.principal, due=c.due, last_day=c.last_day, periods=len(c.surcharge_basis),
            surcharge=c.surcharge, surcharge_basis=tuple((start, unpaid) for start, _rate, unpaid in c.surcharge_basis),
            principal_paid=c.principal_paid, surcharge_paid=c.surcharge_paid, paid=c.principal_paid + c.surcharge_paid,
            balance=c.balance, accrues_surcharge=c.accrues_surcharge,
            first_delinquent=c.last_day + timedelta(days=1) if c.accrues_surcharge else None,
            surcharge_rates=tuple(rate for _start, rate, _unpaid in c.surcharge_basis),
        ))
    applications = tuple(
        rules.Application(payment_key=p.key, charge_key=a.charge_key, surcharge=a.surcharge, principal=a.principal)
        for p in sorted(payments, key=lambda p: (p.paid_on, p.key)) if p.counts_on(ledger.as_of) for a in p.allocations
    )
    return rules.AccountState(
        as_of=ledger.as_of, charges=tuple(states), applications=applications, credit_balance=ledger.credit,
        total_due=sum((s.balance for s in states if s.due <= ledger.as_of), ZERO),
        total_balance=sum((s.balance for s in states), ZERO),
    )


def account_states(*, parcels: Iterable[Parcel], as_of: date, roll_lines: bool = True,
                   known_by: KnownBy = AS_OF_DAY) -> dict[int, Account]:
    """¶12, ¶13: many accounts at once, each read through ``rules.ledger_state`` from its stored
    records: charges with their principal adjustments and last-day moves, payments with their
    stored allocations and voids, give-backs, *crédito aplicado* entries and refunds. Nothing is
    allocated again here: what a receipt stored is what the account says.

    A charge's last day is the stored one, moved past the closed days known now (never back) and
    by the grace days of the row in force on its due date. ``roll_lines`` loads each charge's roll
    line with it (the receipt prints its figures); lists of many accounts that never show them
    pass False.

    A past ``as_of`` reads the books as they stood at the end of that day (``known_by_end_of``):
    only the rows recorded by then, closures and legal-parameter rows included, so a statement of
    a past day never changes. ``known_by=None`` reads everything recorded so far (the writers: a
    back-dated payment is allocated on the account as known now); a moment reads what was
    recorded before it."""
    cut = known_by_of(known_by, as_of)
    parcels = {parcel.pk: parcel for parcel in parcels}
    records = parcel_records(parcels=parcels.values(), as_of=as_of, roll_lines=roll_lines, known_by=cut)
    schedule = LegalParameterSet.history(known_by=cut).surcharge_schedule
    accounts = {}
    for pk, parcel in parcels.items():
        found, charges = records[pk]
        ledger = found.state(as_of=as_of, schedule=schedule)
        accounts[pk] = Account(parcel=parcel, state=_account_state_of(ledger, found.payments), charges=charges,
                               ledger=ledger, records=found, known_by=cut)
    return accounts


def parcel_records(
    *, parcels: Iterable[Parcel], as_of: date | None = None, roll_lines: bool = True, known_by: datetime | None = None,
) -> dict[int, tuple[Records, dict[str, Charge]]]:
    """¶12, ¶13: the stored records of many parcels (those dated by ``as_of``, or all; those
    recorded before ``known_by``, or all: a void recorded later does not count), in a few queries."""
    parcels = {parcel.pk: parcel for parcel in parcels}
    charges: dict[int, dict[str, Charge]] = {pk: {} for pk in parcels}
    related = ("fiscal_year", "roll_line") if roll_lines else ("fiscal_year",)
    # A refund is money paid back from the credit (a RefundRecord), not a charge to pay.
    for charge in (_recorded(Charge.objects.filter(parcel_id__in=parcels), known_by).exclude(kind=Charge.Kind.REFUND)
                   .select_related(*related)):
        charges[charge.parcel_id][charge_key(charge.pk)] = charge
    by_charge = {c.pk: (parcel_id, key) for parcel_id, found in charges.items() for key, c in found.items()}
    lowerings: dict[int, list[rules.PrincipalLowering]] = {}
    adjustments = _recorded(PrincipalAdjustment.objects.filter(charge_id__in=by_charge), known_by)
    moves: dict[int, list[rules.LastDayMove]] = {}
    last_day_moves = _recorded(LastDayMoveRecord.objects.filter(charge_id__in=by_charge), known_by)
    payments_qs = _recorded(Payment.objects.filter(parcel_id__in=parcels), known_by)
    backs_qs = _recorded(GiveBack.objects.filter(parcel_id__in=parcels), known_by)
    applied_qs = _recorded(CreditApplication.objects.filter(parcel_id__in=parcels), known_by)
    refunds_qs = _recorded(Refund.objects.filter(parcel_id__in=parcels), known_by)
    reversals_qs = _recorded(VoidReversal.objects.filter(parcel_id__in=parcels), known_by)
    if as_of is not None:
        adjustments = adjustments.filter(entry_date__lte=as_of)
        last_day_moves = last_day_moves.filter(entry_date__lte=as_of)
        payments_qs = payments_qs.filter(paid_on__lte=as_of)
        backs_qs = backs_qs.filter(entry_date__lte=as_of)
        applied_qs = applied_qs.filter(entry_date__lte=as_of)
        refunds_qs = refunds_qs.filter(refunded_on__lte=as_of)
        reversals_qs = reversals_qs.filter(entry_date__lte=as_of)
    for charge_id, on, amount in adjustments.values_list("charge_id", "entry_date", "amount"):
        lowerings.setdefault(charge_id, []).append(rules.PrincipalLowering(entry_date=on, amount=amount))
    for charge_id, on, day in last_day_moves.values_list("charge_id", "entry_date", "last_day"):
        moves.setdefault(charge_id, []).append(rules.LastDayMove(entry_date=on, last_day=day))
    allocations: dict[int, list[tuple[int | None, Decimal, Decimal]]] = {}
    for payment_id, charge_id, surcharge, principal in PaymentAllocation.objects.filter(
        payment__in=payments_qs
    ).order_by("payment_id", "id").values_list("payment_id", "charge_id", "surcharge", "principal"):
        allocations.setdefault(payment_id, []).append((charge_id, surcharge, principal))
    payments: dict[int, list[rules.StoredPayment]] = {pk: [] for pk in parcels}
    for pk, parcel_id, paid_on, voided_on, recorded, void_recorded in payments_qs.values_list(
        "pk", "parcel_id", "paid_on", "void__voided_on", "created_at", "void__created_at"
    ):
        if known_by is not None and void_recorded is not None and void_recorded >= known_by:
            voided_on = None  # voided after the moment read: it still counted then
        rows = allocations.get(pk, [])
        payments[parcel_id].append(rules.StoredPayment(
            key=payment_key(pk), paid_on=paid_on, recorded=recorded,
            allocations=tuple(rules.StoredAllocation(charge_key=by_charge[c][1], surcharge=s, principal=p)
                              for c, s, p in rows if c is not None),
            to_credit=sum((p for c, _s, p in rows if c is None), ZERO), voided_on=voided_on,
        ))
    applied: dict[int, list[rules.CreditApplied]] = {pk: [] for pk in parcels}
    for pk, parcel_id, charge_id, on, surcharge, principal, source, recorded in applied_qs.values_list(
        "pk", "parcel_id", "charge_id", "entry_date", "surcharge", "principal", "source", "created_at"
    ):
        applied[parcel_id].append(rules.CreditApplied(charge_key=charge_key(charge_id), entry_date=on, surcharge=surcharge,
                                                      principal=principal, source=source, ref=credit_applied_ref(pk),
                                                      recorded=recorded))
    backs: dict[int, list[rules.GivenBack]] = {pk: [] for pk in parcels}
    for pk, parcel_id, charge_id, on, surcharge, principal, source, recorded in backs_qs.values_list(
        "pk", "parcel_id", "charge_id", "entry_date", "surcharge", "principal", "source", "created_at"
    ):
        backs[parcel_id].append(rules.GivenBack(charge_key=charge_key(charge_id), entry_date=on, surcharge=surcharge,
                                                principal=principal, source=source, ref=give_back_ref(pk), recorded=recorded))
    refunds: dict[int, list[rules.RefundRecord]] = {pk: [] for pk in parcels}
    for pk, parcel_id, on, amount, recorded in refunds_qs.values_list("pk", "parcel_id", "refunded_on", "amount", "created_at"):
        refunds[parcel_id].append(rules.RefundRecord(refunded_on=on, amount=amount, ref=refund_ref(pk), recorded=recorded))
    reversals: dict[int, list[rules.Reversal]] = {pk: [] for pk in parcels}
    for row in reversals_qs.order_by("entry_date", "id").values_list(
        "parcel_id", "kind", "give_back_id", "credit_application_id", "refund_id", "charge_id", "entry_date",
        "give_back__entry_date", "credit_application__entry_date", "refund__refunded_on", "surcharge", "principal",
    ):
        parcel_id, kind, back_id, applied_id, refund_id, reversed_charge, on, back_on, applied_on, refund_on, surcharge, principal = row
        target = give_back_ref(back_id) if back_id else credit_applied_ref(applied_id) if applied_id else refund_ref(refund_id)
        reversals[parcel_id].append(rules.Reversal(
            kind=kind, target=target, charge_key=charge_key(reversed_charge), entry_date=on,
            effective_from=back_on or applied_on or refund_on, surcharge=surcharge, principal=principal,
        ))
    last_days = charge_last_days({(c.due_date, c.last_day_to_pay) for found in charges.values() for c in found.values()
                                  if c.kind != Charge.Kind.VOID_REFUND}, known_by=known_by)

    result = {}
    for pk in parcels:
        records = Records(
            charges=tuple(
                rules.ChargeRecord(key=key, principal=c.principal.amount, due=c.due_date,
                                   last_day=last_days[(c.due_date, c.last_day_to_pay)],
                                   accrues_surcharge=c.accrues_surcharge, lowerings=tuple(lowerings.get(c.pk, ())),
                                   moves=tuple(moves.get(c.pk, ())))
                if c.kind != Charge.Kind.VOID_REFUND else
                # ¶13: a refund a void made a charge exists from the void's day, due at once; its
                # last day is stored and never moves (no grace days, no closures: not an installment)
                rules.ChargeRecord(key=key, principal=c.principal.amount, due=c.due_date, last_day=c.last_day_to_pay,
                                   accrues_surcharge=False, issued_on=c.due_date)
                for key, c in charges[pk].items()
            ),
            payments=tuple(payments[pk]), credit_applied=tuple(applied[pk]), given_back=tuple(backs[pk]),
            refunds=tuple(refunds[pk]), reversals=tuple(reversals[pk]),
        )
        result[pk] = (records, charges[pk])
    return result


# --- Where a payment typed at the counter would go ------------------------------------------


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
    """¶12, ¶13: where the amount would go, by ``rules.allocate`` on the account as of ``on``
    exactly as ``payment_record`` will store it (nothing is written)."""
    before = account_state(parcel=parcel, as_of=on, known_by=None)
    allocations, credit = rules.allocate(state=before.ledger, amount=amount)
    dues = {state.key: state.due for state in before.state.charges}
    to_due = ZERO
    early: list[EarlyPayment] = []
    for allocation in allocations:
        due = dues[allocation.charge_key]
        if due <= on:
            to_due += allocation.amount
        else:
            early.append(EarlyPayment(description=before.charges[allocation.charge_key].label, due_date=due,
                                      amount=allocation.amount))
    return PaymentDestination(amount=amount, total_due=before.state.total_due, to_due=to_due, early=tuple(early),
                              credit=credit)


# --- The statement ----------------------------------------------------------------------------


@dataclass(frozen=True)
class StatementEvent:
    """¶9, ¶12, ¶13: a dated entry shown under the statement line of the charge it changed (issue
    11), with the figures of its stored record (amounts are positive dollars; ``text`` words them,
    ``wording.event_text``):

    - ``lowered``: a correction lowered the principal by ``principal`` (``PrincipalAdjustment``);
      ``surcharge`` is the line's surcharge it took away, as of the statement's date
      (``Records.surcharge_taken``);
    - ``given_back``: surcharge and principal the charge had been paid, released to the credit by a
      correction or a closure (``GiveBack``);
    - ``credit_applied``: credit paid to the charge's surcharge and principal (``CreditApplication``);
    - ``last_day_moved``: a closure (of ``closure_day``) moved the last day to pay to ``last_day``
      (``LastDayMove``).

    ``correction`` and ``roll`` name the correction (its number in the roll of that fiscal year),
    ``closure_day`` the closure, ``paid_on`` the payment whose credit was applied."""

    kind: str
    entry_date: date
    source: str
    principal: Decimal = ZERO
    surcharge: Decimal = ZERO
    correction: int | None = None
    roll: str = ""
    closure_day: date | None = None
    paid_on: date | None = None
    last_day: date | None = None

    @property
    def text(self) -> str:
        return event_text(kind=self.kind, entry_date=self.entry_date, source=self.source, principal=self.principal,
                          surcharge=self.surcharge, correction=self.correction, roll=self.roll,
                          closure_day=self.closure_day, paid_on=self.paid_on, last_day=self.last_day)

    def to_json(self) -> dict[str, Any]:
        def iso(day: date | None) -> str | None:
            return day.isoformat() if day else None

        return {
            "kind": self.kind, "entry_date": self.entry_date.isoformat(), "source": self.source,
            "principal": str(self.principal), "surcharge": str(self.surcharge), "correction": self.correction,
            "roll": self.roll, "closure_day": iso(self.closure_day), "paid_on": iso(self.paid_on),
            "last_day": iso(self.last_day),
            "text": self.text,  # in the language active when it was read (``from_json`` words it again)
        }

    @classmethod
    def from_json(cls, item: dict[str, Any]) -> StatementEvent:
        def day(name: str) -> date | None:
            return date.fromisoformat(item[name]) if item.get(name) else None

        return cls(
            kind=item["kind"], entry_date=date.fromisoformat(item["entry_date"]), source=item.get("source", ""),
            principal=Decimal(item.get("principal", "0.00")), surcharge=Decimal(item.get("surcharge", "0.00")),
            correction=item.get("correction"), roll=item.get("roll", ""), closure_day=day("closure_day"),
            paid_on=day("paid_on"), last_day=day("last_day"),
        )


@dataclass(frozen=True)
class StatementLine:
    """One charge of the statement as of a date (¶12, ¶13), with the dated entries that changed it
    (``events``) and the stored facts of its name (``correction``, ``reason``, ``water_month``,
    ``acre_feet``: ``models.charge_names``; none on lines frozen before they were)."""

    description: str
    fiscal_year: str
    number: int | None
    kind: str
    due_date: date
    last_day_to_pay: date
    principal: Decimal
    surcharge: Decimal
    surcharge_periods: int
    surcharge_basis: str  # how the surcharge was counted, in the language active when it was read
    paid: Decimal
    balance: Decimal
    as_of: date
    order: int = field(default=0, compare=False)  # the account's order (due date, then charge): the JSON's order
    surcharge_runs: tuple = ()  # ¶12: the basis as structured runs (wording.surcharge_runs), worded in any language
    correction: int | None = None  # a half raised by a correction: the correction's number in its roll
    reason: str = ""  # an older one-charge correction: its reason as typed
    water_month: str = ""  # a water sale: the month of its deliveries, YYYY-MM
    acre_feet: Decimal | None = None  # a water sale: the acre-feet delivered
    events: tuple[StatementEvent, ...] = ()  # the dated entries that changed the charge, oldest first

    @property
    def label(self) -> str:
        """The charge's name in the reader's language (``wording.charge_label``)."""
        return line_label(self)

    @property
    def basis(self) -> str:
        """How the surcharge was counted, in the reader's language (``wording.basis_text``)."""
        return basis_text(self)

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

    def to_json(self) -> dict[str, Any]:
        return {
            "fiscal_year": self.fiscal_year,
            "number": self.number,
            "kind": self.kind,
            "description": self.description,
            "due_date": self.due_date.isoformat(),
            "last_day_to_pay": self.last_day_to_pay.isoformat(),
            "principal": str(self.principal),
            "surcharge": str(self.surcharge),
            "surcharge_periods": self.surcharge_periods,
            "surcharge_basis": self.surcharge_basis,
            "surcharge_runs": [list(run) for run in self.surcharge_runs],
            "paid": str(self.paid),
            "balance": str(self.balance),
            **name_to_json(self),
            "events": [event.to_json() for event in self.events],
        }

    @classmethod
    def from_json(cls, item: dict[str, Any], *, as_of: date, order: int = 0) -> StatementLine:
        """A stored line; one stored before the facts of its name and its events were has none."""
        return cls(
            description=item["description"], fiscal_year=item["fiscal_year"], number=item.get("number"), kind=item.get("kind", ""),
            due_date=date.fromisoformat(item["due_date"]), last_day_to_pay=date.fromisoformat(item["last_day_to_pay"]),
            principal=Decimal(item["principal"]), surcharge=Decimal(item["surcharge"]),
            surcharge_periods=item.get("surcharge_periods", 0), surcharge_basis=item.get("surcharge_basis", ""),
            paid=Decimal(item["paid"]), balance=Decimal(item["balance"]), as_of=as_of, order=order,
            surcharge_runs=tuple(tuple(run) for run in item.get("surcharge_runs", ())),
            **name_from_json(item), events=tuple(StatementEvent.from_json(event) for event in item.get("events", ())),
        )


def _display_order(lines: Iterable[StatementLine]) -> tuple[StatementLine, ...]:
    return tuple(sorted(lines, key=lambda line: (line.due_date, line.fiscal_year, line.number or 0)))


@dataclass(frozen=True)
class Statement:
    """¶12, ¶13: the statement of a parcel as of a date. ``lines`` are in due-date order for
    pages; ``to_json()`` is the one stored and printed form (certificates, seizure steps, the CLI):
    ``{"parcel_id", "as_of", "installments", "other_charges", "total_due", "total_balance",
    "credit_balance"}``, amounts as strings of dollars, dates ISO; each line carries the stored
    facts of its name and its dated ``events`` (``StatementEvent.to_json``). ``from_json`` reads
    statements stored before those were (their lines have none)."""

    parcel_id: str
    as_of: date
    lines: tuple[StatementLine, ...]
    total_due: Decimal
    total_balance: Decimal
    credit_balance: Decimal
    parcel: Parcel | None = field(default=None, compare=False)

    @property
    def totals(self) -> dict[str, Decimal]:
        return {
            "principal": sum((line.principal for line in self.lines), ZERO),
            "surcharge": sum((line.surcharge for line in self.lines), ZERO),
            "paid": sum((line.paid for line in self.lines), ZERO),
            "balance": sum((line.balance for line in self.lines), ZERO),
        }

    @property
    def owing_lines(self) -> tuple[StatementLine, ...]:
        return tuple(line for line in self.lines if line.balance > 0)

    def to_json(self) -> dict[str, Any]:
        ordered = sorted(self.lines, key=lambda line: line.order)
        return {
            "parcel_id": self.parcel_id,
            "as_of": self.as_of.isoformat(),
            "installments": [line.to_json() for line in ordered if line.kind == Charge.Kind.INSTALLMENT],
            "other_charges": [line.to_json() for line in ordered if line.kind != Charge.Kind.INSTALLMENT],
            "total_due": str(self.total_due),
            "total_balance": str(self.total_balance),
            "credit_balance": str(self.credit_balance),
        }

    @classmethod
    def from_json(cls, data: dict[str, Any], *, parcel: Parcel | None = None) -> Statement:
        as_of = date.fromisoformat(data["as_of"])
        items = list(data.get("installments", [])) + list(data.get("other_charges", []))
        lines = [StatementLine.from_json(item, as_of=as_of, order=index) for index, item in enumerate(items)]
        return cls(parcel_id=data["parcel_id"], as_of=as_of, lines=_display_order(lines), total_due=Decimal(data["total_due"]),
                   total_balance=Decimal(data["total_balance"]), credit_balance=Decimal(data["credit_balance"]), parcel=parcel)


def statement_events(account: Account) -> dict[str, tuple[StatementEvent, ...]]:
    """¶9, ¶12, ¶13: the dated entries recorded by the account's date on each of its charges
    (``{charge key: events}``, each charge's in date order), read from the same stored records as
    the account: a correction's lowering with the surcharge it took away, give-backs, *crédito
    aplicado* and moved last days. No query when the account has none."""
    records, as_of = account.records, account.state.as_of
    if records is None or not (records.given_back or records.credit_applied or records.reversals
                               or any(charge.lowerings or charge.moves for charge in records.charges)):
        return {}
    keys = {charge.pk: key for key, charge in account.charges.items()}
    parcel_id, known_by = account.parcel.pk, account.known_by
    lowered = list(_recorded(PrincipalAdjustment.objects.filter(charge_id__in=keys, entry_date__lte=as_of), known_by)
                   .order_by("entry_date", "id").values_list("id", "charge_id", "entry_date", "amount", "correction_id"))
    backs = list(_recorded(GiveBack.objects.filter(parcel_id=parcel_id, entry_date__lte=as_of), known_by)
                 .values_list("id", "charge_id", "entry_date", "surcharge", "principal", "source", "correction_id", "closure__day"))
    applied = list(_recorded(CreditApplication.objects.filter(parcel_id=parcel_id, entry_date__lte=as_of), known_by)
                   .values_list("id", "charge_id", "entry_date", "surcharge", "principal", "source", "correction_id",
                                "closure__day", "payment__paid_on"))
    moves = list(_recorded(LastDayMoveRecord.objects.filter(charge_id__in=keys, entry_date__lte=as_of), known_by)
                 .values_list("id", "charge_id", "entry_date", "last_day", "closure__day"))
    named = {row[4] for row in lowered} | {row[6] for row in backs + applied if row[6]}
    corrections = {pk: (number, roll) for pk, number, roll in
                   RollCorrection.objects.numbered().filter(pk__in=named).values_list("pk", "number", "roll")} if named else {}
    found: dict[str, list[tuple[tuple, StatementEvent]]] = {}

    def add(pk: int, charge_id: int, event: StatementEvent) -> None:
        order = (event.entry_date, EVENT_KINDS.index(event.kind), pk)
        found.setdefault(keys[charge_id], []).append((order, event))

    def named_by(correction_id: int | None) -> dict[str, Any]:
        if correction_id is None:
            return {}
        number, roll = corrections[correction_id]
        return {"correction": number, "roll": roll}

    schedule = LegalParameterSet.history(known_by=known_by).surcharge_schedule
    by_charge: dict[int, list[tuple]] = {}
    for row in lowered:
        by_charge.setdefault(row[1], []).append(row)
    for charge_id, rows in by_charge.items():
        taken = records.surcharge_taken(
            charge_key=keys[charge_id], as_of=as_of, schedule=schedule,
            lowerings=[rules.PrincipalLowering(entry_date=on, amount=amount) for _pk, _c, on, amount, _k in rows],
        )
        for (pk, _c, on, amount, correction_id), surcharge in zip(rows, taken, strict=True):
            add(pk, charge_id, StatementEvent(kind=LOWERED, entry_date=on, source=rules.SOURCE_CORRECTION, principal=amount,
                                              surcharge=surcharge, **named_by(correction_id)))
    for pk, charge_id, on, surcharge, principal, source, correction_id, closure_day in backs:
        add(pk, charge_id, StatementEvent(kind=GIVEN_BACK, entry_date=on, source=source, principal=principal,
                                          surcharge=surcharge, closure_day=closure_day, **named_by(correction_id)))
    for pk, charge_id, on, surcharge, principal, source, correction_id, closure_day, paid_on in applied:
        add(pk, charge_id, StatementEvent(kind=CREDIT_APPLIED, entry_date=on, source=source, principal=principal,
                                          surcharge=surcharge, closure_day=closure_day, paid_on=paid_on,
                                          **named_by(correction_id)))
    for pk, charge_id, kind, on, surcharge, principal, paid_on in (
        _recorded(VoidReversal.objects.filter(parcel_id=parcel_id, entry_date__lte=as_of), known_by)
        .exclude(kind=VoidReversal.Kind.REFUND).values_list("id", "charge_id", "kind", "entry_date", "surcharge", "principal", "void__payment__paid_on")
    ):
        event = GIVE_BACK_VOIDED if kind == VoidReversal.Kind.GIVE_BACK else CREDIT_APPLIED_VOIDED
        add(pk, charge_id, StatementEvent(kind=event, entry_date=on, source=rules.SOURCE_PAYMENT, principal=principal,
                                          surcharge=surcharge, paid_on=paid_on))
    for pk, charge_id, on, last_day, closure_day in moves:
        add(pk, charge_id, StatementEvent(kind=LAST_DAY_MOVED, entry_date=on, source=rules.SOURCE_CLOSURE,
                                          closure_day=closure_day, last_day=last_day))
    return {key: tuple(event for _order, event in sorted(rows, key=lambda row: row[0])) for key, rows in found.items()}


def statement(*, parcel: Parcel, as_of: date, known_by: KnownBy = AS_OF_DAY) -> Statement:
    """¶12, ¶13: the statement (*estado de cuenta*) as of a date: each charge with due date, last
    day to pay, principal, surcharge so far and how it was counted, paid, balance, and the dated
    entries that changed it (``statement_events``); the total due. A past day's statement is the
    books as they stood at the end of that day (``account_states``): read again later it is
    identical to the cent."""
    cut = known_by_of(known_by, as_of)
    account = account_state(parcel=parcel, as_of=as_of, known_by=cut)
    rate = delinquency_parameters(as_of, known_by=cut).surcharge_rate
    names = charge_names(account.charges.values())
    events = statement_events(account)
    lines = []
    for index, state in enumerate(account.state.charges):
        charge = account.charges[state.key]
        lines.append(StatementLine(
            description=charge.description, fiscal_year=charge.fiscal_year.label, number=charge.number, kind=charge.kind,
            due_date=state.due, last_day_to_pay=state.last_day, principal=state.principal, surcharge=state.surcharge,
            surcharge_periods=state.periods, surcharge_basis=surcharge_explanation(state, rate), paid=state.paid,
            balance=state.balance, as_of=as_of, order=index, surcharge_runs=tuple(tuple(run) for run in surcharge_runs(state, rate)),
            events=events.get(state.key, ()), **names[charge.pk],
        ))
    return Statement(
        parcel_id=parcel.parcel_id, as_of=as_of, lines=_display_order(lines), total_due=account.state.total_due,
        total_balance=account.state.total_balance, credit_balance=account.state.credit_balance, parcel=parcel,
    )


# --- The ledger, the debt ---------------------------------------------------------------------


def ledger_balance(parcel: Parcel) -> Decimal:
    """Σ debits − Σ credits of the parcel's ledger (charges + realized surcharges − payments …)."""
    sums = LedgerEntry.objects.filter(parcel=parcel).aggregate(d=Sum("debit"), c=Sum("credit"))
    return (sums["d"] or ZERO) - (sums["c"] or ZERO)


def parcel_debt(*, parcel: Parcel, as_of: date, known_by: KnownBy = AS_OF_DAY) -> Decimal:
    """What is owed on the parcel as of a date (charges due, with surcharges, less payments)."""
    return account_state(parcel=parcel, as_of=as_of, known_by=known_by).state.total_due


def parcel_by_code(code: str) -> Parcel:
    """The parcel of a cadastre number as people type it (case, dashes, the prefix left out)."""
    parcel = one_by_code(Parcel.objects.select_related("owner"), "parcel_id", code)
    if parcel is None:
        raise BillingError(_("Predio desconocido «%(p)s».") % {"p": code})
    return parcel


# --- The books' version (what a kept list or figure is computed from) ---------------------------


_BOOKS_VERSION_SQL = """
    SELECT (SELECT max(id) FROM billing_ledgerentry), (SELECT max(id) FROM billing_charge),
           (SELECT md5(coalesce(string_agg(t::text, ',' ORDER BY t.id), '')) FROM billing_officeclosure t),
           (SELECT md5(coalesce(string_agg(t::text, ',' ORDER BY t.id), '')) FROM levy_legalparameterset t),
           (SELECT max(pgh_id) FROM parcels_parcelevent), (SELECT max(pgh_id) FROM parcels_ownerevent)
"""


def books_version(*, using: str = "default") -> tuple:
    """The books' version: a new value after any change a computed list depends on."""
    with connections[using].cursor() as cursor:
        cursor.execute(_BOOKS_VERSION_SQL)
        return tuple(cursor.fetchone())


KEPT_SECONDS = 60 * 60


def kept_under_books_version(name: str, marker: tuple, compute: Callable[[], Any], *, using: str = "default") -> Any:
    """``compute()``, or what it gave moments ago for the same ``marker`` on the same books: kept
    in the shared cache for an hour under ``books_version`` (a payment, void, charge, correction,
    closure, legal row or registry change gives a new key). Inside a transaction, whose view may
    still roll back, nothing is read or kept (``parcels.kept``)."""
    return kept(f"billing:{name}", lambda: (books_version(using=using), *marker), compute, timeout=KEPT_SECONDS,
                using=using)
