"""Write paths of billing and collection, one atomic service per action, recording the acting
user: ``installments_issue`` (at roll finalization), ``payment_record`` (the counter),
``payment_void``, ``refund_issue``, ``books_check_run`` (a recorded check of the books). Reads that replay an account (``account_state``,
``statement``) use the pure rules in ``billing.rules``."""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import date, timedelta
from decimal import Decimal, InvalidOperation
from typing import Any

from django.core.exceptions import ValidationError
from django.db import connection, transaction
from django.utils import timezone
from django.utils.translation import gettext as _

from levy.models import FiscalYear, LegalParameterSet, Levy, RollLine
from levy.rules import CENT, fiscal_year_label, round_cents
from parcels.models import Parcel
from parcels.roles import COLLECTOR, HACIENDA, SUPERVISOR, has_role

from . import books, chain, rules
from .models import (
    BooksCheck,
    Charge,
    CollectorAssignment,
    DayClose,
    DebtCertificate,
    DocumentSeries,
    LedgerEntry,
    Office,
    OfficeClosure,
    Payment,
    PaymentVoid,
    Receipt,
    ReceiptSeries,
    Refund,
    SeizureCase,
    SeizureStep,
    WaterDelivery,
    WaterRate,
)

ZERO = Decimal("0.00")


class BillingError(Exception):
    """A refusal with a one-line reason for the counter page or the command line."""


# --- Calendar and parameters ------------------------------------------------------------------


def closed_days(years: Iterable[int]) -> frozenset[date]:
    """¶12: Sundays aside, the days a last day to pay moves past: Puerto Rico legal holidays and
    the office closures staff recorded (hurricanes)."""
    years = sorted(set(years))
    closures = OfficeClosure.objects.filter(day__year__in=years).values_list("day", flat=True)
    return rules.pr_legal_holidays(years=years) | frozenset(closures)


def delinquency_parameters(on: date) -> rules.DelinquencyParameters:
    params = LegalParameterSet.in_force(on)
    return rules.DelinquencyParameters(
        grace_days=params.grace_days, surcharge_rate=params.surcharge_rate, saturdays_move=params.saturdays_move_last_day,
    )


def due_and_last_day(*, due: date) -> tuple[date, date]:
    params = delinquency_parameters(due)
    return due, rules.last_day_to_pay(due=due, closed_days=closed_days([due.year, due.year + 1]), params=params)


def fiscal_year_of(day: date) -> str:
    """The fiscal year (July 1 – June 30) a date falls in, e.g. 2026-10-15 → ``2026-2027``."""
    return fiscal_year_label(day.year if day.month >= 7 else day.year - 1)


# --- Installments ------------------------------------------------------------------------------


@transaction.atomic
def installments_issue(*, acting_user: Any, levy: Levy) -> int:
    """¶9, ¶12: for every parcel that pays, the July and January installments of its net charge
    (O&M charge less the water-right credit). Idempotent: running it again creates nothing."""
    if not levy.is_final:
        raise BillingError(_("Solo un padrón finalizado genera plazos."))
    chain.link(chain.ROLL, levy.pk)  # the final roll: a link of the tamper-evident chain (billing.chain)
    params = LegalParameterSet.in_force(levy.fiscal_year.start)
    finalized_on = levy.finalized_on if params.late_roll_due_on_finalization else None
    halves = {}
    for number in (1, 2):
        due = rules.installment_due_date(fiscal_year_start=levy.fiscal_year.start, number=number, finalized_on=finalized_on)
        halves[number] = due_and_last_day(due=due)
    issued = set(
        Charge.objects.filter(roll_line__levy=levy, kind=Charge.Kind.INSTALLMENT).values_list("roll_line_id", "number")
    )
    lines = RollLine.objects.filter(levy=levy, levied=True).values_list("pk", "parcel_id", "first_installment", "second_installment")
    now = timezone.now()
    label = levy.fiscal_year.label
    rows = []
    for line_pk, parcel_pk, first, second in lines.iterator(chunk_size=10000):
        for number, principal in ((1, first), (2, second)):
            if principal <= 0 or (line_pk, number) in issued:
                continue
            due, last_day = halves[number]
            # Stored in Spanish whatever the session's language: it is the charge's legal name.
            semester = "julio" if number == 1 else "enero"
            rows.append((parcel_pk, Charge.Kind.INSTALLMENT, levy.fiscal_year_id, number, line_pk,
                         f"{label} plazo {number} ({semester})", principal, "USD", due, last_day, True, acting_user.pk, now))
    if not rows:
        return 0
    from parcels.bulk import copy_insert

    copy_insert(Charge, ("parcel_id", "kind", "fiscal_year_id", "number", "roll_line_id", "description", "principal",
                         "principal_currency", "due_date", "last_day_to_pay", "accrues_surcharge", "created_by_id", "created_at"), rows)
    with connection.cursor() as cursor:
        cursor.execute(
            """
            INSERT INTO billing_ledgerentry (parcel_id, entry_date, kind, debit, debit_currency, credit, credit_currency,
                                             charge_id, description, created_by_id, created_at)
            SELECT c.parcel_id, c.due_date, 'charge', c.principal, 'USD', 0, 'USD', c.id, c.description, %s, %s
              FROM billing_charge c
              JOIN levy_rollline r ON r.id = c.roll_line_id
             WHERE r.levy_id = %s AND c.kind = 'installment'
               AND NOT EXISTS (SELECT 1 FROM billing_ledgerentry e WHERE e.charge_id = c.id)
            """,
            [acting_user.pk, now, levy.pk],
        )
    return len(rows)


