"""Billing and collection: charges (installments, corrections, water sales), payments at the
Collector's office, numbered receipts, voids, refunds and the append-only ledger.

Design:
- A ``Charge`` is what a parcel owes: the two installments (*plazos*) of each finalized roll
  line (¶9, ¶12), supplementary corrections (their own charge), and sec. 374a water sales. Its
  due date and last day to pay are fixed when it is issued and never recomputed.
- A ``Payment`` is money received at a *colecturía*; it is never edited or deleted. A bounced
  check is a ``PaymentVoid`` (a new dated reversing entry by a supervisor, with a reason).
- Surcharges (*recargos*, ¶12) are not posted by a nightly job: they are computed as of a date
  from the account's stored records (``billing.rules.ledger_state``), so computing twice never
  charges twice. When a payment settles surcharge, the ledger records that realized surcharge.
- ``LedgerEntry`` is the append-only account of each parcel (debit/credit, both positive:
  hordak's lesson on signed amounts); balances are sums, never typed in. Triggers refuse
  UPDATE and DELETE on charges, payments, voids, receipts and ledger rows.
- ``Receipt`` numbers are unique per office and fiscal year of the payment date, with no gaps:
  a ``ReceiptSeries`` row is locked and advanced inside the payment's transaction.
- ``BooksCheck`` records each run of the books' invariants (nightly task, ``verify_books``), append-only.
"""

from __future__ import annotations

from collections.abc import Iterable
from decimal import Decimal
from typing import Any

import pghistory
import pgtrigger
from django.conf import settings
from django.db import models
from django.db.models import Min, Q, Sum
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from levy.models import money_field
from parcels.addresses import Address, usps_block
from parcels.database import APPEND_ONLY, NO_TRUNCATE
from parcels.models import HISTORY

from . import wording
from .storage import DocumentFileField, parts_storage


class Office(models.Model):
    """A Collector's office (*colecturía*, ¶13): where and when a landowner pays, as printed on
    the bills (frozen in each bill's snapshot). Staff edit it on ``/cobros/oficinas/``; every
    change is kept in ``OfficeEvent`` (pghistory)."""

    code = models.CharField(_("código"), max_length=10, unique=True)
    name = models.CharField(_("nombre"), max_length=120)
    # The one free-text line offices had before the parts below (kept, no longer printed).
    address = models.CharField(_("dirección anterior (texto libre)"), max_length=200, blank=True)
    address_line1 = models.CharField(_("dirección, línea 1"), max_length=100, blank=True, default="", db_default="")
    address_line2 = models.CharField(_("dirección, línea 2"), max_length=100, blank=True, default="", db_default="")
    town = models.CharField(_("pueblo (municipio)"), max_length=60, blank=True, default="", db_default="")
    zip_code = models.CharField(_("código postal (ZIP)"), max_length=10, blank=True, default="", db_default="",
                                help_text=_("00667 o 00667-1234."))
    phone = models.CharField(_("teléfono"), max_length=40, blank=True, default="", db_default="",
                             help_text=_("Por ejemplo (787) 899-0000."))
    hours_es = models.CharField(_("horario (español)"), max_length=200, blank=True, default="", db_default="",
                                help_text=_("Por ejemplo: lunes a viernes, 8:00 a. m. a 4:30 p. m."))
    hours_en = models.CharField(_("horario (inglés)"), max_length=200, blank=True, default="", db_default="")
    ways_to_pay_es = models.TextField(_("formas de pago (español)"), blank=True, default="", db_default="",
                                      help_text=_("Lo que el aviso dice sobre cómo y dónde pagar."))
    ways_to_pay_en = models.TextField(_("formas de pago (inglés)"), blank=True, default="", db_default="")
    on_bills = models.BooleanField(_("se imprime en los avisos"), default=False, db_default=False,
                                   help_text=_("La oficina que los avisos emitidos por Hacienda nombran para pagar."))

    class Kind(models.TextChoices):
        COUNTER = "counter", _("Colecturía (mostrador)")
        # ¶13 (docs/interpretations.md): a bank the Secretary designates as collecting agent acts as
        # a Collector's office; its payments come in bank files (billing.services.bank), dated their
        # value date, numbered in its own receipt series; it has no counter and no day close.
        BANK = "bank", _("Banco agente recaudador")

    kind = models.CharField(_("tipo"), max_length=8, choices=Kind.choices, default=Kind.COUNTER, db_default=Kind.COUNTER)

    class Meta:
        ordering = ["code"]
        constraints = [
            models.UniqueConstraint(fields=["on_bills"], condition=Q(on_bills=True), name="one_office_on_bills"),
            models.CheckConstraint(condition=Q(zip_code="") | Q(zip_code__regex=r"^00[6-9][0-9]{2}(-[0-9]{4})?$"),
                                   name="office_pr_zip"),
            # the bills name a counter where the landowner pays in person
            models.CheckConstraint(condition=Q(on_bills=False) | Q(kind="counter"), name="office_on_bills_is_a_counter"),
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.code})"

    @property
    def is_bank(self) -> bool:
        return self.kind == self.Kind.BANK

    def return_block(self) -> tuple[str, ...]:
        """The office's return address as USPS reads it: name, lines, ``LAJAS PR 00667``."""
        return usps_block(Address(line1=self.address_line1, line2=self.address_line2, town=self.town, zip_code=self.zip_code),
                          name=self.name)


class CollectorAssignment(models.Model):
    """The office a collector or supervisor works at."""

    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="collector_assignment")
    office = models.ForeignKey(Office, on_delete=models.PROTECT, related_name="assignments")


class OfficeClosure(models.Model):
    """A day the offices were closed (e.g. a hurricane): it moves a last day to pay like a holiday (¶12)."""

    day = models.DateField(_("día"), unique=True)
    reason = models.CharField(_("razón"), max_length=200)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["day"]


