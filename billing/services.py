"""Write paths of billing and collection, one atomic service per action, recording the acting
user: ``installments_issue`` (at roll finalization), ``payment_record`` (the counter),
``payment_void``, ``refund_issue``. Reads that replay an account (``account_state``,
``statement``) use the pure rules in ``billing.rules``."""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import date
from decimal import Decimal, InvalidOperation
from typing import Any

from django.db import connection, transaction
from django.db.models import Q
from django.utils import timezone
from django.utils.translation import gettext as _

from levy.models import LegalParameterSet, Levy, RollLine
from levy.rules import CENT, fiscal_year_label
from parcels.models import Parcel
from parcels.roles import COLLECTOR, SUPERVISOR, has_role

from . import rules
from .models import Charge, CollectorAssignment, LedgerEntry, Office, OfficeClosure, Payment, PaymentVoid, Receipt, ReceiptSeries

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
            semester = _("julio") if number == 1 else _("enero")
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
    charges = {charge_key(c.pk): c for c in Charge.objects.filter(parcel=parcel).select_related("fiscal_year", "roll_line")}
    payments = [
        rules.PaymentInput(key=payment_key(pk), paid_on=paid_on, amount=amount)
        for pk, paid_on, amount in Payment.objects.filter(parcel=parcel, paid_on__lte=as_of)
        .exclude(void__voided_on__lte=as_of)
        .values_list("pk", "paid_on", "amount")
    ]
    if extra_payment is not None:
        payments.append(extra_payment)
    inputs = [
        rules.ChargeInput(key=key, principal=c.principal.amount, due=c.due_date, last_day=c.last_day_to_pay,
                          accrues_surcharge=c.accrues_surcharge)
        for key, c in charges.items()
    ]
    state = rules.account_state(charges=inputs, payments=payments, as_of=as_of, params=delinquency_parameters(as_of))
    return Account(parcel=parcel, state=state, charges=charges)


def surcharge_explanation(charge_state: rules.ChargeState, rate: Decimal) -> str:
    """¶12: how a surcharge was counted, e.g. "½% × 2 meses sobre $6,930.90"."""
    if not charge_state.surcharge_basis:
        return ""
    groups: list[list] = []
    for _start, unpaid in charge_state.surcharge_basis:
        if groups and groups[-1][1] == unpaid:
            groups[-1][0] += 1
        else:
            groups.append([1, unpaid])
    percent = "½%" if rate == Decimal("0.005") else f"{rate * 100:g}%"
    parts = []
    for months, unpaid in groups:
        unit = _("mes") if months == 1 else _("meses")
        parts.append(f"{percent} × {months} {unit} " + _("sobre") + f" ${unpaid:,.2f}")
    return " + ".join(parts)


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
    if assignment is None:
        raise BillingError(_("El usuario %(u)s no está asignado a una colecturía.") % {"u": user.username})
    return assignment.office


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
    return Receipt.objects.create(office=office, fiscal_year=fiscal_year, number=series.last_number, payment=payment, snapshot=snapshot)


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
    void = PaymentVoid.objects.create(payment=payment, voided_on=on, reason=reason.strip(), voided_by=acting_user)
    LedgerEntry.objects.create(parcel_id=payment.parcel_id, entry_date=on, kind=LedgerEntry.Kind.VOID, debit=payment.amount,
                               payment=payment, description=_("Anulación: %(r)s") % {"r": reason.strip()[:150]}, created_by=acting_user)
    realized = LedgerEntry.objects.filter(payment=payment, kind=LedgerEntry.Kind.SURCHARGE).first()
    if realized is not None:
        LedgerEntry.objects.create(parcel_id=payment.parcel_id, entry_date=on, kind=LedgerEntry.Kind.SURCHARGE_VOID,
                                   credit=realized.debit, payment=payment, description=_("Recargo del pago anulado"),
                                   created_by=acting_user)
    return void


def ledger_balance(parcel: Parcel) -> Decimal:
    """Σ debits − Σ credits of the parcel's ledger (charges + realized surcharges − payments …)."""
    from django.db.models import Sum

    sums = LedgerEntry.objects.filter(parcel=parcel).aggregate(d=Sum("debit"), c=Sum("credit"))
    return (sums["d"] or ZERO) - (sums["c"] or ZERO)


def parcel_by_code(code: str) -> Parcel:
    parcel = Parcel.objects.select_related("owner").filter(Q(parcel_id=code)).first()
    if parcel is None:
        raise BillingError(_("Predio desconocido «%(p)s».") % {"p": code})
    return parcel