@transaction.atomic
def correction_post(*, acting_user: Any, correction: Any) -> None:
    """¶9, ¶11: a supplementary roll entry on the parcel's account. More owed is a charge of its
    own (due on the correction's date, with the ¶12 surcharge if left unpaid); less owed is a
    credit on that date, applied like a payment to the oldest balance."""
    chain.link(chain.CORRECTION, correction.pk)
    line = correction.roll_line
    net = correction.net_delta.amount
    description = f"Corrección {line.levy.fiscal_year.label}: {correction.reason[:120]}"
    if net > 0:
        due, last_day = due_and_last_day(due=correction.due_date)
        charge = Charge.objects.create(
            parcel_id=line.parcel_id, kind=Charge.Kind.CORRECTION, fiscal_year=line.levy.fiscal_year, roll_line=line,
            correction=correction, description=description, principal=net, due_date=due, last_day_to_pay=last_day,
            created_by=acting_user,
        )
        LedgerEntry.objects.create(parcel_id=line.parcel_id, entry_date=due, kind=LedgerEntry.Kind.CHARGE, debit=net,
                                   charge=charge, description=description, created_by=acting_user)
    elif net < 0:
        LedgerEntry.objects.create(parcel_id=line.parcel_id, entry_date=correction.due_date, kind=LedgerEntry.Kind.CORRECTION,
                                   credit=-net, description=description, created_by=acting_user)


# --- The account ------------------------------------------------------------------------------


def charge_key(charge_id: int) -> str:
    return f"C{charge_id:012d}"


def payment_key(payment_id: int) -> str:
    return f"P{payment_id:012d}"


@dataclass(frozen=True)
class Account:
    parcel: Parcel
    state: rules.AccountState
    charges: dict[str, Charge]


def account_state(*, parcel: Parcel, as_of: date, extra_payment: rules.PaymentInput | None = None) -> Account:
    """¶12, ¶13: the parcel's account replayed to ``as_of`` (voids dated after ``as_of`` do not count yet)."""
    return account_states(parcels=[parcel], as_of=as_of, extra_payment=extra_payment)[parcel.pk]


def account_states(
    *, parcels: Iterable[Parcel], as_of: date, extra_payment: rules.PaymentInput | None = None, roll_lines: bool = True,
) -> dict[int, Account]:
    """Replay many accounts at once: three queries for all of them, then the pure rules per parcel.

    An office closure recorded after a charge was issued still moves that charge's last day to pay
    forward (never back): the stored day is rolled past the closed days known now. ``roll_lines``
    loads each charge's roll line with it (the receipt prints its figures); lists of many accounts
    that never show them pass False (building those objects was a third of the delinquent list's time)."""
    parcels = {parcel.pk: parcel for parcel in parcels}
    params = delinquency_parameters(as_of)
    charges: dict[int, dict[str, Charge]] = {pk: {} for pk in parcels}
    related = ("fiscal_year", "roll_line") if roll_lines else ("fiscal_year",)
    for charge in Charge.objects.filter(parcel_id__in=parcels).select_related(*related):
        charges[charge.parcel_id][charge_key(charge.pk)] = charge
    payments: dict[int, list[rules.PaymentInput]] = {pk: [] for pk in parcels}
    for pk, parcel_id, paid_on, amount in (
        Payment.objects.filter(parcel_id__in=parcels, paid_on__lte=as_of).exclude(void__voided_on__lte=as_of)
        .values_list("pk", "parcel_id", "paid_on", "amount")
    ):
        payments[parcel_id].append(rules.PaymentInput(key=payment_key(pk), paid_on=paid_on, amount=amount))
    # Corrections that lower what is owed are credits on their date, applied like payments.
    from levy.models import RollCorrection

    for pk, parcel_id, on, net in RollCorrection.objects.filter(
        roll_line__parcel_id__in=parcels, due_date__lte=as_of, net_delta__lt=0
    ).values_list("pk", "roll_line__parcel_id", "due_date", "net_delta"):
        payments[parcel_id].append(rules.PaymentInput(key=f"K{pk:012d}", paid_on=on, amount=-net))
    if extra_payment is not None:
        for found in payments.values():
            found.append(extra_payment)
    years = {c.last_day_to_pay.year for found in charges.values() for c in found.values()}
    closed = closed_days(years | {year + 1 for year in years}) if years else frozenset()
    accounts = {}
    for pk, parcel in parcels.items():
        inputs = [
            rules.ChargeInput(key=key, principal=c.principal.amount, due=c.due_date,
                              last_day=rules.next_open_day(day=c.last_day_to_pay, closed_days=closed, params=params),
                              accrues_surcharge=c.accrues_surcharge)
            for key, c in charges[pk].items()
        ]
        state = rules.account_state(charges=inputs, payments=payments[pk], as_of=as_of, params=params)
        accounts[pk] = Account(parcel=parcel, state=state, charges=charges[pk])
    return accounts


def rate_label(rate: Decimal) -> str:
    """¶12: ``½%`` for the statutory rate, else the percentage."""
    return "½%" if rate == Decimal("0.005") else f"{rate * 100:g}%"


def surcharge_groups(charge_state: rules.ChargeState) -> list[list]:
    """¶12: runs of months with the same unpaid principal, ``[[months, "unpaid"], …]`` (JSON-ready)."""
    groups: list[list] = []
    for _start, unpaid in charge_state.surcharge_basis:
        if groups and groups[-1][1] == unpaid:
            groups[-1][0] += 1
        else:
            groups.append([1, unpaid])
    return [[months, str(unpaid)] for months, unpaid in groups]