class Charge(models.Model):
    class Kind(models.TextChoices):
        INSTALLMENT = "installment", _("Plazo de la contribución")
        CORRECTION = "correction", _("Corrección suplementaria")
        WATER = "water", _("Venta de agua (sec. 374a)")
        REFUND = "refund", _("Reembolso de crédito")
        # ¶13: a refund paid out of a payment later voided (issue 17): owed at once, no ¶12 surcharge
        VOID_REFUND = "void_refund", _("Reembolso de un pago anulado")

    parcel = models.ForeignKey("parcels.Parcel", on_delete=models.PROTECT, related_name="charges")
    kind = models.CharField(max_length=12, choices=Kind.choices)
    fiscal_year = models.ForeignKey("levy.FiscalYear", on_delete=models.PROTECT, related_name="charges")
    number = models.PositiveSmallIntegerField(_("plazo"), null=True, blank=True)  # 1 = July, 2 = January
    roll_line = models.ForeignKey("levy.RollLine", on_delete=models.PROTECT, null=True, blank=True, related_name="charges")
    correction = models.OneToOneField("levy.RollCorrection", on_delete=models.PROTECT, null=True, blank=True, related_name="charge")
    description = models.CharField(max_length=200)
    principal = money_field(_("principal"))
    due_date = models.DateField(_("vence"))
    last_day_to_pay = models.DateField(_("último día para pagar"))
    accrues_surcharge = models.BooleanField(default=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    _name_fields: dict[str, Any]  # charge_names(), once read

    class Meta:
        ordering = ["due_date", "id"]
        constraints = [
            models.UniqueConstraint(fields=["roll_line", "number"], condition=Q(kind="installment"), name="one_installment_per_half"),
            models.CheckConstraint(condition=Q(principal__gte=0), name="charge_not_negative"),
            models.CheckConstraint(condition=Q(last_day_to_pay__gte=models.F("due_date")), name="charge_last_day_after_due"),
            models.CheckConstraint(
                condition=~Q(kind="installment") | (Q(roll_line__isnull=False) & Q(number__in=[1, 2])), name="installment_has_line",
            ),
        ]
        indexes = [
            models.Index(fields=["parcel", "due_date"]), models.Index(fields=["fiscal_year", "number"]),
            # Issue 20: the delinquent list's candidates (``billing.delinquency``): charges that
            # accrue surcharge, past a stored last day to pay
            models.Index(fields=["last_day_to_pay", "parcel"], condition=Q(accrues_surcharge=True), name="charge_late_candidates"),
        ]
        triggers = APPEND_ONLY

    def __str__(self) -> str:
        return self.description  # the stored Spanish name; pages show ``label`` (no query for the fiscal year here)

    @property
    def label(self) -> str:
        """The charge's name in the active language (``description`` is the stored Spanish one)."""
        return wording.charge_label(kind=self.kind, fiscal_year=self.fiscal_year.label, number=self.number,
                                    description=self.description, due_date=self.due_date, **self.name_fields())

    def name_fields(self) -> dict[str, Any]:
        """The stored facts the charge's name needs beyond its own fields (``charge_names``),
        read once per instance (``charge_names`` of many charges fills them in a few queries)."""
        if not hasattr(self, "_name_fields"):
            charge_names([self])
        return self._name_fields

    @property
    def key(self) -> str:
        return f"C{self.pk}"


def charge_names(charges: Iterable[Charge]) -> dict[int, dict[str, Any]]:
    """The stored facts a charge's name (``wording.charge_label``) needs beyond its own fields,
    ``{charge pk: fields}``, read from the records that made it (never from its description),
    and kept on each instance for ``Charge.name_fields``:

    - a correction charge: ``correction``, its correction's number in its roll
      (``levy.RollCorrection.objects.numbered``, through ``CorrectionCharge``), or for a charge
      of the older one-charge corrections (``Charge.correction``) the correction's ``reason``;
    - a water sale: ``water_month`` (``YYYY-MM``, the month of its deliveries) and ``acre_feet``
      (their sum), from the ``WaterDelivery`` rows it billed.

    At most three queries, none when no charge is a correction or a water sale."""
    from levy.models import RollCorrection

    charges = list(charges)
    found: dict[int, dict[str, Any]] = {charge.pk: {} for charge in charges}
    corrections = [charge.pk for charge in charges if charge.kind == Charge.Kind.CORRECTION]
    water = [charge.pk for charge in charges if charge.kind == Charge.Kind.WATER]
    if corrections:
        raised = dict(CorrectionCharge.objects.filter(charge_id__in=corrections).values_list("charge_id", "correction_id"))
        older = {charge.pk: charge.correction_id for charge in charges
                 if charge.pk in corrections and charge.pk not in raised and charge.correction_id}
        facts = {pk: (number, reason) for pk, number, reason in RollCorrection.objects.numbered()
                 .filter(pk__in=set(raised.values()) | set(older.values())).values_list("pk", "number", "reason")}
        for charge_id, correction_id in raised.items():
            found[charge_id] = {"correction": facts[correction_id][0]}
        for charge_id, correction_id in older.items():
            found[charge_id] = {"reason": facts[correction_id][1]}
    if water:
        for charge_id, month, feet in (WaterDelivery.objects.filter(charge_id__in=water).order_by().values("charge_id")
                                       .annotate(month=Min("delivered_on"), feet=Sum("acre_feet"))
                                       .values_list("charge_id", "month", "feet")):
            found[charge_id] = {"water_month": month.strftime("%Y-%m"), "acre_feet": feet}
    for charge in charges:
        charge._name_fields = found[charge.pk]
    return found


def _office_day_lock(office: str, day: str) -> str:
    """SQL taking the advisory lock of one office day (the key: the office's id and the day)."""
    return f"hashtextextended('billing.office_day:' || {office} || ':' || {day}, 0)"


# Issue 17, enforced in the database beside ``counter.payment_record``'s own checks (which give
# the readable message). The void of a payment lives in another table, so "one check number per
# parcel unless voided" cannot be a partial unique index: a trigger checks it, after locking the
# parcel row as the service does, so two transactions cannot both miss each other's check.
PAYMENT_GUARDS = [
    pgtrigger.Trigger(
        name="payment_not_into_closed_day",
        operation=pgtrigger.Insert,
        when=pgtrigger.Before,
        func=pgtrigger.Func(
            f"""
            -- shared: payments of one office day do not wait for each other, only for its close
            PERFORM pg_advisory_xact_lock_shared({_office_day_lock("NEW.office_id", "NEW.paid_on")});
            IF EXISTS (SELECT 1 FROM billing_dayclose WHERE office_id = NEW.office_id AND day = NEW.paid_on) THEN
                RAISE EXCEPTION 'payment into the closed day % of office %', NEW.paid_on, NEW.office_id
                    USING ERRCODE = 'check_violation';
            END IF;
            RETURN NEW;
            """
        ),
    ),
    pgtrigger.Trigger(
        name="one_check_number_per_parcel",
        operation=pgtrigger.Insert,
        when=pgtrigger.Before,
        condition=pgtrigger.Q(new__method="check"),
        func=pgtrigger.Func(
            """
            IF btrim(NEW.reference) = '' THEN
                RETURN NEW;
            END IF;
            PERFORM 1 FROM parcels_parcel WHERE id = NEW.parcel_id FOR UPDATE;
            IF EXISTS (
                SELECT 1 FROM billing_payment p
                WHERE p.parcel_id = NEW.parcel_id AND p.method = 'check'
                  AND upper(regexp_replace(p.reference, '[[:space:]]', '', 'g')) = upper(regexp_replace(NEW.reference, '[[:space:]]', '', 'g'))
                  AND NOT EXISTS (SELECT 1 FROM billing_paymentvoid v WHERE v.payment_id = p.id)
            ) THEN
                RAISE EXCEPTION 'check % already recorded for parcel % and not voided', NEW.reference, NEW.parcel_id
                    USING ERRCODE = 'unique_violation';
            END IF;
            RETURN NEW;
            """
        ),
    ),
    pgtrigger.Trigger(
        name="second_payment_of_same_parcel",
        operation=pgtrigger.Insert,
        when=pgtrigger.Before,
        condition=pgtrigger.Q(new__second_of__isnull=False),
        func=pgtrigger.Func(
            """
            IF NOT EXISTS (SELECT 1 FROM billing_payment p WHERE p.id = NEW.second_of_id AND p.parcel_id = NEW.parcel_id
                           AND p.amount = NEW.amount AND p.method = NEW.method) THEN
                RAISE EXCEPTION 'a second payment names an earlier payment of the same parcel, amount and method'
                    USING ERRCODE = 'check_violation';
            END IF;
            RETURN NEW;
            """
        ),
    ),
]

# A close waits for every payment of its office day still being recorded (the lock above), then
# records the drawer only as the committed receipts stand: expected cash and checks as
# ``selectors.day_report`` counts them (a payment voided on or before the day is not in it).
DAY_CLOSE_GUARD = pgtrigger.Trigger(
    name="close_matches_committed_receipts",
    operation=pgtrigger.Insert,
    when=pgtrigger.Before,
    func=pgtrigger.Func(
        f"""
        PERFORM pg_advisory_xact_lock({_office_day_lock("NEW.office_id", "NEW.day")});
        -- issue 18: a refund paid that day in cash from the drawer is money out of it
        IF (SELECT (coalesce(sum(p.amount) FILTER (WHERE p.method = 'cash'), 0)
                    - (SELECT coalesce(sum(f.amount), 0) FROM billing_refund f
                       WHERE f.office_id = NEW.office_id AND f.refunded_on = NEW.day AND f.method = 'cash'),
                    coalesce(sum(p.amount) FILTER (WHERE p.method = 'check'), 0))
            FROM billing_payment p
            WHERE p.office_id = NEW.office_id AND p.paid_on = NEW.day
              AND NOT EXISTS (SELECT 1 FROM billing_paymentvoid v WHERE v.payment_id = p.id AND v.voided_on <= NEW.day))
           IS DISTINCT FROM (NEW.expected_cash, NEW.expected_checks) THEN
            RAISE EXCEPTION 'a payment of % at office % was recorded while the day was being closed', NEW.day, NEW.office_id
                USING ERRCODE = 'serialization_failure';
        END IF;
        RETURN NEW;
        """
    ),
)


# Issue 18: a cash refund leaves its office's drawer, so none enters a day already closed (the
# close counted the drawer); it waits for a close under way. A check refund does not touch the drawer.
REFUND_INTO_OPEN_DAY = pgtrigger.Trigger(
    name="cash_refund_into_open_office_day",
    operation=pgtrigger.Insert,
    when=pgtrigger.Before,
    condition=pgtrigger.Q(new__office__isnull=False, new__method="cash"),
    func=pgtrigger.Func(
        f"""
        PERFORM pg_advisory_xact_lock_shared({_office_day_lock("NEW.office_id", "NEW.refunded_on")});
        IF EXISTS (SELECT 1 FROM billing_dayclose WHERE office_id = NEW.office_id AND day = NEW.refunded_on) THEN
            RAISE EXCEPTION 'cash refund into the closed day % of office %', NEW.refunded_on, NEW.office_id
                USING ERRCODE = 'check_violation';
        END IF;
        RETURN NEW;
        """
    ),
)


class Payment(models.Model):
    class Method(models.TextChoices):
        CASH = "cash", _("Efectivo")
        CHECK = "check", _("Cheque")
        CARD = "card", _("Tarjeta")
        TRANSFER = "transfer", _("Transferencia")

    parcel = models.ForeignKey("parcels.Parcel", on_delete=models.PROTECT, related_name="payments")
    office = models.ForeignKey(Office, on_delete=models.PROTECT, related_name="payments")
    collector = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    paid_on = models.DateField(_("fecha de pago"))
    amount = money_field(_("cantidad"))
    method = models.CharField(_("forma de pago"), max_length=10, choices=Method.choices)
    reference = models.CharField(_("referencia"), max_length=80, blank=True)
    idempotency_key = models.CharField(max_length=64, unique=True)
    payer_name = models.CharField(_("pagador"), max_length=200)
    # Cash only: what the payer handed over and the change given back (tendered − amount); empty
    # for other methods and for cash payments recorded before the counter asked (or by commands).
    tendered = money_field(_("efectivo recibido"), null=True, blank=True)
    change = money_field(_("cambio"), null=True, blank=True)
    # A payment dated before the day it was recorded (issue 11, finding 7): only a supervisor
    # records one (``collector`` is then that supervisor), always with the reason, printed on the
    # receipt. Payments recorded before the rule read as not back-dated.
    backdated = models.BooleanField(_("con fecha retroactiva"), default=False)
    backdate_reason = models.CharField(_("razón de la fecha retroactiva"), max_length=200, blank=True, default="")
    # Issue 17: the same parcel, amount and form of payment within 10 minutes of an earlier one is
    # recorded only once the collector confirmed "yes, it is a second payment" after being shown
    # that earlier payment's receipt; this is the payment that was named.
    second_of = models.ForeignKey("self", on_delete=models.PROTECT, null=True, blank=True, related_name="+",
                                  verbose_name=_("confirmado como segundo pago después de"))
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["paid_on", "id"]
        constraints = [
            models.CheckConstraint(condition=Q(amount__gt=0), name="payment_positive"),
            models.CheckConstraint(
                condition=(Q(backdated=True) & ~Q(backdate_reason="")) | (Q(backdated=False) & Q(backdate_reason="")),
                name="payment_backdated_has_reason",
            ),
            models.CheckConstraint(
                condition=(Q(tendered__isnull=True) & Q(change__isnull=True))
                | (Q(method="cash") & Q(tendered__gte=models.F("amount")) & Q(change=models.F("tendered") - models.F("amount"))),
                name="payment_change_is_tendered_less_amount",
            ),
        ]
        indexes = [models.Index(fields=["parcel", "paid_on"]), models.Index(fields=["office", "paid_on"])]
        triggers = [*APPEND_ONLY, *PAYMENT_GUARDS]

    @property
    def key(self) -> str:
        return f"P{self.pk}"


class PaymentVoid(models.Model):
    """A reversing entry for a payment (bounced check), dated, with a reason, by a supervisor."""

    payment = models.OneToOneField(Payment, on_delete=models.PROTECT, related_name="void")
    voided_on = models.DateField(_("fecha de la anulación"))
    reason = models.CharField(_("razón"), max_length=200)
    voided_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        triggers = APPEND_ONLY


class Refund(models.Model):
    """A supervisor pays back money beyond every issued charge (the account's credit).

    Issue 18: numbered (``RE-<year>-<n>``), with how the money went back (cash from the office's
    drawer, or a check with its number) and the office whose day report (*cuadre*) lists it; a
    cash refund is money out of that day's drawer. Refunds recorded before have no number, way
    or office (blank).

    Issue 19: a refund is posted when a second supervisor approves its ``RefundRequest``
    (``request``, the reverse of ``RefundRequest.refund``); ``refunded_by`` is that approver. A
    refund may also go back by bank transfer, with the transfer's reference."""

    class Method(models.TextChoices):
        CASH = "cash", _("Efectivo de la caja")
        CHECK = "check", _("Cheque")
        TRANSFER = "transfer", _("Transferencia bancaria")

    parcel = models.ForeignKey("parcels.Parcel", on_delete=models.PROTECT, related_name="refunds")
    amount = money_field(_("cantidad"))
    refunded_on = models.DateField()
    reason = models.CharField(max_length=200)
    refunded_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    number = models.CharField(_("número"), max_length=20, blank=True, default="")
    method = models.CharField(_("forma de reembolso"), max_length=8, choices=Method.choices, blank=True, default="")
    check_number = models.CharField(_("número del cheque"), max_length=40, blank=True, default="")
    office = models.ForeignKey("Office", on_delete=models.PROTECT, null=True, blank=True, related_name="refunds")
    transfer_reference = models.CharField(_("referencia de la transferencia"), max_length=40, blank=True, default="")

    class Meta:
        constraints = [
            models.CheckConstraint(condition=Q(amount__gt=0), name="refund_positive"),
            models.UniqueConstraint(fields=["number"], condition=~Q(number=""), name="one_refund_per_number"),
            # a check refund names its check; a cash one has none
            models.CheckConstraint(
                condition=Q(method="check", check_number__regex=r"\S") | (~Q(method="check") & Q(check_number="")),
                name="refund_check_has_number",
            ),
            # issue 19: a transfer names its reference; no other way has one
            models.CheckConstraint(
                condition=Q(method="transfer", transfer_reference__regex=r"\S") | (~Q(method="transfer") & Q(transfer_reference="")),
                name="refund_transfer_has_reference",
            ),
        ]
        triggers = [*APPEND_ONLY, REFUND_INTO_OPEN_DAY]


# Issue 19: a refund request only moves forward, once: from "requested" to approved or rejected;
# what was asked (parcel, amount, way, office, who, when) never changes, and no request is deleted.
REFUND_REQUEST_FORWARD_ONLY = pgtrigger.Trigger(
    name="refund_request_forward_only",
    operation=pgtrigger.Update | pgtrigger.Delete,
    when=pgtrigger.Before,
    func=pgtrigger.Func(
        """
        IF TG_OP = 'DELETE' THEN
            RAISE EXCEPTION 'a refund request is never deleted' USING ERRCODE = 'restrict_violation';
        END IF;
        IF OLD.status <> 'requested' THEN
            RAISE EXCEPTION 'refund request % was already decided (%)', OLD.id, OLD.status USING ERRCODE = 'restrict_violation';
        END IF;
        IF (NEW.parcel_id, NEW.amount, NEW.reason, NEW.method, NEW.office_id, NEW.requested_by_id, NEW.requested_at)
           IS DISTINCT FROM (OLD.parcel_id, OLD.amount, OLD.reason, OLD.method, OLD.office_id, OLD.requested_by_id, OLD.requested_at) THEN
            RAISE EXCEPTION 'what refund request % asked never changes', OLD.id USING ERRCODE = 'restrict_violation';
        END IF;
        RETURN NEW;
        """
    ),
)


class RefundRequest(models.Model):
    """Issue 19: a refund of credit needs two people. A supervisor asks for it (amount, reason, how
    the money goes back, the office whose day report will list it); a DIFFERENT supervisor approves
    it, giving the check's number or the transfer's reference, which posts the ``Refund`` (its
    number, ledger entry and chain link, as before), or rejects it with a reason. While a request
    is pending its amount is held: another request sees the credit less it.

    The database keeps it honest: the decider is never the requester; an approved request has
    its refund, a rejected one its reason; a decided request never changes again, and no request
    is deleted (``REFUND_REQUEST_FORWARD_ONLY``)."""

    class Status(models.TextChoices):
        REQUESTED = "requested", _("Pendiente de aprobación")
        APPROVED = "approved", _("Aprobado")
        REJECTED = "rejected", _("Rechazado")

    parcel = models.ForeignKey("parcels.Parcel", on_delete=models.PROTECT, related_name="refund_requests")
    amount = money_field(_("cantidad"))
    reason = models.CharField(_("razón"), max_length=200)
    method = models.CharField(_("forma de reembolso"), max_length=8, choices=Refund.Method.choices)
    office = models.ForeignKey("Office", on_delete=models.PROTECT, related_name="refund_requests")
    requested_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    requested_at = models.DateTimeField(auto_now_add=True)
    status = models.CharField(_("estado"), max_length=9, choices=Status.choices, default=Status.REQUESTED)
    decided_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, null=True, blank=True, related_name="+")
    decided_at = models.DateTimeField(null=True, blank=True)
    decision_reason = models.CharField(_("razón del rechazo"), max_length=200, blank=True, default="")
    refund = models.OneToOneField(Refund, on_delete=models.PROTECT, null=True, blank=True, related_name="request")

    class Meta:
        ordering = ["requested_at", "id"]
        constraints = [
            models.CheckConstraint(condition=Q(amount__gt=0), name="refund_request_positive"),
            models.CheckConstraint(condition=Q(reason__regex=r"\S"), name="refund_request_has_reason"),
            models.CheckConstraint(condition=Q(method__in=["cash", "check", "transfer"]), name="refund_request_method"),
            # two people: whoever decides is not whoever asked
            models.CheckConstraint(condition=~Q(decided_by=models.F("requested_by")), name="refund_request_two_people"),
            models.CheckConstraint(
                condition=(
                    Q(status="requested", decided_by__isnull=True, decided_at__isnull=True, refund__isnull=True, decision_reason="")
                    | Q(status="approved", decided_by__isnull=False, decided_at__isnull=False, refund__isnull=False,
                        decision_reason="")
                    | Q(status="rejected", decided_by__isnull=False, decided_at__isnull=False, refund__isnull=True,
                        decision_reason__regex=r"\S")
                ),
                name="refund_request_status_consistent",
            ),
        ]
        indexes = [models.Index(fields=["parcel", "status"])]
        triggers = [REFUND_REQUEST_FORWARD_ONLY, NO_TRUNCATE]


