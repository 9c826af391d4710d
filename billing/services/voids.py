"""¶13: the void of a payment (a bounced check: money never received), issue 17.

A void can always be recorded. The arithmetic is ``billing.rules.void_plan``: newest first, the
later entries that moved the payment's money are reversed as new entries dated the void's day
(``VoidReversal`` and their ``LedgerEntry`` rows, each naming the void): a give-back of surcharge
the payment had paid, a *crédito aplicado* made with its money, and a refund already paid out of
it, which becomes a charge due at once (``Charge.Kind.VOID_REFUND``, no ¶12 surcharge). Then the
payment's own allocation is reversed as of its date, as before. The receipt stays as issued
(shown ANULADO). ``void_preview`` lists the same entries without writing (the review page and
``billing void --dry-run``).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from decimal import Decimal
from typing import Any

from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import gettext_noop  # ledger and charge descriptions: stored in Spanish

from levy.models import LegalParameterSet
from parcels.models import Parcel
from parcels.money import money_text
from parcels.roles import SUPERVISOR, has_role

from .. import chain, rules
from ..accounts import parcel_records, payment_key
from ..errors import BillingError
from ..models import (
    Charge,
    CreditApplication,
    DayClose,
    GiveBack,
    LedgerEntry,
    Payment,
    PaymentVoid,
    Refund,
    VoidReversal,
)
from .journal import adjustment_for_void
from .numbering import fiscal_year_for

ZERO = Decimal("0.00")


@dataclass(frozen=True)
class VoidEntry:
    """One entry the void posts, as the review page and ``billing void --dry-run`` list it:
    ``kind`` is ``give_back``, ``credit_applied``, ``refund`` (a ``VoidReversal``) or ``payment``
    (the payment's own allocation to a charge, or ``charge`` empty: what it left as credit);
    ``charge`` names the charge (for a refund, the new charge); ``on`` the reversed entry's date."""

    kind: str
    charge: str
    on: date
    surcharge: Decimal
    principal: Decimal

    @property
    def amount(self) -> Decimal:
        return self.surcharge + self.principal

    @property
    def text(self) -> str:
        day = self.on.strftime("%d/%m/%Y")
        if self.kind == rules.REVERSE_GIVE_BACK:
            return _("Se revierte la devolución del %(d)s en «%(c)s»: recargo %(s)s, principal %(p)s vuelven a contar "
                     "como pagados") % {
                "d": day, "c": self.charge, "s": money_text(self.surcharge), "p": money_text(self.principal)}
        if self.kind == rules.REVERSE_CREDIT_APPLIED:
            return _("Se revierte el crédito aplicado del %(d)s a «%(c)s»: recargo %(s)s, principal %(p)s vuelven a deberse") % {
                "d": day, "c": self.charge, "s": money_text(self.surcharge), "p": money_text(self.principal)}
        if self.kind == rules.REVERSE_REFUND:
            return _("El reembolso del %(d)s, pagado con este dinero, pasa a ser un cargo de %(a)s que vence hoy") % {
                "d": day, "a": money_text(self.principal)}
        if self.charge:
            return _("Se anula lo que el pago pagó a «%(c)s»: recargo %(s)s, principal %(p)s") % {
                "c": self.charge, "s": money_text(self.surcharge), "p": money_text(self.principal)}
        return _("Se anula lo que el pago dejó como crédito: %(a)s") % {"a": money_text(self.principal)}


@dataclass(frozen=True)
class VoidPreview:
    """What voiding ``payment`` on ``on`` will post, in order (``entries``), or why it cannot."""

    payment: Payment
    on: date
    plan: rules.VoidPlan
    entries: tuple[VoidEntry, ...]

    @property
    def amount(self) -> Decimal:
        return self.payment.amount.amount


def _refusal(*, acting_user: Any, payment: Payment, reason: str, on: date) -> str:
    if not has_role(acting_user, SUPERVISOR):
        return _("Solo un supervisor anula pagos.")
    if not reason.strip():
        return _("Anular un pago requiere una razón.")
    if PaymentVoid.objects.filter(payment=payment).exists():
        return _("Ese pago ya fue anulado.")
    if on < payment.paid_on:
        return _("La anulación no puede ser anterior al pago.")
    if on <= payment.paid_on and DayClose.objects.filter(office_id=payment.office_id, day=payment.paid_on).exists():
        return _("El día del pago ya está cerrado: la anulación debe llevar una fecha posterior.")
    return ""


def _plan(*, payment: Payment, on: date) -> tuple[rules.VoidPlan, dict[str, Charge]]:
    parcel = Parcel.objects.get(pk=payment.parcel_id)
    records, charges = parcel_records(parcels=[parcel], roll_lines=False)[parcel.pk]
    try:
        plan = rules.void_plan(
            charges=records.charges, payments=records.payments, credit_applied=records.credit_applied,
            given_back=records.given_back, refunds=records.refunds, reversals=records.reversals,
            payment_key=payment_key(payment.pk), on=on, schedule=LegalParameterSet.history().surcharge_schedule,
        )
    except rules.BillingRuleError as error:
        raise BillingError(_("No se puede anular este pago con fecha %(d)s: %(e)s") % {
            "d": on.strftime("%d/%m/%Y"), "e": error}) from None
    return plan, charges


def _entries(plan: rules.VoidPlan, charges: dict[str, Charge]) -> tuple[VoidEntry, ...]:
    found = []
    for reversal in plan.reversals:
        label = charges[reversal.charge_key].label if reversal.charge_key in charges else _("Reembolso de un pago anulado")
        found.append(VoidEntry(kind=reversal.kind, charge=label, on=reversal.effective_from,
                               surcharge=reversal.surcharge, principal=reversal.principal))
    for allocation in plan.allocations:
        found.append(VoidEntry(kind="payment", charge=charges[allocation.charge_key].label, on=plan.on,
                               surcharge=allocation.surcharge, principal=allocation.principal))
    if plan.to_credit > 0:
        found.append(VoidEntry(kind="payment", charge="", on=plan.on, surcharge=ZERO, principal=plan.to_credit))
    return tuple(found)


def void_preview(*, acting_user: Any, payment: Payment, reason: str, voided_on: date | None = None) -> VoidPreview:
    """¶13: every entry ``payment_void`` would post, with amounts, nothing written (the review
    page and ``billing void --dry-run``). Raises ``BillingError`` when the void would be refused."""
    on = voided_on or timezone.localdate()
    refusal = _refusal(acting_user=acting_user, payment=payment, reason=reason, on=on)
    if refusal:
        raise BillingError(refusal)
    plan, charges = _plan(payment=payment, on=on)
    return VoidPreview(payment=payment, on=on, plan=plan, entries=_entries(plan, charges))


@transaction.atomic
def payment_void(*, acting_user: Any, payment: Payment, reason: str, voided_on: date | None = None) -> PaymentVoid:
    """¶13: a bounced check, voided by a supervisor with a reason: the reversals of
    ``rules.void_plan`` (newest first, each a new entry dated the void's day naming it), then the
    payment's own reversing entry. The receipt stays as issued."""
    payment = Payment.objects.select_for_update(of=("self",)).select_related("receipt__office").get(pk=payment.pk)
    Parcel.objects.select_for_update().get(pk=payment.parcel_id)
    on = voided_on or timezone.localdate()
    refusal = _refusal(acting_user=acting_user, payment=payment, reason=reason, on=on)
    if refusal:
        raise BillingError(refusal)
    plan, charges = _plan(payment=payment, on=on)
    reason = reason.strip()
    void = PaymentVoid.objects.create(payment=payment, voided_on=on, reason=reason, voided_by=acting_user)
    receipt = payment.receipt.display_number
    parcel_id = payment.parcel_id
    for reversal in plan.reversals:
        target = int(reversal.target[1:])
        if reversal.kind == rules.REVERSE_GIVE_BACK:
            back = GiveBack.objects.get(pk=target, parcel_id=parcel_id)
            VoidReversal.objects.create(void=void, parcel_id=parcel_id, kind=VoidReversal.Kind.GIVE_BACK, give_back=back,
                                        charge_id=back.charge_id, surcharge=reversal.surcharge, principal=reversal.principal,
                                        entry_date=on, created_by=acting_user)
            if reversal.surcharge > 0:
                LedgerEntry.objects.create(
                    parcel_id=parcel_id, entry_date=on, kind=LedgerEntry.Kind.GIVE_BACK_VOID, debit=reversal.surcharge,
                    description=(gettext_noop("Anulación del recibo %(n)s: recargo devuelto el %(d)s revertido")
                                 % {"n": receipt, "d": back.entry_date.strftime("%d/%m/%Y")})[:200],
                    created_by=acting_user,
                )
        elif reversal.kind == rules.REVERSE_CREDIT_APPLIED:
            applied = CreditApplication.objects.get(pk=target, parcel_id=parcel_id)
            VoidReversal.objects.create(void=void, parcel_id=parcel_id, kind=VoidReversal.Kind.CREDIT_APPLIED,
                                        credit_application=applied, charge_id=applied.charge_id,
                                        surcharge=reversal.surcharge, principal=reversal.principal, entry_date=on,
                                        created_by=acting_user)
            if reversal.surcharge > 0:
                LedgerEntry.objects.create(
                    parcel_id=parcel_id, entry_date=on, kind=LedgerEntry.Kind.CREDIT_APPLIED_VOID, credit=reversal.surcharge,
                    description=(gettext_noop("Anulación del recibo %(n)s: crédito aplicado el %(d)s revertido")
                                 % {"n": receipt, "d": applied.entry_date.strftime("%d/%m/%Y")})[:200],
                    created_by=acting_user,
                )
        else:
            refund = Refund.objects.get(pk=target, parcel_id=parcel_id)
            description = (gettext_noop("Reembolso del %(d)s pagado con el pago anulado del recibo %(n)s")
                           % {"d": refund.refunded_on.strftime("%d/%m/%Y"), "n": receipt})[:200]
            # ¶13: due at once, its last day stored now and never moved; no ¶12 surcharge.
            charge = Charge.objects.create(
                parcel_id=parcel_id, kind=Charge.Kind.VOID_REFUND, fiscal_year=fiscal_year_for(on), description=description,
                principal=reversal.principal, due_date=on, last_day_to_pay=on, accrues_surcharge=False,
                created_by=acting_user,
            )
            VoidReversal.objects.create(void=void, parcel_id=parcel_id, kind=VoidReversal.Kind.REFUND, refund=refund,
                                        charge=charge, principal=reversal.principal, entry_date=on, created_by=acting_user)
            LedgerEntry.objects.create(parcel_id=parcel_id, entry_date=on, kind=LedgerEntry.Kind.REFUND_CHARGED,
                                       debit=reversal.principal, charge=charge, refund=refund, description=description,
                                       created_by=acting_user)
            LedgerEntry.objects.create(
                parcel_id=parcel_id, entry_date=on, kind=LedgerEntry.Kind.REFUND_VOID, credit=reversal.principal, refund=refund,
                description=(gettext_noop("Reembolso del %(d)s: ya no sale del crédito (anulación del recibo %(n)s)")
                             % {"d": refund.refunded_on.strftime("%d/%m/%Y"), "n": receipt})[:200],
                created_by=acting_user,
            )
    LedgerEntry.objects.create(parcel_id=parcel_id, entry_date=on, kind=LedgerEntry.Kind.VOID, debit=payment.amount,
                               payment=payment, description=(gettext_noop("Anulación: %(r)s") % {"r": reason[:150]}),
                               created_by=acting_user)
    realized = LedgerEntry.objects.filter(payment=payment, kind=LedgerEntry.Kind.SURCHARGE).first()
    if realized is not None:
        LedgerEntry.objects.create(parcel_id=parcel_id, entry_date=on, kind=LedgerEntry.Kind.SURCHARGE_VOID,
                                   credit=realized.debit, payment=payment, description=gettext_noop("Recargo del pago anulado"),
                                   created_by=acting_user)
    chain.link(chain.VOID, void.pk)
    adjustment_for_void(acting_user=acting_user, void=void, today=timezone.localdate())  # issue 19: a void in a closed day
    return void


def void_entries(void: PaymentVoid) -> tuple[VoidEntry, ...]:
    """The entries a recorded void posted, as ``void_preview`` listed them (for its pages)."""
    found = []
    for reversal in void.reversals.select_related("charge__fiscal_year", "give_back", "credit_application", "refund"):
        on = (reversal.give_back.entry_date if reversal.give_back else reversal.credit_application.entry_date
              if reversal.credit_application else reversal.refund.refunded_on)
        found.append(VoidEntry(kind=reversal.kind, charge=reversal.charge.label, on=on, surcharge=reversal.surcharge.amount,
                               principal=reversal.principal.amount))
    return tuple(found)