def surcharge_text(groups: Iterable[Sequence], rate: Decimal) -> str:
    """How a surcharge was counted, in the active language, e.g. "½% × 2 meses sobre $6,930.90"."""
    from django.utils.translation import ngettext

    return " + ".join(
        ngettext("%(rate)s × %(n)s mes sobre %(amount)s", "%(rate)s × %(n)s meses sobre %(amount)s", months)
        % {"rate": rate_label(rate), "n": months, "amount": f"${Decimal(unpaid):,.2f}"}
        for months, unpaid in groups
    )


def surcharge_explanation(charge_state: rules.ChargeState, rate: Decimal) -> str:
    """¶12: how a charge's surcharge was counted (empty when none accrued)."""
    return surcharge_text(surcharge_groups(charge_state), rate)


def statement(*, parcel: Parcel, as_of: date) -> dict[str, Any]:
    """¶12, ¶13: the statement (*estado de cuenta*) as of a date: each charge with due date, last
    day to pay, principal, surcharge so far and how it was counted, paid, balance; the total due."""
    account = account_state(parcel=parcel, as_of=as_of)
    rate = delinquency_parameters(as_of).surcharge_rate
    installments, others = [], []
    for state in account.state.charges:
        charge = account.charges[state.key]
        entry = {
            "fiscal_year": charge.fiscal_year.label,
            "number": charge.number,
            "kind": charge.kind,
            "description": charge.description,
            "due_date": state.due.isoformat(),
            "last_day_to_pay": state.last_day.isoformat(),
            "principal": str(state.principal),
            "surcharge": str(state.surcharge),
            "surcharge_periods": state.periods,
            "surcharge_basis": surcharge_explanation(state, rate),
            "paid": str(state.paid),
            "balance": str(state.balance),
        }
        (installments if charge.kind == Charge.Kind.INSTALLMENT else others).append(entry)
    return {
        "parcel_id": parcel.parcel_id,
        "as_of": as_of.isoformat(),
        "installments": installments,
        "other_charges": others,
        "total_due": str(account.state.total_due),
        "total_balance": str(account.state.total_balance),
        "credit_balance": str(account.state.credit_balance),
    }


# --- Payments at the counter ------------------------------------------------------------------


def parse_amount(value: Any) -> Decimal:
    try:
        amount = Decimal(str(value).strip().replace(",", "").lstrip("$"))
    except InvalidOperation:
        raise BillingError(_("Cantidad inválida «%(v)s».") % {"v": value}) from None
    if not amount.is_finite() or amount <= 0:
        raise BillingError(_("La cantidad debe ser mayor que cero."))
    if amount != amount.quantize(CENT):
        raise BillingError(_("La cantidad debe estar en centavos."))
    return amount


def office_for(user: Any, code: str | None) -> Office:
    if code:
        office = Office.objects.filter(code=code).first()
        if office is None:
            raise BillingError(_("Colecturía desconocida «%(c)s».") % {"c": code})
        return office
    assignment = CollectorAssignment.objects.filter(user=user).select_related("office").first()
    if assignment is not None:
        return assignment.office
    offices = list(Office.objects.all()[:2])
    if len(offices) == 1:  # a district with one colecturía needs no assignments
        return offices[0]
    raise BillingError(_("El usuario %(u)s no está asignado a una colecturía.") % {"u": user.username})


@transaction.atomic
def payment_record(
    *, acting_user: Any, parcel: Parcel, amount: Decimal, paid_on: date, method: str = Payment.Method.CASH,
    reference: str = "", office_code: str | None = None, idempotency_key: str | None = None,
    expected_total_due: Decimal | None = None,
) -> Receipt:
    """¶13: a payment at the Collector's office and its numbered receipt, in one transaction.

    The parcel row is locked, so two collectors paying the same account at once are serialized;
    ``expected_total_due`` (what the counter showed) refuses a payment whose account changed
    meanwhile, and ``idempotency_key`` makes a double-submitted form return the first receipt."""
    if not has_role(acting_user, COLLECTOR, SUPERVISOR):
        raise BillingError(_("El usuario %(u)s no es colector.") % {"u": getattr(acting_user, "username", None)})
    amount = parse_amount(amount)
    if method not in Payment.Method.values:
        raise BillingError(_("Forma de pago desconocida «%(m)s».") % {"m": method})
    office = office_for(acting_user, office_code)
    key = idempotency_key or uuid.uuid4().hex
    parcel = Parcel.objects.select_for_update().select_related("owner").get(pk=parcel.pk)
    existing = Payment.objects.filter(idempotency_key=key).select_related("receipt").first()
    if existing is not None:
        if existing.parcel_id != parcel.pk or existing.amount.amount != amount:
            raise BillingError(_("Ese formulario ya se usó para otro pago."))
        return existing.receipt
    before = account_state(parcel=parcel, as_of=paid_on)
    if expected_total_due is not None and before.state.total_due != expected_total_due:
        raise BillingError(
            _("La cuenta cambió mientras se cobraba (ahora se deben %(d)s). Revise antes de cobrar.")
            % {"d": f"${before.state.total_due:,.2f}"}
        )
    payment = Payment(
        parcel=parcel, office=office, collector=acting_user, paid_on=paid_on, amount=amount, method=method,
        reference=reference, idempotency_key=key, payer_name=parcel.owner.name,
    )
    payment.full_clean()
    payment.save()
    after = account_state(parcel=parcel, as_of=paid_on)
    mine = [a for a in after.state.applications if a.payment_key == payment_key(payment.pk)]
    surcharge = sum((a.surcharge for a in mine), ZERO)
    LedgerEntry.objects.create(parcel=parcel, entry_date=paid_on, kind=LedgerEntry.Kind.PAYMENT, credit=amount,
                               payment=payment, description=_("Pago en %(o)s") % {"o": office.code}, created_by=acting_user)
    if surcharge > 0:
        LedgerEntry.objects.create(parcel=parcel, entry_date=paid_on, kind=LedgerEntry.Kind.SURCHARGE, debit=surcharge,
                                   payment=payment, description=_("Recargo pagado (¶12)"), created_by=acting_user)
    if after.state.total_due <= 0:
        # ¶14: paying the debt stops the seizure procedure.
        SeizureCase.objects.filter(parcel=parcel, status=SeizureCase.Status.OPEN).update(
            status=SeizureCase.Status.PAID, closed_on=paid_on
        )
    return _receipt_issue(payment=payment, office=office, account=after, applications=mine)