class WaterRate(models.Model):
    """The Authority's rate per acre-foot after a parcel's first 12 months of water, until its levy
    starts (sec. 374a; at most the legal cap), in force from ``effective_from``."""

    effective_from = models.DateField(unique=True)
    rate = models.DecimalField(max_digits=6, decimal_places=2)
    set_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-effective_from"]
        constraints = [models.CheckConstraint(condition=Q(rate__gte=0) & Q(rate__lte=6), name="water_rate_capped")]


class WaterDelivery(models.Model):
    """Water delivered to a parcel that does not pay the levy yet (¶8, sec. 374a); billed monthly.

    ``land`` says which of the parcel's land the water went to: land the owner waters with his
    own pumps pays the pumped rate after the first 12 months, whatever else the parcel holds."""

    class Land(models.TextChoices):
        GRAVITY = "gravity", _("por gravedad")
        PUMPED = "pumped", _("por bombeo del dueño")

    parcel = models.ForeignKey("parcels.Parcel", on_delete=models.PROTECT, related_name="water_deliveries")
    delivered_on = models.DateField(_("fecha"))
    land = models.CharField(_("tierra"), max_length=7, choices=Land.choices)
    acre_feet = models.DecimalField(_("acres-pie"), max_digits=10, decimal_places=3)
    rate = models.DecimalField(_("tarifa por acre-pie"), max_digits=6, decimal_places=2)
    amount = models.DecimalField(max_digits=12, decimal_places=2)
    charge = models.ForeignKey(Charge, on_delete=models.PROTECT, null=True, blank=True, related_name="deliveries")
    recorded_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    recorded_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["delivered_on", "id"]
        constraints = [models.CheckConstraint(condition=Q(acre_feet__gt=0), name="delivery_positive")]