def _receipt_issue(*, payment: Payment, office: Office, account: Account, applications: list[rules.Application]) -> Receipt:
    """The next number of the office's series for the payment date's fiscal year, allocated under
    a row lock inside the payment's transaction: unique and without gaps."""
    fiscal_year = fiscal_year_of(payment.paid_on)
    ReceiptSeries.objects.get_or_create(office=office, fiscal_year=fiscal_year)
    series = ReceiptSeries.objects.select_for_update().get(office=office, fiscal_year=fiscal_year)
    series.last_number += 1
    series.save(update_fields=["last_number"])
    parcel = account.parcel
    rate = delinquency_parameters(payment.paid_on).surcharge_rate
    states = {state.key: state for state in account.state.charges}
    lines = []
    for application in applications:
        charge = account.charges[application.charge_key]
        state = states[application.charge_key]
        roll_line = charge.roll_line
        lines.append({
            "description": charge.description,
            "fiscal_year": charge.fiscal_year.label,
            "number": charge.number,
            "kind": charge.kind,
            "om_charge": str(roll_line.om_charge) if roll_line else None,
            "credit_percent": str(roll_line.credit_percent) if roll_line else None,
            "credit": str(roll_line.credit) if roll_line else None,
            "net": str(roll_line.net) if roll_line else None,
            "principal": str(state.principal),
            "due_date": state.due.isoformat(),
            "last_day_to_pay": state.last_day.isoformat(),
            "surcharge": str(application.surcharge),
            "surcharge_basis": surcharge_explanation(state, rate),
            "principal_paid": str(application.principal),
            "balance_after": str(state.balance),
        })
    snapshot = {
        "parcel_id": parcel.parcel_id,
        "owner_name": parcel.owner.name,
        "owner_key": parcel.owner.owner_key,
        "gravity_acres": str(parcel.gravity_acres),
        "pumped_acres": str(parcel.pumped_acres),
        "equivalent_acres": str(parcel.equivalent_acres),
        "office": {"code": office.code, "name": office.name},
        "collector": payment.collector.get_username(),
        "paid_on": payment.paid_on.isoformat(),
        "amount": str(payment.amount.amount),
        "method": payment.method,
        "reference": payment.reference,
        "applications": lines,
        "credit_balance": str(account.state.credit_balance),
        "total_due_after": str(account.state.total_due),
        "total_balance_after": str(account.state.total_balance),
    }
    receipt = Receipt.objects.create(office=office, fiscal_year=fiscal_year, number=series.last_number, payment=payment, snapshot=snapshot)
    from . import documents

    documents.receipt_document_store(receipt)  # ¶9: the PDF, rendered once and stored in this transaction
    chain.link(chain.RECEIPT, receipt.pk)
    return receipt


@transaction.atomic
def payment_void(*, acting_user: Any, payment: Payment, reason: str, voided_on: date | None = None) -> PaymentVoid:
    """A bounced check: a new, dated reversing entry by a supervisor; the receipt stays as issued."""
    if not has_role(acting_user, SUPERVISOR):
        raise BillingError(_("Solo un supervisor anula pagos."))
    if not reason.strip():
        raise BillingError(_("Anular un pago requiere una razón."))
    payment = Payment.objects.select_for_update().get(pk=payment.pk)
    Parcel.objects.select_for_update().get(pk=payment.parcel_id)
    if PaymentVoid.objects.filter(payment=payment).exists():
        raise BillingError(_("Ese pago ya fue anulado."))
    on = voided_on or timezone.localdate()
    if on < payment.paid_on:
        raise BillingError(_("La anulación no puede ser anterior al pago."))
    if on <= payment.paid_on and DayClose.objects.filter(office_id=payment.office_id, day=payment.paid_on).exists():
        raise BillingError(_("El día del pago ya está cerrado: la anulación debe llevar una fecha posterior."))
    void = PaymentVoid.objects.create(payment=payment, voided_on=on, reason=reason.strip(), voided_by=acting_user)
    LedgerEntry.objects.create(parcel_id=payment.parcel_id, entry_date=on, kind=LedgerEntry.Kind.VOID, debit=payment.amount,
                               payment=payment, description=_("Anulación: %(r)s") % {"r": reason.strip()[:150]}, created_by=acting_user)
    realized = LedgerEntry.objects.filter(payment=payment, kind=LedgerEntry.Kind.SURCHARGE).first()
    if realized is not None:
        LedgerEntry.objects.create(parcel_id=payment.parcel_id, entry_date=on, kind=LedgerEntry.Kind.SURCHARGE_VOID,
                                   credit=realized.debit, payment=payment, description=_("Recargo del pago anulado"),
                                   created_by=acting_user)
    chain.link(chain.VOID, void.pk)
    return void