class ReceiptSeries(models.Model):
    """The last receipt number used by an office in a fiscal year (locked to allocate the next)."""

    office = models.ForeignKey(Office, on_delete=models.PROTECT)
    fiscal_year = models.CharField(max_length=9)
    last_number = models.PositiveIntegerField(default=0)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["office", "fiscal_year"], name="one_series_per_office_year")]
        triggers = [NO_TRUNCATE]  # emptied, the numbering would start again at 1


class Receipt(models.Model):
    """A numbered tax receipt (*recibo contributivo*): an immutable snapshot of the payment, the
    parcel and owner, and what the payment paid (¶9: it shows the O&M levy and the credit)."""

    office = models.ForeignKey(Office, on_delete=models.PROTECT, related_name="receipts")
    fiscal_year = models.CharField(max_length=9)
    number = models.PositiveIntegerField()
    payment = models.OneToOneField(Payment, on_delete=models.PROTECT, related_name="receipt")
    snapshot = models.JSONField()
    issued_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-issued_at"]
        constraints = [models.UniqueConstraint(fields=["office", "fiscal_year", "number"], name="receipt_number_unique")]
        # The landowner's receipts are the ones issued to their owner key (the snapshot's, not today's owner's).
        indexes = [models.Index(models.F("snapshot__owner_key"), name="receipt_snapshot_owner_key")]
        triggers = APPEND_ONLY

    @property
    def display_number(self) -> str:
        return f"{self.office.code}-{self.fiscal_year}-{self.number:06d}"

    def delete(self, *args, **kwargs):
        raise PermissionError("receipts are never deleted; void the payment instead")


class LedgerEntry(models.Model):
    """One append-only line of a parcel's account. Debits raise what is owed, credits lower it."""

    class Kind(models.TextChoices):
        CHARGE = "charge", _("Cargo")
        SURCHARGE = "surcharge", _("Recargo")
        PAYMENT = "payment", _("Pago")
        VOID = "void", _("Anulación de pago")
        SURCHARGE_VOID = "surcharge_void", _("Recargo revertido")
        REFUND = "refund", _("Reembolso")
        CORRECTION = "correction", _("Corrección a favor")
        GIVE_BACK = "give_back", _("Recargo devuelto")
        CREDIT_APPLIED = "credit_applied", _("Recargo pagado con crédito")
        # Issue 17: what a void reverses of later entries that moved the voided payment's money
        GIVE_BACK_VOID = "give_back_void", _("Recargo devuelto revertido por anulación")
        CREDIT_APPLIED_VOID = "credit_app_void", _("Crédito aplicado revertido por anulación")
        REFUND_CHARGED = "refund_charged", _("Reembolso cobrado por anulación")
        REFUND_VOID = "refund_void", _("Reembolso sacado del crédito por anulación")

    parcel = models.ForeignKey("parcels.Parcel", on_delete=models.PROTECT, related_name="ledger")
    entry_date = models.DateField()
    kind = models.CharField(max_length=16, choices=Kind.choices)
    debit = money_field(_("débito"), default=0)
    credit = money_field(_("crédito"), default=0)
    charge = models.ForeignKey(Charge, on_delete=models.PROTECT, null=True, blank=True, related_name="+")
    payment = models.ForeignKey(Payment, on_delete=models.PROTECT, null=True, blank=True, related_name="+")
    refund = models.ForeignKey(Refund, on_delete=models.PROTECT, null=True, blank=True, related_name="+")
    description = models.CharField(max_length=200)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["entry_date", "id"]
        constraints = [
            models.CheckConstraint(condition=Q(debit__gte=0) & Q(credit__gte=0), name="ledger_positive"),
            models.CheckConstraint(condition=(Q(debit=0) & Q(credit__gt=0)) | (Q(credit=0) & Q(debit__gt=0)), name="ledger_one_side"),
        ]
        indexes = [models.Index(fields=["parcel", "entry_date"])]
        triggers = APPEND_ONLY


class DayClose(models.Model):
    """End of day at an office: counted cash and checks against the day's receipts; once closed
    by a supervisor that day's payments are voided only with a new, dated reversal."""

    office = models.ForeignKey(Office, on_delete=models.PROTECT, related_name="closes")
    day = models.DateField()
    counted_cash = money_field(_("efectivo contado"))
    counted_checks = money_field(_("cheques contados"))
    expected_cash = money_field(_("efectivo según recibos"))
    expected_checks = money_field(_("cheques según recibos"))
    # Why the drawer did not match the receipts; required when cash or checks are over or short.
    explanation = models.TextField(_("explicación del sobrante o faltante"), blank=True, default="")
    closed_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    closed_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["office", "day"], name="one_close_per_office_day")]
        triggers = [*APPEND_ONLY, DAY_CLOSE_GUARD]


class DocumentSeries(models.Model):
    """Gapless numbers for certificates and seizure notices, per kind and year."""

    kind = models.CharField(max_length=20)
    year = models.PositiveSmallIntegerField()
    last_number = models.PositiveIntegerField(default=0)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["kind", "year"], name="one_document_series")]
        triggers = [NO_TRUNCATE]  # emptied, the numbering would start again at 1


class DebtCertificate(models.Model):
    """A debt certificate (*certificación de deuda*) for a parcel as of a date, what a notary asks
    for when land is sold. Numbered, never changed; a later one for the parcel supersedes it."""

    number = models.CharField(max_length=20, unique=True)
    parcel = models.ForeignKey("parcels.Parcel", on_delete=models.PROTECT, related_name="certificates")
    as_of = models.DateField()
    snapshot = models.JSONField()
    supersedes = models.OneToOneField("self", on_delete=models.PROTECT, null=True, blank=True, related_name="superseded_by")
    issued_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    issued_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-issued_at"]
        triggers = APPEND_ONLY


class SeizureCase(models.Model):
    """The seizure (*embargo*) procedure for a delinquent account (¶14), step by step."""

    class Status(models.TextChoices):
        OPEN = "open", _("En proceso")
        PAID = "paid", _("Detenido: deuda pagada")

    parcel = models.ForeignKey("parcels.Parcel", on_delete=models.PROTECT, related_name="seizures")
    status = models.CharField(max_length=6, choices=Status.choices, default=Status.OPEN)
    opened_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    opened_at = models.DateTimeField(auto_now_add=True)
    closed_on = models.DateField(null=True, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["parcel"], condition=Q(status="open"), name="one_open_seizure")]


class SeizureStep(models.Model):
    """One numbered, dated, stored notice of the seizure procedure (¶14)."""

    class Kind(models.TextChoices):
        NOTICE = "notice", _("Notificación de embargo (plazo de 30 días)")
        CERTIFICATE = "certificate", _("Certificación de embargo")
        AUCTION = "auction", _("Aviso de subasta")

    case = models.ForeignKey(SeizureCase, on_delete=models.PROTECT, related_name="steps")
    kind = models.CharField(max_length=12, choices=Kind.choices)
    number = models.CharField(max_length=20, unique=True)
    issued_on = models.DateField()
    term_ends = models.DateField(null=True, blank=True)
    debt = models.JSONField()
    pdf = DocumentFileField()  # in the document store (``billing.storage``), written once
    sha256 = models.CharField(max_length=64, default="")  # of ``pdf`` as issued (``verify_books``)
    # printed with its QR code; the public page ``/verificar/<code>/`` finds the step by it
    # (``billing.documents``). Steps issued before notices had one have none.
    verification_code = models.CharField(max_length=80, unique=True, null=True, blank=True)
    issued_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    issued_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["issued_on", "id"]
        constraints = [
            models.UniqueConstraint(fields=["case", "kind"], name="one_step_of_each_kind"),
            models.CheckConstraint(condition=Q(sha256__regex=r"^[0-9a-f]{64}$"), name="seizure_step_has_its_hash"),
            models.CheckConstraint(condition=~Q(pdf=""), name="seizure_step_has_its_file"),
        ]
        triggers = APPEND_ONLY


class Bill(models.Model):
    """A bill (*aviso de contribución*) for one installment, stating its amounts as of its issue
    date (the statement has the current amount). Only charges of a finalized roll exist, so a
    draft can never be billed. Immutable; a new bill for the same charge is a new document.

    A roll line whose credit covers its whole levy (net 0.00) has no installment to bill; it gets
    once a year, at finalization, a *zero notice*: a bill with no charge and its ``roll_line``,
    showing the levy imposed and the credit with nothing to pay (¶9)."""

    number = models.CharField(max_length=24, unique=True)
    charge = models.ForeignKey(Charge, on_delete=models.PROTECT, null=True, blank=True, related_name="bills")
    roll_line = models.ForeignKey("levy.RollLine", on_delete=models.PROTECT, null=True, blank=True, related_name="zero_notices")
    parcel = models.ForeignKey("parcels.Parcel", on_delete=models.PROTECT, related_name="bills")
    issued_on = models.DateField()
    snapshot = models.JSONField()
    batch = models.ForeignKey("BillBatch", on_delete=models.PROTECT, null=True, blank=True, related_name="bills")
    issued_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    issued_at = models.DateTimeField(auto_now_add=True)
    # Issue 20: numbered and frozen first, its PDF rendered afterwards by the bulk-printing workers
    # (a batch's bills, ¶9 zero notices of a finalized roll). Until then it has no document ("being
    # printed"), and its link of the chain does not hash the PDF (``billing.chain``).
    printed_later = models.BooleanField(default=False)

    class Meta:
        ordering = ["number"]
        constraints = [
            # one bill per charge in a batch, so a restarted batch never bills twice
            models.UniqueConstraint(fields=["batch", "charge"], condition=Q(batch__isnull=False), name="one_bill_per_charge_in_batch"),
            # ¶9: a bill is for an installment, or it is the zero notice of a roll line: never both, never neither
            models.CheckConstraint(condition=Q(charge__isnull=False) ^ Q(roll_line__isnull=False), name="bill_is_for_a_charge_or_a_line"),
            models.UniqueConstraint(fields=["roll_line"], condition=Q(roll_line__isnull=False), name="one_zero_notice_per_roll_line"),
            # one aviso per installment, issued once: on demand (portal, counter) or in bulk
            # printing, whichever comes first; the other reuses it (services.bills)
            models.UniqueConstraint(fields=["charge"], condition=Q(charge__isnull=False), name="one_bill_per_installment"),
        ]
        triggers = APPEND_ONLY