def ledger_balance(parcel: Parcel) -> Decimal:
    """Σ debits − Σ credits of the parcel's ledger (charges + realized surcharges − payments …)."""
    from django.db.models import Sum

    sums = LedgerEntry.objects.filter(parcel=parcel).aggregate(d=Sum("debit"), c=Sum("credit"))
    return (sums["d"] or ZERO) - (sums["c"] or ZERO)


def parcel_by_code(code: str) -> Parcel:
    parcel = Parcel.objects.select_related("owner").filter(parcel_id=code).first()
    if parcel is None:
        raise BillingError(_("Predio desconocido «%(p)s».") % {"p": code})
    return parcel




# --- End of day, refunds ---------------------------------------------------------------------


@transaction.atomic
def day_close(*, acting_user: Any, office: Office, day: date, counted_cash: Decimal, counted_checks: Decimal) -> DayClose:
    """A supervisor closes the office's day with the counted cash and checks; the over/short is
    recorded. After the close, a void of that day's payments is a new reversal dated later."""
    if not has_role(acting_user, SUPERVISOR):
        raise BillingError(_("Solo un supervisor cierra el día."))
    if DayClose.objects.filter(office=office, day=day).exists():
        raise BillingError(_("El día ya está cerrado."))
    from .selectors import day_report

    totals = {row.method: row.amount for row in day_report(office=office, day=day).by_method}
    close = DayClose(
        office=office, day=day, counted_cash=counted_cash, counted_checks=counted_checks,
        expected_cash=totals[Payment.Method.CASH], expected_checks=totals[Payment.Method.CHECK], closed_by=acting_user,
    )
    close.full_clean()
    close.save()
    chain.link(chain.DAY_CLOSE, close.pk)  # its link records the head of every series
    return close


@transaction.atomic
def refund_issue(*, acting_user: Any, parcel: Parcel, amount: Decimal, reason: str, refunded_on: date | None = None) -> Refund:
    """A supervisor pays back money beyond every issued charge (the account's credit). It enters
    the account as a charge the credit settles, so the replay keeps every cent accounted for."""
    if not has_role(acting_user, SUPERVISOR):
        raise BillingError(_("Solo un supervisor reembolsa créditos."))
    if not reason.strip():
        raise BillingError(_("Un reembolso requiere una razón."))
    amount = parse_amount(amount)
    on = refunded_on or timezone.localdate()
    parcel = Parcel.objects.select_for_update().get(pk=parcel.pk)
    credit = account_state(parcel=parcel, as_of=on).state.credit_balance
    if amount > credit:
        raise BillingError(_("El crédito de la cuenta es %(c)s; no se puede reembolsar %(a)s.") % {"c": f"${credit:,.2f}", "a": f"${amount:,.2f}"})
    refund = Refund.objects.create(parcel=parcel, amount=amount, refunded_on=on, reason=reason.strip(), refunded_by=acting_user)
    charge = Charge.objects.create(
        parcel=parcel, kind=Charge.Kind.REFUND, fiscal_year=_fiscal_year(on), description=_("Reembolso de crédito"),
        principal=amount, due_date=on, last_day_to_pay=on, accrues_surcharge=False, created_by=acting_user,
    )
    LedgerEntry.objects.create(parcel=parcel, entry_date=on, kind=LedgerEntry.Kind.REFUND, debit=amount, refund=refund,
                               charge=charge, description=reason.strip()[:200], created_by=acting_user)
    chain.link(chain.REFUND, refund.pk)
    return refund


def _fiscal_year(day: date) -> FiscalYear:
    label = fiscal_year_of(day)
    year, _created = FiscalYear.objects.get_or_create(label=label, defaults={"start": date(int(label[:4]), 7, 1)})
    return year


# --- The books' check (billing.books), recorded --------------------------------------------------


def books_check_run(*, acting_user: Any, trigger: str, expected_totals: dict[str, str] | None = None,
                    compared_with: str = "", limit: int = books.DEFAULT_LIMIT) -> BooksCheck:
    """Checks the books and records the run (``BooksCheck``): its findings (and, with
    ``expected_totals``, each control total that differs from them) and the control totals, all
    read in one REPEATABLE READ snapshot with the record written in the same transaction."""
    if connection.in_atomic_block:  # inside a caller's transaction (a test): its snapshot rules
        return _books_check_record(acting_user=acting_user, trigger=trigger, expected_totals=expected_totals,
                                   compared_with=compared_with, limit=limit)
    connection.ensure_connection()
    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        return _books_check_record(acting_user=acting_user, trigger=trigger, expected_totals=expected_totals,
                                   compared_with=compared_with, limit=limit)


@transaction.atomic
def _books_check_record(*, acting_user: Any, trigger: str, expected_totals: dict[str, str] | None, compared_with: str,
                        limit: int) -> BooksCheck:
    started_at = timezone.now()
    findings, totals = books.check(limit=limit, expected_totals=expected_totals)
    check = BooksCheck(
        started_at=started_at, finished_at=timezone.now(), passed=not findings,
        findings=[{"check": finding.check, "message": finding.message} for finding in findings],
        totals=[[name, value] for name, value in totals.items()], compared_with=compared_with[:255], trigger=trigger,
        acting_user=acting_user,
    )
    check.full_clean()
    check.save()
    chain.checkpoint_record(check)  # a passing check's control totals, which later checks must find again
    return check


# --- Numbered documents: debt certificates, seizure notices -------------------------------------


def document_number(kind: str, prefix: str, on: date) -> str:
    """The next gapless number of a document series (locked inside the caller's transaction)."""
    DocumentSeries.objects.get_or_create(kind=kind, year=on.year)
    series = DocumentSeries.objects.select_for_update().get(kind=kind, year=on.year)
    series.last_number += 1
    series.save(update_fields=["last_number"])
    return f"{prefix}-{on.year}-{series.last_number:06d}"


@transaction.atomic
def certificate_issue(*, acting_user: Any, parcel: Parcel, as_of: date) -> DebtCertificate:
    """¶11: a debt certificate (*certificación de deuda*) as of a date: numbered, never changed;
    a later certificate for the parcel supersedes the earlier one."""
    if not has_role(acting_user, HACIENDA, COLLECTOR, SUPERVISOR):
        raise BillingError(_("El usuario no puede emitir certificaciones de deuda."))
    parcel = Parcel.objects.select_for_update().select_related("owner").get(pk=parcel.pk)
    previous = DebtCertificate.objects.filter(parcel=parcel, superseded_by__isnull=True).first()
    data = statement(parcel=parcel, as_of=as_of)
    data.update(owner_name=parcel.owner.name, owner_key=parcel.owner.owner_key)
    certificate = DebtCertificate.objects.create(
        number=document_number("certificate", "CD", timezone.localdate()), parcel=parcel, as_of=as_of, snapshot=data,
        supersedes=previous, issued_by=acting_user,
    )
    from . import documents

    documents.certificate_document_store(certificate)  # the PDF, rendered once and stored in this transaction
    chain.link(chain.CERTIFICATE, certificate.pk)
    return certificate


# --- Delinquency ------------------------------------------------------------------------------


@dataclass(frozen=True)
class DelinquentCharge:
    parcel: Parcel
    charge: Charge
    state: rules.ChargeState
    days_late: int


@transaction.atomic
def office_closure_add(*, acting_user: Any, day: date, reason: str) -> OfficeClosure:
    """¶12: a day the offices were closed (a storm, a holiday proclaimed late): a last day to pay
    that falls on it moves to the next day the offices open, for charges already issued too."""
    if not has_role(acting_user, HACIENDA):
        raise BillingError(_("Solo Hacienda registra los cierres de oficina."))
    closure = OfficeClosure(day=day, reason=reason.strip(), created_by=acting_user)
    closure.full_clean()
    closure.save()
    return closure


# The delinquent list replays every late account (about 0.1 s per 1,000 on 2 cores); Hacienda
# opens it again and again while nothing changes. Each list is kept in the shared cache (one for
# every worker and app server, settings.CACHES) for an hour, keyed by everything it is computed
# from: the filters, and the newest row of every table that can change a result (the ledger and
# charges are append-only, so a payment, void, refund, charge or correction always adds a row;
# closures and legal parameters, which move last days and rates, are small and hashed whole; the
# registry's history covers names and areas). What is kept is each line's pure ¶12 state with the
# ids of its parcel and charge, read again in two queries: never model instances, which would
# outlive a change of the models' fields.
_DELINQUENT_KEPT_SECONDS = 60 * 60
_DELINQUENT_KEY_VERSION = 1  # of the kept tuples' shape: bump it when DelinquentCharge or ChargeState changes
_BOOKS_VERSION_SQL = """
    SELECT (SELECT max(id) FROM billing_ledgerentry), (SELECT max(id) FROM billing_charge),
           (SELECT md5(coalesce(string_agg(t::text, ',' ORDER BY t.id), '')) FROM billing_officeclosure t),
           (SELECT md5(coalesce(string_agg(t::text, ',' ORDER BY t.id), '')) FROM levy_legalparameterset t),
           (SELECT max(pgh_id) FROM parcels_parcelevent), (SELECT max(pgh_id) FROM parcels_ownerevent)
"""


def _books_version() -> tuple:
    with connection.cursor() as cursor:
        cursor.execute(_BOOKS_VERSION_SQL)
        return tuple(cursor.fetchone())


def delinquent_charges(*, as_of: date, fiscal_year: str = "", number: int | None = None, min_balance: Decimal | None = None,
                       min_days_late: int = 0) -> list[DelinquentCharge]:
    """Charges past their last day to pay with a balance as of ``as_of`` (¶12), oldest first
    (a fresh list, or the same list computed from exactly the same data moments ago)."""
    from django.core.cache import cache

    marker = (_DELINQUENT_KEY_VERSION, connection.settings_dict["NAME"], as_of, fiscal_year, number, min_balance,
              min_days_late, _books_version())
    key = "billing:delinquent:" + hashlib.sha256(repr(marker).encode()).hexdigest()
    kept = cache.get(key)
    if kept is not None:
        parcels = Parcel.objects.select_related("owner").in_bulk({parcel_id for parcel_id, *_ in kept})
        charges = Charge.objects.select_related("fiscal_year").in_bulk({charge_id for _, charge_id, *_ in kept})
        return [DelinquentCharge(parcel=parcels[parcel_id], charge=charges[charge_id], state=state, days_late=days_late)
                for parcel_id, charge_id, state, days_late in kept]
    found = _delinquent_charges_compute(as_of=as_of, fiscal_year=fiscal_year, number=number, min_balance=min_balance,
                                        min_days_late=min_days_late)
    if not connection.in_atomic_block:  # never keep what an open transaction may still roll back
        cache.set(key, [(item.parcel.pk, item.charge.pk, item.state, item.days_late) for item in found],
                  timeout=_DELINQUENT_KEPT_SECONDS)
    return found