class BillBatch(models.Model):
    """Bulk printing of a semester's bills (or a filtered set), made by a background job in merged
    PDF parts of at most a few hundred pages; restartable without duplicating work.

    Issue 20: the job numbers every bill in one transaction, then one task per part renders and
    merges it (``billing.bulk``); the last part to finish sets ``finished_at``. ``number`` 0 is
    the batch of a roll's ¶9 zero notices, numbered at finalization and printed the same way."""

    ZERO_NOTICES = 0  # ``number`` of the batch of ¶9 zero notices
    fiscal_year = models.ForeignKey("levy.FiscalYear", on_delete=models.PROTECT, related_name="+")
    number = models.PositiveSmallIntegerField()  # installment 1 (July) or 2 (January); 0: ¶9 zero notices
    part_pages = models.PositiveIntegerField(null=True, blank=True)  # bills a part holds; empty: ``bulk.PART_PAGES``
    parts_planned = models.PositiveIntegerField(null=True, blank=True)  # merged (paper) parts, once numbered
    finished_at = models.DateTimeField(null=True, blank=True)  # every bill rendered, every part merged
    filters = models.JSONField(default=dict, blank=True)
    job = models.ForeignKey("parcels.Job", on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)


class BillBatchPart(models.Model):
    """One merged PDF of a batch (bills ``first``..``last`` in number order). Written once: the
    row is append-only (a trigger refuses UPDATE, DELETE and TRUNCATE), the file is stored through
    a storage that never overwrites (``billing.storage``), and the parts' hashes are in every
    checkpoint and signed anchor (``billing.anchors``)."""

    batch = models.ForeignKey(BillBatch, on_delete=models.CASCADE, related_name="parts")
    index = models.PositiveIntegerField()
    pdf = models.FileField(upload_to="bill-batches/%Y/", storage=parts_storage)
    pages = models.PositiveIntegerField()
    sha256 = models.CharField(max_length=64, default="")  # of the file as merged (``verify_books``)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["index"]
        constraints = [models.UniqueConstraint(fields=["batch", "index"], name="one_part_per_index")]
        triggers = APPEND_ONLY


class BillEmail(models.Model):
    """Issue 19: one e-mail sending an issued bill's link (its stored PDF) to an owner who chose
    e-mail delivery, as bulk printing sends it after the batch has rendered: every attempt is a
    row (sent or failed, with the error), never changed; at most one sent per bill (a later run
    of the batch retries only the failed ones)."""

    class Status(models.TextChoices):
        SENT = "sent", _("Enviado")
        FAILED = "failed", _("Falló")

    bill = models.ForeignKey(Bill, on_delete=models.PROTECT, related_name="emails")
    to = models.EmailField()
    status = models.CharField(max_length=6, choices=Status.choices)
    error = models.CharField(max_length=300, blank=True)
    at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["at", "id"]
        constraints = [
            models.UniqueConstraint(fields=["bill"], condition=Q(status="sent"), name="one_sent_email_per_bill"),
            models.CheckConstraint(condition=Q(status__in=["sent", "failed"]), name="bill_email_status_valid"),
        ]
        triggers = APPEND_ONLY


class AccountStatement(models.Model):
    """¶12, ¶13: a numbered *estado de cuenta* (``EC-<year>-000001``): the parcel's statement as
    of ``as_of`` (``accounts.statement(...).to_json()``), frozen when it was asked for (from the
    portal, the counter or the public "¿cuánto debo?" page). The bill points to it for today's
    amount. Immutable; its PDF is an ``IssuedDocument``."""

    class Channel(models.TextChoices):
        PORTAL = "portal", _("Portal del agricultor")
        COUNTER = "counter", _("Colecturía")
        PUBLIC = "public", _("Consulta pública")

    number = models.CharField(max_length=24, unique=True)
    parcel = models.ForeignKey("parcels.Parcel", on_delete=models.PROTECT, related_name="account_statements")
    as_of = models.DateField()
    snapshot = models.JSONField()
    channel = models.CharField(max_length=10, choices=Channel.choices)
    issued_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, null=True, blank=True, related_name="+")
    issued_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["number"]
        constraints = [
            # the public page has no user; the portal and the counter name theirs
            models.CheckConstraint(condition=Q(channel="public") | Q(issued_by__isnull=False), name="statement_names_its_user"),
        ]
        triggers = APPEND_ONLY


class IssuedDocument(models.Model):
    """Every issued PDF (receipt, bill, debt certificate, estado), its file written once and
    served as stored: never regenerated from live data (WeasyPrint versions render differently).
    ``verification_code`` is signed (``billing.documents``) so it cannot be guessed; the public
    verification page looks documents up by it."""

    class Kind(models.TextChoices):
        RECEIPT = "receipt", _("Recibo contributivo")
        BILL = "bill", _("Aviso de contribución")
        CERTIFICATE = "certificate", _("Certificación de deuda")
        STATEMENT = "statement", _("Estado de cuenta")

    kind = models.CharField(max_length=12, choices=Kind.choices)
    number = models.CharField(max_length=32)
    parcel = models.ForeignKey("parcels.Parcel", on_delete=models.PROTECT, related_name="documents")
    receipt = models.OneToOneField(Receipt, on_delete=models.PROTECT, null=True, blank=True, related_name="document")
    bill = models.OneToOneField(Bill, on_delete=models.PROTECT, null=True, blank=True, related_name="document")
    certificate = models.OneToOneField(DebtCertificate, on_delete=models.PROTECT, null=True, blank=True, related_name="document")
    statement = models.OneToOneField(AccountStatement, on_delete=models.PROTECT, null=True, blank=True, related_name="document")
    verification_code = models.CharField(max_length=80, unique=True)
    # The PDF in the document store (``STORAGES["documents"]``, ``billing.storage``), written once;
    # the row keeps its SHA-256 (in the chain too) and ``verify_books`` re-hashes the file.
    pdf = DocumentFileField()
    sha256 = models.CharField(max_length=64)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["kind", "number"], name="one_document_per_number"),
            models.CheckConstraint(condition=~Q(pdf=""), name="document_has_its_file"),
            models.CheckConstraint(
                condition=(Q(kind="receipt") & Q(receipt__isnull=False)) | (Q(kind="bill") & Q(bill__isnull=False))
                | (Q(kind="certificate") & Q(certificate__isnull=False)) | (Q(kind="statement") & Q(statement__isnull=False)),
                name="document_points_at_its_source",
            ),
        ]
        triggers = APPEND_ONLY


class BooksCheck(models.Model):
    """One run of the books' invariants (``billing.books``): by the nightly task or by
    ``manage.py verify_books``, with what differed and the control totals read in the same
    snapshot. Append-only (a trigger refuses UPDATE and DELETE): the page for auditors shows the
    runs as they were recorded."""

    class Trigger(models.TextChoices):
        NIGHTLY = "nightly", _("Tarea nocturna")
        COMMAND = "command", _("Comando verify_books")

    started_at = models.DateTimeField()
    finished_at = models.DateTimeField()
    passed = models.BooleanField()
    # [{"check": "ledger", "message": "..."}], in the order billing.books found them
    findings = models.JSONField(default=list, blank=True)
    # [[name, value], ...] in control_totals()'s order (jsonb would not keep an object's key order)
    totals = models.JSONField(default=list, blank=True)
    compared_with = models.CharField(max_length=255, blank=True)  # verify_books --compare FILE: its name
    trigger = models.CharField(max_length=10, choices=Trigger.choices)
    acting_user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, null=True, blank=True, related_name="+")

    class Meta:
        ordering = ["-started_at", "-pk"]
        indexes = [models.Index(fields=["-started_at", "-id"], name="bookscheck_latest_first")]
        constraints = [
            models.CheckConstraint(condition=Q(passed=True, findings=[]) | (Q(passed=False) & ~Q(findings=[])),
                                   name="bookscheck_passed_iff_no_findings"),
            models.CheckConstraint(condition=Q(finished_at__gte=models.F("started_at")), name="bookscheck_finished_after_start"),
        ]
        triggers = APPEND_ONLY


# --- The ledger as the one truth (issue 11): stored allocations and dated entries -----------------
#
# Each payment's allocation is stored when its receipt is issued and never derived again; a later
# event that changes what is owed (a correction, a closure) posts its own dated entry here. The
# arithmetic is billing.rules (correction_plan, give_back, apply_freed_money, ledger_state,
# allocate). Every table is append-only: a void or a new entry corrects, never an UPDATE.