def _delinquent_charges_compute(*, as_of: date, fiscal_year: str, number: int | None, min_balance: Decimal | None,
                                min_days_late: int) -> list[DelinquentCharge]:
    """Candidates are narrowed in SQL (a charge past its last day on a parcel whose ledger still
    owes), then each candidate account is replayed for the exact balance and surcharge."""
    from django.db.models import F, Sum

    charges = Charge.objects.filter(last_day_to_pay__lt=as_of, accrues_surcharge=True)
    if fiscal_year:
        charges = charges.filter(fiscal_year__label=fiscal_year)
    if number:
        charges = charges.filter(number=number)
    owing = (
        LedgerEntry.objects.filter(entry_date__lte=as_of).values("parcel_id").annotate(d=Sum("debit"), c=Sum("credit"))
        .filter(d__gt=F("c")).values("parcel_id")
    )
    candidates = list(charges.filter(parcel_id__in=owing).values_list("pk", "parcel_id"))
    wanted = {pk for pk, _ in candidates}
    parcel_ids = {parcel_id for _, parcel_id in candidates}
    found: list[DelinquentCharge] = []
    accounts = account_states(parcels=Parcel.objects.filter(pk__in=parcel_ids).select_related("owner"), as_of=as_of,
                              roll_lines=False)
    for account in accounts.values():
        parcel = account.parcel
        for state in account.state.charges:
            charge = account.charges[state.key]
            if charge.pk not in wanted or state.balance <= 0:
                continue
            days_late = (as_of - state.last_day).days
            if days_late <= 0:  # an office closure moved its last day to pay (¶12) to as_of or later
                continue
            if days_late < min_days_late or (min_balance is not None and state.balance < min_balance):
                continue
            found.append(DelinquentCharge(parcel=parcel, charge=charge, state=state, days_late=days_late))
    found.sort(key=lambda item: (item.state.last_day, item.parcel.parcel_id))
    return found


def parcel_debt(*, parcel: Parcel, as_of: date) -> Decimal:
    """What is owed on the parcel as of a date (charges due, with surcharges, less payments)."""
    return account_state(parcel=parcel, as_of=as_of).state.total_due


@transaction.atomic
def seizure_step_issue(*, acting_user: Any, parcel: Parcel, kind: str, on: date | None = None) -> SeizureStep:
    """¶14: the next step of the seizure (*embargo*) procedure of property taxes for an unpaid levy:
    notice of attachment (30-day term), certificate of attachment (after the term), auction notice.
    Each step is numbered, dated, stored as a PDF and names who issued it; a paid debt stops it."""
    from .pdf import render_seizure_notice

    if not has_role(acting_user, HACIENDA):
        raise BillingError(_("Solo Hacienda lleva el procedimiento de embargo."))
    on = on or timezone.localdate()
    parcel = Parcel.objects.select_for_update().select_related("owner").get(pk=parcel.pk)
    case = SeizureCase.objects.filter(parcel=parcel, status=SeizureCase.Status.OPEN).first()
    debt = statement(parcel=parcel, as_of=on)
    owed = Decimal(debt["total_due"])
    if owed <= 0:
        raise BillingError(_("La cuenta no tiene deuda: el procedimiento de embargo se detiene."))
    order = [SeizureStep.Kind.NOTICE, SeizureStep.Kind.CERTIFICATE, SeizureStep.Kind.AUCTION]
    if case is None:
        if kind != SeizureStep.Kind.NOTICE:
            raise BillingError(_("El procedimiento empieza con la notificación de embargo."))
        case = SeizureCase.objects.create(parcel=parcel, opened_by=acting_user)
    done = list(case.steps.values_list("kind", flat=True))
    expected = order[len(done)] if len(done) < len(order) else None
    if kind != expected:
        raise BillingError(_("El próximo paso del procedimiento es otro."))
    if kind == SeizureStep.Kind.CERTIFICATE:
        notice = case.steps.get(kind=SeizureStep.Kind.NOTICE)
        if on <= notice.term_ends:
            raise BillingError(_("El plazo de 30 días de la notificación vence el %(d)s.") % {"d": notice.term_ends.strftime("%d/%m/%Y")})
    term_ends = on + timedelta(days=30) if kind == SeizureStep.Kind.NOTICE else None
    number = document_number(f"seizure_{kind}", {"notice": "NE", "certificate": "CE", "auction": "AS"}[kind], on)
    step = SeizureStep(case=case, kind=kind, number=number, issued_on=on, term_ends=term_ends, debt=debt, issued_by=acting_user, pdf=b"")
    step.pdf = render_seizure_notice(step=step, parcel=parcel)
    step.sha256 = hashlib.sha256(step.pdf).hexdigest()
    step.save()
    chain.link(chain.SEIZURE, step.pk)
    return step


# --- Water before the levy starts (¶8, sec. 374a) ---------------------------------------------


def water_rates_on(day: date) -> tuple[rules.WaterSaleRates, Decimal]:
    """The sec. 374a rates in force on a day and the Authority's current rate (capped)."""
    params = LegalParameterSet.in_force(day)
    rates = rules.WaterSaleRates(first_year_rate=params.water_first_year_rate, max_authority_rate=params.water_max_authority_rate,
                                 pumped_rate=params.water_pumped_rate)
    authority = WaterRate.objects.filter(effective_from__lte=day).order_by("-effective_from").values_list("rate", flat=True).first()
    return rates, authority if authority is not None else params.water_max_authority_rate