class Source(models.TextChoices):
    """Why money moved between a charge and the account's credit (billing.rules.SOURCES)."""

    CORRECTION = "correction", _("Corrección del padrón")
    CLOSURE = "closure", _("Cierre de oficinas")
    PAYMENT = "payment", _("Crédito de un pago")


class PaymentAllocation(models.Model):
    """¶12, ¶13: the part of a payment stored against one charge, surcharge first then principal,
    as its receipt printed it. A row without a charge is what the payment left on the account's
    credit (``surcharge`` 0). A void reverses exactly these rows as of the payment's date."""

    payment = models.ForeignKey(Payment, on_delete=models.PROTECT, related_name="allocations")
    charge = models.ForeignKey(Charge, on_delete=models.PROTECT, null=True, blank=True, related_name="allocations")
    surcharge = money_field(_("recargo"), default=0)
    principal = money_field(_("principal"), default=0)

    class Meta:
        ordering = ["payment", "id"]
        constraints = [
            models.CheckConstraint(condition=Q(surcharge__gte=0) & Q(principal__gte=0), name="allocation_not_negative"),
            models.CheckConstraint(condition=Q(surcharge__gt=0) | Q(principal__gt=0), name="allocation_not_empty"),
            models.CheckConstraint(condition=Q(charge__isnull=False) | Q(surcharge=0), name="allocation_credit_has_no_surcharge"),
            models.UniqueConstraint(fields=["payment", "charge"], name="one_allocation_per_payment_charge"),
            models.UniqueConstraint(fields=["payment"], condition=Q(charge__isnull=True), name="one_credit_part_per_payment"),
        ]
        triggers = APPEND_ONLY

    @property
    def amount(self):
        return self.surcharge + self.principal


class CorrectionCharge(models.Model):
    """¶9, ¶12: a charge a roll correction raised, one per half that rose (``Charge.correction``
    is one-to-one and predates corrections that raise both halves)."""

    correction = models.ForeignKey("levy.RollCorrection", on_delete=models.PROTECT, related_name="correction_charges")
    charge = models.OneToOneField(Charge, on_delete=models.PROTECT, related_name="correction_link")
    number = models.PositiveSmallIntegerField(_("plazo"))  # the half it raises: 1 = July, 2 = January

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["correction", "number"], name="one_correction_charge_per_half"),
            models.CheckConstraint(condition=Q(number__in=[1, 2]), name="correction_charge_half"),
        ]
        triggers = APPEND_ONLY


class PrincipalAdjustment(models.Model):
    """¶9, ¶11: a fall of a half: a charge's principal lowered by ``amount`` by a correction,
    recorded on ``entry_date`` and effective from the charge's own due date (that part was never
    owed). Earlier correction charges of the half are lowered first, newest first."""

    charge = models.ForeignKey(Charge, on_delete=models.PROTECT, related_name="adjustments")
    correction = models.ForeignKey("levy.RollCorrection", on_delete=models.PROTECT, related_name="adjustments")
    amount = money_field(_("rebaja"))
    entry_date = models.DateField(_("fecha"))
    effective_from = models.DateField(_("efectiva desde"))
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["entry_date", "id"]
        constraints = [
            models.CheckConstraint(condition=Q(amount__gt=0), name="adjustment_positive"),
            models.UniqueConstraint(fields=["correction", "charge"], name="one_adjustment_per_correction_charge"),
        ]
        indexes = [models.Index(fields=["charge", "entry_date"])]
        triggers = APPEND_ONLY


class LastDayMove(models.Model):
    """¶12: an office closure recorded on ``entry_date`` moved a charge's last day to pay forward
    to ``last_day`` (whenever it was recorded); issued bills keep their printed date."""

    charge = models.ForeignKey(Charge, on_delete=models.PROTECT, related_name="last_day_moves")
    closure = models.ForeignKey(OfficeClosure, on_delete=models.PROTECT, related_name="last_day_moves")
    last_day = models.DateField(_("nuevo último día para pagar"))
    entry_date = models.DateField(_("fecha"))
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["entry_date", "id"]
        constraints = [models.UniqueConstraint(fields=["charge", "closure"], name="one_move_per_charge_closure")]
        triggers = APPEND_ONLY


class GiveBack(models.Model):
    """¶9, ¶12: money released from a charge to the account's credit on ``entry_date``: surcharge
    paid beyond what is owed after a lowering or a moved last day (*recargo devuelto*) and
    principal paid beyond the lowered principal. Names the correction or closure; the receipts
    already issued are not touched."""

    parcel = models.ForeignKey("parcels.Parcel", on_delete=models.PROTECT, related_name="give_backs")
    charge = models.ForeignKey(Charge, on_delete=models.PROTECT, related_name="give_backs")
    surcharge = money_field(_("recargo devuelto"), default=0)
    principal = money_field(_("principal liberado"), default=0)
    source = models.CharField(max_length=12, choices=Source.choices)
    correction = models.ForeignKey("levy.RollCorrection", on_delete=models.PROTECT, null=True, blank=True, related_name="+")
    closure = models.ForeignKey(OfficeClosure, on_delete=models.PROTECT, null=True, blank=True, related_name="+")
    entry_date = models.DateField(_("fecha"))
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["entry_date", "id"]
        constraints = [
            models.CheckConstraint(condition=Q(surcharge__gte=0) & Q(principal__gte=0), name="give_back_not_negative"),
            models.CheckConstraint(condition=Q(surcharge__gt=0) | Q(principal__gt=0), name="give_back_not_empty"),
            models.CheckConstraint(
                condition=(Q(source="correction") & Q(correction__isnull=False) & Q(closure__isnull=True))
                | (Q(source="closure") & Q(closure__isnull=False) & Q(correction__isnull=True)),
                name="give_back_names_its_cause",
            ),
        ]
        indexes = [models.Index(fields=["parcel", "entry_date"])]
        triggers = APPEND_ONLY


class CreditApplication(models.Model):
    """¶12, ¶13: a dated *crédito aplicado*: credit on the account (money a correction or closure
    freed, or a payment left) paid to one open charge, surcharge first then principal, in the
    order payments use. Only what no charge takes stays refundable."""

    parcel = models.ForeignKey("parcels.Parcel", on_delete=models.PROTECT, related_name="credit_applications")
    charge = models.ForeignKey(Charge, on_delete=models.PROTECT, related_name="credit_applications")
    surcharge = money_field(_("a recargo"), default=0)
    principal = money_field(_("a principal"), default=0)
    source = models.CharField(max_length=12, choices=Source.choices)
    correction = models.ForeignKey("levy.RollCorrection", on_delete=models.PROTECT, null=True, blank=True, related_name="+")
    closure = models.ForeignKey(OfficeClosure, on_delete=models.PROTECT, null=True, blank=True, related_name="+")
    payment = models.ForeignKey(Payment, on_delete=models.PROTECT, null=True, blank=True, related_name="+")
    entry_date = models.DateField(_("fecha"))
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["entry_date", "id"]
        constraints = [
            models.CheckConstraint(condition=Q(surcharge__gte=0) & Q(principal__gte=0), name="credit_application_not_negative"),
            models.CheckConstraint(condition=Q(surcharge__gt=0) | Q(principal__gt=0), name="credit_application_not_empty"),
            models.CheckConstraint(
                condition=(Q(source="correction") & Q(correction__isnull=False))
                | (Q(source="closure") & Q(closure__isnull=False))
                | (Q(source="payment") & Q(payment__isnull=False)),
                name="credit_application_names_its_source",
            ),
        ]
        indexes = [models.Index(fields=["parcel", "entry_date"])]
        triggers = APPEND_ONLY


class VoidReversal(models.Model):
    """¶13 (issue 17): part of a later entry that moved a voided payment's money, reversed by the
    void as a new entry dated the void's day (``billing.rules.Reversal``): a give-back of
    ``charge`` (its surcharge and principal return to the charge as paid), a *crédito aplicado*
    to ``charge`` (it returns to the credit), or a refund already paid out, which becomes
    ``charge``, a charge of kind ``void_refund`` due at once. The reversed rows stay as recorded."""

    class Kind(models.TextChoices):
        GIVE_BACK = "give_back", _("Recargo devuelto revertido")
        CREDIT_APPLIED = "credit_applied", _("Crédito aplicado revertido")
        REFUND = "refund", _("Reembolso convertido en cargo")

    void = models.ForeignKey(PaymentVoid, on_delete=models.PROTECT, related_name="reversals")
    parcel = models.ForeignKey("parcels.Parcel", on_delete=models.PROTECT, related_name="void_reversals")
    kind = models.CharField(max_length=16, choices=Kind.choices)
    give_back = models.ForeignKey(GiveBack, on_delete=models.PROTECT, null=True, blank=True, related_name="reversals")
    credit_application = models.ForeignKey(CreditApplication, on_delete=models.PROTECT, null=True, blank=True,
                                           related_name="reversals")
    refund = models.ForeignKey(Refund, on_delete=models.PROTECT, null=True, blank=True, related_name="reversals")
    charge = models.ForeignKey(Charge, on_delete=models.PROTECT, related_name="void_reversals")
    surcharge = money_field(_("recargo"), default=0)
    principal = money_field(_("principal"), default=0)
    entry_date = models.DateField(_("fecha"))
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["entry_date", "id"]
        constraints = [
            models.CheckConstraint(condition=Q(surcharge__gte=0) & Q(principal__gte=0), name="void_reversal_not_negative"),
            models.CheckConstraint(condition=Q(surcharge__gt=0) | Q(principal__gt=0), name="void_reversal_not_empty"),
            models.CheckConstraint(
                condition=(Q(kind="give_back") & Q(give_back__isnull=False) & Q(credit_application__isnull=True)
                           & Q(refund__isnull=True))
                | (Q(kind="credit_applied") & Q(credit_application__isnull=False) & Q(give_back__isnull=True)
                   & Q(refund__isnull=True))
                | (Q(kind="refund") & Q(refund__isnull=False) & Q(give_back__isnull=True)
                   & Q(credit_application__isnull=True) & Q(surcharge=0)),
                name="void_reversal_names_what_it_reverses",
            ),
            models.UniqueConstraint(fields=["charge"], condition=Q(kind="refund"), name="one_refund_reversal_per_charge"),
        ]
        indexes = [models.Index(fields=["parcel", "entry_date"])]
        triggers = APPEND_ONLY