def parcel_pays_levy_on(parcel: Parcel, day: date) -> bool:
    """¶8, ¶10: whether the parcel's levy has started by ``day`` (then water is not sold to it)."""
    from levy.rules import levy_start

    if parcel.inclusion != Parcel.Inclusion.PERMANENT or parcel.water_since is None:
        return False
    params = LegalParameterSet.in_force(day).as_rules()
    return levy_start(water_since=parcel.water_since, params=params) <= day


@transaction.atomic
def water_delivery_record(*, acting_user: Any, parcel: Parcel, delivered_on: date, acre_feet: Decimal) -> WaterDelivery:
    """Staff record water delivered to a parcel that does not pay the levy yet, priced at the
    sec. 374a rate for that day ($2.00 in the first 12 months, then the Authority's rate or $3.00
    for land the owner waters with his own pumps)."""
    from parcels.roles import AUTHORITY

    if not has_role(acting_user, AUTHORITY):
        raise BillingError(_("Solo la Autoridad registra entregas de agua."))
    if acre_feet is None or acre_feet <= 0:
        raise BillingError(_("Los acres-pie deben ser más que cero."))
    if parcel.water_since is None or delivered_on < parcel.water_since:
        raise BillingError(_("El predio no tiene agua registrada para esa fecha (fecha de agua: %(d)s).") % {"d": parcel.water_since or "—"})
    if parcel_pays_levy_on(parcel, delivered_on):
        raise BillingError(_("El predio %(p)s ya paga la contribución: no se le vende agua por acre-pie (¶8).") % {"p": parcel.parcel_id})
    rates, authority_rate = water_rates_on(delivered_on)
    pumped = parcel.gravity_acres == 0 and parcel.pumped_acres > 0
    rate = rules.water_rate(first_water=parcel.water_since, delivery_date=delivered_on, pumped=pumped,
                            authority_rate=authority_rate, rates=rates)
    delivery = WaterDelivery(parcel=parcel, delivered_on=delivered_on, acre_feet=acre_feet, rate=rate,
                             amount=round_cents(acre_feet * rate), recorded_by=acting_user)
    delivery.full_clean()
    delivery.save()
    return delivery


@transaction.atomic
def water_charges_issue(*, acting_user: Any, year: int, month: int) -> int:
    """Each month's deliveries become one charge per parcel (due the first of the next month; no
    ¶12 surcharge: this is a sale of water, not the levy). Idempotent: billed deliveries are skipped."""
    from django.db.models import Sum

    from parcels.roles import AUTHORITY

    if not has_role(acting_user, AUTHORITY, HACIENDA):
        raise BillingError(_("Solo la Autoridad o Hacienda facturan el agua."))
    first = date(year, month, 1)
    due = date(year + (month == 12), month % 12 + 1, 1)
    locked = list(WaterDelivery.objects.select_for_update().filter(
        delivered_on__year=year, delivered_on__month=month, charge__isnull=True
    ).values_list("pk", flat=True))
    deliveries = WaterDelivery.objects.filter(pk__in=locked)
    count = 0
    for row in deliveries.values("parcel_id").annotate(total=Sum("amount"), feet=Sum("acre_feet")):
        charge = Charge.objects.create(
            parcel_id=row["parcel_id"], kind=Charge.Kind.WATER, fiscal_year=_fiscal_year(first),
            description=_("Agua %(m)02d/%(y)s: %(f)s acres-pie (sec. 374a)") % {"m": month, "y": year, "f": row["feet"]},
            principal=row["total"], due_date=due, last_day_to_pay=due_and_last_day(due=due)[1], accrues_surcharge=False,
            created_by=acting_user,
        )
        LedgerEntry.objects.create(parcel_id=row["parcel_id"], entry_date=due, kind=LedgerEntry.Kind.CHARGE, debit=row["total"],
                                   charge=charge, description=charge.description, created_by=acting_user)
        deliveries.filter(parcel_id=row["parcel_id"]).update(charge=charge)
        count += 1
    return count


def water_deliveries_import(*, acting_user: Any, data: bytes) -> tuple[int, list[str]]:
    """A CSV of deliveries (``parcel_id, delivered_on, acre_feet``), all or nothing."""
    import csv
    import io

    errors: list[str] = []
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        return 0, [_("el archivo no es UTF-8")]
    reader = csv.DictReader(io.StringIO(text))
    missing = {"parcel_id", "delivered_on", "acre_feet"} - set(reader.fieldnames or [])
    if missing:
        return 0, [_("línea 1: faltan columnas %(c)s") % {"c": ", ".join(sorted(missing))}]
    rows = list(reader)
    with transaction.atomic():
        for index, row in enumerate(rows, start=2):
            try:
                cells = {name: (row.get(name) or "").strip() for name in ("parcel_id", "delivered_on", "acre_feet")}
                parcel = parcel_by_code(cells["parcel_id"])
                day = date.fromisoformat(cells["delivered_on"])
                feet = Decimal(cells["acre_feet"])
                if not feet.is_finite() or feet != feet.quantize(Decimal("0.001")):
                    raise BillingError(_("acres-pie inválidos «%(v)s» (a lo sumo 3 decimales)") % {"v": cells["acre_feet"]})
                with transaction.atomic():
                    water_delivery_record(acting_user=acting_user, parcel=parcel, delivered_on=day, acre_feet=feet)
            except ValidationError as exc:
                errors.append(_("línea %(l)s: %(e)s") % {"l": index, "e": " ".join(exc.messages)})
            except (BillingError, ValueError, InvalidOperation, rules.BillingRuleError) as exc:
                errors.append(_("línea %(l)s: %(e)s") % {"l": index, "e": exc})
        if errors:
            transaction.set_rollback(True)
            return 0, errors
    return len(rows), []