class BooksCheckpoint(models.Model):
    """The control totals of the records that existed when a passing ``BooksCheck`` ran
    (``billing.services.books_checks.checkpoint_record``): ``marks`` says which rows (the highest id of each table
    issued before the check, the length and head hash of each chain); ``totals`` their figures.
    Records are append-only, so every later check must find the same totals for the same marks
    (``billing.books.check_checkpoint``). Append-only."""

    # DO_NOTHING: both rows are append-only, and the trigger (not Django) refuses the delete
    books_check = models.OneToOneField(BooksCheck, on_delete=models.DO_NOTHING, related_name="checkpoint")
    marks = models.JSONField()
    totals = models.JSONField()  # [[name, value], ...] in billing.books.checkpoint_totals()'s order
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-pk"]
        triggers = APPEND_ONLY


# --- Bank payment files (issue 19): payments that do not come through the counter ---------------


class BankFile(models.Model):
    """¶13: one payment file a collecting bank (``Office`` of kind ``bank``) sent, as imported by
    ``billing.services.bank.bank_file_import``: its name and SHA-256 as received, who imported it
    and the counts and sums of its lines' outcomes at import (exceptions resolved later keep
    their own records, ``BankLineResolution``). Append-only."""

    bank = models.ForeignKey(Office, on_delete=models.PROTECT, related_name="bank_files")
    original_name = models.CharField(_("archivo"), max_length=255)
    sha256 = models.CharField(max_length=64)
    imported_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    imported_at = models.DateTimeField(auto_now_add=True)
    line_count = models.PositiveIntegerField(_("líneas"))
    applied_count = models.PositiveIntegerField(_("aplicadas"))
    applied_total = money_field(_("total aplicado"))
    exception_count = models.PositiveIntegerField(_("excepciones"))
    exception_total = money_field(_("total en excepciones"))
    already_count = models.PositiveIntegerField(_("ya aplicadas"))
    returned_count = models.PositiveIntegerField(_("devueltas"))
    returned_total = money_field(_("total devuelto"))

    class Meta:
        ordering = ["-imported_at", "-id"]
        constraints = [
            models.CheckConstraint(condition=Q(sha256__regex=r"^[0-9a-f]{64}$"), name="bank_file_has_its_hash"),
            models.CheckConstraint(
                condition=Q(line_count=models.F("applied_count") + models.F("exception_count") + models.F("already_count")
                            + models.F("returned_count")),
                name="bank_file_counts_add_up",
            ),
        ]
        triggers = APPEND_ONLY


class BankFileLine(models.Model):
    """One line of a bank file and what the import did with it (``outcome``): a payment applied
    (``payment``, its receipt in the bank's series), an exception for a supervisor
    (``exception_reason``), a line already imported from an earlier file (nothing new), or a
    return that voided the payment of ``original_trace_number`` (``payment``, now voided).
    ``(bank, trace_number)`` is the idempotency key: one line of each trace number is recorded
    per bank besides the "already applied" repeats. Append-only; a resolution is a
    ``BankLineResolution``."""

    class Kind(models.TextChoices):
        PAYMENT = "payment", _("Pago")
        RETURN = "return", _("Devolución")

    class Outcome(models.TextChoices):
        APPLIED = "applied", _("Aplicado")
        EXCEPTION = "exception", _("Excepción")
        ALREADY = "already_applied", _("Ya aplicado")
        RETURNED = "returned", _("Devuelto (pago anulado)")

    file = models.ForeignKey(BankFile, on_delete=models.PROTECT, related_name="lines")
    bank = models.ForeignKey(Office, on_delete=models.PROTECT, related_name="+")  # the file's, for the key below
    line_number = models.PositiveIntegerField(_("línea"))
    trace_number = models.CharField(_("número de rastreo"), max_length=40)
    value_date = models.DateField(_("fecha valor"))
    amount = money_field(_("cantidad"))
    reference = models.CharField(_("referencia"), max_length=40, blank=True)
    payer_name = models.CharField(_("pagador"), max_length=200, blank=True)
    kind = models.CharField(_("tipo"), max_length=8, choices=Kind.choices)
    original_trace_number = models.CharField(_("rastreo original"), max_length=40, blank=True)
    return_reason = models.CharField(_("razón de la devolución"), max_length=120, blank=True)
    outcome = models.CharField(_("resultado"), max_length=16, choices=Outcome.choices)
    parcel = models.ForeignKey("parcels.Parcel", on_delete=models.PROTECT, null=True, blank=True, related_name="+")
    payment = models.ForeignKey(Payment, on_delete=models.PROTECT, null=True, blank=True, related_name="bank_lines")
    exception_reason = models.CharField(_("razón de la excepción"), max_length=300, blank=True)

    class Meta:
        ordering = ["file", "line_number"]
        constraints = [
            models.UniqueConstraint(fields=["bank", "trace_number"], condition=~Q(outcome="already_applied"),
                                    name="one_bank_line_per_trace"),
            models.UniqueConstraint(fields=["file", "line_number"], name="one_bank_line_per_line_number"),
            models.CheckConstraint(condition=Q(amount__gt=0), name="bank_line_positive"),
            models.CheckConstraint(condition=Q(outcome="exception") ^ Q(exception_reason=""), name="bank_line_exception_has_reason"),
            models.CheckConstraint(condition=~Q(outcome__in=["applied", "returned"]) | Q(payment__isnull=False),
                                   name="bank_line_applied_names_its_payment"),
            models.CheckConstraint(condition=Q(kind="payment") | ~Q(original_trace_number=""), name="bank_return_names_original"),
        ]
        indexes = [models.Index(fields=["bank", "original_trace_number"])]
        triggers = APPEND_ONLY


class BankLineResolution(models.Model):
    """A supervisor's resolution of an exception line (who and when): applied to a parcel
    (``payment``, posted through the counter's own posting path), kept as unapplied funds (held,
    on no account), returned to the payer, or, for a return line that matched no payment,
    noted. One per line; append-only."""

    class Action(models.TextChoices):
        APPLY = "apply", _("Aplicada a un predio")
        UNAPPLIED = "unapplied", _("Fondos sin aplicar")
        RETURN = "return", _("Devuelta al pagador")
        NOTED = "noted", _("Anotada (nada que anular)")

    line = models.OneToOneField(BankFileLine, on_delete=models.PROTECT, related_name="resolution")
    action = models.CharField(_("resolución"), max_length=10, choices=Action.choices)
    parcel = models.ForeignKey("parcels.Parcel", on_delete=models.PROTECT, null=True, blank=True, related_name="+")
    payment = models.OneToOneField(Payment, on_delete=models.PROTECT, null=True, blank=True, related_name="bank_resolution")
    note = models.CharField(_("nota"), max_length=200, blank=True)
    resolved_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    resolved_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["resolved_at", "id"]
        constraints = [
            models.CheckConstraint(condition=Q(action="apply") ^ Q(payment__isnull=True), name="bank_resolution_apply_has_payment"),
        ]
        triggers = APPEND_ONLY
# --- The fund journal for accounting (issue 19) ------------------------------------------------------
#
# What Hacienda's accounting system receives: balanced journals of account lines, each split
# between the reserve fund (¶1(2)) and the Operating Fund (¶2). Written by
# billing.services.journal when a roll is finalized or corrected (accrual) and when an office's
# day is closed or a bank file is applied (collections); a void or a refund dated in a day
# already closed gets a later journal of its own (adjustment), never a change of the closed one.


# Σ debit = Σ credit for the journal of each inserted line, checked at COMMIT (a journal's lines
# are inserted one statement at a time): a journal that does not balance is never committed.
JOURNAL_BALANCES = pgtrigger.Trigger(
    name="journal_balances",
    operation=pgtrigger.Insert,
    when=pgtrigger.After,
    timing=pgtrigger.Deferred,
    func=pgtrigger.Func(
        """
        IF (SELECT sum(debit) IS DISTINCT FROM sum(credit) FROM billing_journalline WHERE journal_id = NEW.journal_id) THEN
            RAISE EXCEPTION 'journal % does not balance: debits and credits differ', NEW.journal_id
                USING ERRCODE = 'check_violation';
        END IF;
        RETURN NULL;
        """
    ),
)


class Journal(models.Model):
    """A dated journal of the fund accounts: ``accrual`` (a roll finalized or corrected: levy
    receivable against levy income), ``collections`` (an office's day closed or a bank file
    applied: cash or bank against what the receipts paid) or ``adjustment`` (a void or a refund
    dated in a day already closed). ``source`` and ``source_id`` name what wrote it (the levy,
    the correction, the day close, the bank file, the void, the refund); ``office`` and ``day``
    the office day a collections or adjustment journal belongs to. Append-only."""

    class Kind(models.TextChoices):
        ACCRUAL = "accrual", _("Devengo")
        COLLECTIONS = "collections", _("Recaudaciones")
        ADJUSTMENT = "adjustment", _("Ajuste")

    class Source(models.TextChoices):
        ROLL_FINALIZE = "roll_finalize", _("Padrón finalizado")
        ROLL_CORRECTION = "roll_correction", _("Corrección del padrón")
        DAY_CLOSE = "day_close", _("Cierre del día")
        BANK_FILE = "bank_file", _("Archivo del banco")
        BANK_EXCEPTION = "bank_exception", _("Excepción del banco aplicada")
        VOID = "void", _("Anulación en un día cerrado")
        REFUND = "refund", _("Reembolso en un día cerrado")

    number = models.CharField(_("número"), max_length=24, unique=True)  # DI-000001: "DI-" and the id
    kind = models.CharField(_("clase"), max_length=12, choices=Kind.choices)
    posted_on = models.DateField(_("fecha contable"))
    source = models.CharField(_("origen"), max_length=16, choices=Source.choices)
    source_id = models.PositiveBigIntegerField(_("id del origen"))
    office = models.ForeignKey(Office, on_delete=models.PROTECT, null=True, blank=True, related_name="journals")
    day = models.DateField(_("día de las recaudaciones"), null=True, blank=True)
    description = models.CharField(_("descripción"), max_length=200)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["posted_on", "id"]
        constraints = [
            # each event is posted once (a second day close or a re-applied bank file writes nothing)
            models.UniqueConstraint(fields=["source", "source_id"], name="one_journal_per_source"),
            models.CheckConstraint(
                condition=(Q(kind="accrual") & Q(source__in=["roll_finalize", "roll_correction"]))
                | (Q(kind="collections") & Q(source__in=["day_close", "bank_file", "bank_exception"]))
                | (Q(kind="adjustment") & Q(source__in=["void", "refund"])),
                name="journal_kind_matches_source",
            ),
        ]
        indexes = [models.Index(fields=["posted_on", "id"]), models.Index(fields=["office", "day"])]
        triggers = APPEND_ONLY

    def __str__(self) -> str:
        return self.number


class JournalLine(models.Model):
    """One line of a journal: an account (``settings.JOURNAL_ACCOUNTS``; the levy receivable
    followed by its fiscal year), the fund (¶1(2) reserve, ¶2 operating, or none: money held for
    landowners), a debit or a credit (both positive, one of them zero) and the numbers of the
    receipts (voided receipts, refunds) it sums. Append-only."""

    class Fund(models.TextChoices):
        RESERVE = "reserve", _("Fondo de reserva ¶1(2)")
        OPERATING = "operating", _("Fondo de Explotación ¶2")
        NONE = "none", _("Sin fondo")

    class Section(models.TextChoices):
        RECEIPTS = "receipts", _("Recibos")
        VOIDS = "voids", _("Anulaciones")
        REFUNDS = "refunds", _("Reembolsos")
        ACCRUAL = "accrual", _("Devengo")
        RECLASS = "reclass", _("Dinero liberado y aplicado")

    journal = models.ForeignKey(Journal, on_delete=models.PROTECT, related_name="lines")
    position = models.PositiveSmallIntegerField()
    section = models.CharField(_("sección"), max_length=8, choices=Section.choices)
    # the key of ``settings.JOURNAL_ACCOUNTS`` the line posts to (``cash``, ``levy_receivable``, ...):
    # ``account`` is its code as exported when posted, and codes may be changed later
    role = models.CharField(_("cuenta (clave)"), max_length=20)
    account = models.CharField(_("cuenta"), max_length=40)
    fund = models.CharField(_("fondo"), max_length=9, choices=Fund.choices)
    debit = models.DecimalField(_("débito"), max_digits=14, decimal_places=2, default=Decimal("0.00"))
    credit = models.DecimalField(_("crédito"), max_digits=14, decimal_places=2, default=Decimal("0.00"))
    receipts = models.JSONField(_("recibos"), default=list, blank=True)  # ["LAJ-2026-2027-000001", ...]

    class Meta:
        ordering = ["journal", "position"]
        constraints = [
            models.UniqueConstraint(fields=["journal", "position"], name="one_journal_line_per_position"),
            models.CheckConstraint(condition=(Q(debit=0) & Q(credit__gt=0)) | (Q(credit=0) & Q(debit__gt=0)),
                                   name="journal_line_one_side"),
        ]
        triggers = [*APPEND_ONLY, JOURNAL_BALANCES]


# Every change of an office's printed details (address, phone, hours, ways to pay) is kept, with
# the acting user (billing.services.offices.office_update); the history is never emptied.
pghistory.track(
    pghistory.InsertEvent(), pghistory.UpdateEvent(), pghistory.DeleteEvent(), model_name="OfficeEvent",
    meta={"triggers": [NO_TRUNCATE]}, **HISTORY,
)(Office)


class ReminderSend(models.Model):
    """Issue 19: the claim of one courtesy e-mail reminder (¶13: a reminder not sent or not read
    never moves a date or waives a surcharge, and it is not the ¶14 notice). At most one of each
    kind per charge and owner (``days_before`` tells the reminders before the last day apart; a
    seizure reminder is one per seizure notice): the unique constraints below are the lock. The
    row is inserted in the same transaction that sends the e-mail and records its attempt
    (``billing.services.reminders``), so a second run, or two workers at once, finds it and sends
    nothing twice. A failed send keeps its claim and is retried by later runs while the reminder
    is still timely (``ReminderAttempt``). Append-only."""

    class Kind(models.TextChoices):
        BEFORE_LAST_DAY = "before", _("Antes del último día para pagar")
        DELINQUENT = "delinquent", _("Primer día de morosidad (¶12)")
        SEIZURE_NOTICE = "seizure", _("Notificación de embargo emitida (¶14)")

    charge = models.ForeignKey(Charge, on_delete=models.PROTECT, related_name="reminders")
    parcel = models.ForeignKey("parcels.Parcel", on_delete=models.PROTECT, related_name="reminders")
    owner = models.ForeignKey("parcels.Owner", on_delete=models.PROTECT, related_name="reminders")
    kind = models.CharField(max_length=10, choices=Kind.choices)
    days_before = models.PositiveSmallIntegerField(default=0)  # BEFORE_LAST_DAY only: N days before the last day
    seizure_step = models.ForeignKey(SeizureStep, on_delete=models.PROTECT, null=True, blank=True, related_name="reminders")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.UniqueConstraint(fields=["charge", "owner", "kind", "days_before"], condition=~Q(kind="seizure"),
                                    name="one_reminder_of_each_kind_per_charge"),
            models.UniqueConstraint(fields=["seizure_step", "owner"], condition=Q(kind="seizure"),
                                    name="one_reminder_per_seizure_notice"),
            models.CheckConstraint(
                condition=(Q(kind="before") & Q(days_before__gt=0) & Q(seizure_step__isnull=True))
                | (Q(kind="delinquent") & Q(days_before=0) & Q(seizure_step__isnull=True))
                | (Q(kind="seizure") & Q(days_before=0) & Q(seizure_step__isnull=False)),
                name="reminder_kind_fields",
            ),
        ]
        indexes = [models.Index(fields=["parcel", "created_at"])]
        triggers = APPEND_ONLY


class ReminderAttempt(models.Model):
    """One try at sending a ``ReminderSend``: to which address, when, and whether the e-mail
    backend took it (``sent``) or refused it (``failed``, with the error's text). Shown on the
    parcel's statement page to staff. Append-only."""

    class Status(models.TextChoices):
        SENT = "sent", _("Enviado")
        FAILED = "failed", _("Falló")

    send = models.ForeignKey(ReminderSend, on_delete=models.PROTECT, related_name="attempts")
    status = models.CharField(max_length=6, choices=Status.choices)
    to_address = models.EmailField()
    language = models.CharField(max_length=2)
    as_of = models.DateField()  # the run's date: the e-mail states the account as of it
    amount = money_field(_("cantidad indicada"))  # what the e-mail asked to pay (¶12, ¶13)
    subject = models.CharField(max_length=250)
    error = models.TextField(blank=True, default="")
    attempted_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-attempted_at", "-id"]
        constraints = [
            models.CheckConstraint(condition=Q(status="sent", error="") | Q(status="failed") & ~Q(error=""),
                                   name="reminder_attempt_failure_has_error"),
        ]
        triggers = APPEND_ONLY


class ReprintLog(models.Model):
    """Issue 19: every COPIA reprint of an issued document (receipt, bill, certificate, estado),
    who printed it, when and from where (``billing.services.reprints.reprint_issue``). The stored
    document never changes (its reprint is stamped at serving time), so this log is how an auditor
    knows how many copies of a receipt or bill went out (the *registro de reimpresiones*).
    Append-only."""

    class Channel(models.TextChoices):
        COUNTER = "counter", _("Colecturía")
        PORTAL = "portal", _("Portal")
        COMMAND = "command", _("Línea de comandos")

    document = models.ForeignKey(IssuedDocument, on_delete=models.PROTECT, related_name="reprints")
    printed_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    printed_on = models.DateField(_("fecha de la reimpresión"))  # the day printed on its COPIA stamp
    printed_at = models.DateTimeField(auto_now_add=True)
    channel = models.CharField(_("desde"), max_length=8, choices=Channel.choices)

    class Meta:
        ordering = ["printed_at", "id"]
        indexes = [models.Index(fields=["printed_on"])]
        triggers = APPEND_ONLY
