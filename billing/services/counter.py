"""¶13: the Collector's counter: payments and their numbered receipts, voids (a bounced check),
refunds of credit and the office's day close."""

from __future__ import annotations

import uuid
from datetime import date, timedelta
from decimal import Decimal, InvalidOperation
from typing import Any

from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import gettext_noop  # ledger and charge descriptions: stored in Spanish, whatever the session

from levy.rules import CENT
from parcels.models import Parcel
from parcels.money import money_text
from parcels.roles import COLLECTOR, SUPERVISOR, has_role

from .. import chain, documents, rules
from ..accounts import (
    Account,
    account_state,
    account_with_payment,
    delinquency_parameters,
    fiscal_year_of,
    line_as_corrected,
    payment_key,
)
from ..errors import BillingError
from ..models import (
    Charge,
    CollectorAssignment,
    DayClose,
    LedgerEntry,
    Office,
    Payment,
    PaymentAllocation,
    Receipt,
    ReceiptSeries,
    Refund,
    RefundRequest,
    SeizureCase,
    charge_names,
)
from ..selectors import day_report
from ..snapshots import ReceiptApplication, ReceiptSnapshot
from ..wording import surcharge_explanation, surcharge_runs
from .journal import adjustment_for_refund, day_close_journal_post
from .numbering import document_number, fiscal_year_for
from .voids import payment_void  # noqa: F401  (moved to services.voids, issue 17; callers still name it here)

ZERO = Decimal("0.00")


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
        if office.is_bank:  # a collecting bank's payments come in its files (services.bank), not at a counter
            raise BillingError(_("%(o)s es un banco agente recaudador: sus pagos llegan en sus archivos, no en el mostrador.")
                               % {"o": office.code})
        return office
    assignment = CollectorAssignment.objects.filter(user=user, office__kind=Office.Kind.COUNTER).select_related("office").first()
    if assignment is not None:
        return assignment.office
    offices = list(Office.objects.filter(kind=Office.Kind.COUNTER)[:2])
    if len(offices) == 1:  # a district with one colecturía needs no assignments
        return offices[0]
    raise BillingError(_("El usuario %(u)s no está asignado a una colecturía.") % {"u": user.username})


@transaction.atomic
def payment_record(
    *, acting_user: Any, parcel: Parcel, amount: Decimal, paid_on: date | None = None, method: str = Payment.Method.CASH,
    reference: str = "", office_code: str | None = None, idempotency_key: str | None = None,
    expected_total_due: Decimal | None = None, tendered: Decimal | None = None, backdate_reason: str = "",
    second_of: int | None = None, ask_if_second: bool = False,
) -> Receipt:
    """¶13: a payment at the Collector's office and its numbered receipt, in one transaction.

    The parcel row is locked, so two collectors paying the same account at once are serialized;
    ``expected_total_due`` (what the counter showed) refuses a payment whose account changed
    meanwhile, and ``idempotency_key`` makes a double-submitted form return the first receipt.
    ``tendered`` (cash only) is what the payer handed over: at least the amount; the change
    (tendered − amount) is stored with it and printed on the receipt.

    ``paid_on`` is today unless given (issue 11, finding 7): never after today; a day before today
    only by a supervisor with a ``backdate_reason`` (``_backdate_refusal``), and the payment is
    then marked back-dated, on its receipt too.

    Issue 17: never into an office day already closed, whatever its date (``closed_day_refusal``);
    a check number the parcel already paid with is refused unless that payment was voided
    (``check_number_refusal``). With ``ask_if_second`` (the counter page and ``billing pay``: a
    person at the counter) the same parcel, amount and form of payment within
    ``SECOND_PAYMENT_WINDOW`` of an earlier payment raises ``SecondPaymentQuestion`` naming it,
    unless ``second_of`` is that payment's id (the collector confirmed a second payment, stored
    on the new payment). Scripted callers (the demo seed, benchmarks, tests) record what they are
    given: the question is for a person who may have pressed Back and sent the form again."""
    if not has_role(acting_user, COLLECTOR, SUPERVISOR):
        raise BillingError(_("El usuario %(u)s no es colector.") % {"u": getattr(acting_user, "username", None)})
    amount = parse_amount(amount)
    if method not in Payment.Method.values:
        raise BillingError(_("Forma de pago desconocida «%(m)s».") % {"m": method})
    change = None
    if tendered is not None:
        if method != Payment.Method.CASH:
            raise BillingError(_("El efectivo recibido solo se anota en los pagos en efectivo."))
        tendered = parse_amount(tendered)
        if tendered < amount:
            raise BillingError(_("El efectivo recibido (%(t)s) es menos que la cantidad a cobrar (%(a)s).")
                               % {"t": money_text(tendered), "a": money_text(amount)})
        change = tendered - amount
    office = office_for(acting_user, office_code)
    key = idempotency_key or uuid.uuid4().hex
    parcel = Parcel.objects.select_for_update().select_related("owner").get(pk=parcel.pk)
    existing = Payment.objects.filter(idempotency_key=key).select_related("receipt").first()
    if existing is not None:
        if existing.parcel_id != parcel.pk or existing.amount.amount != amount:
            raise BillingError(_("Ese formulario ya se usó para otro pago."))
        return existing.receipt
    today = timezone.localdate()
    paid_on = paid_on or today
    refusal = closed_day_refusal(office=office, day=paid_on)
    if refusal:
        raise BillingError(refusal)
    backdate_reason = backdate_reason.strip()
    refusal = _backdate_refusal(acting_user=acting_user, parcel=parcel, office=office, paid_on=paid_on, today=today,
                                reason=backdate_reason)
    if refusal:
        raise BillingError(refusal)
    backdated = paid_on < today
    refusal = check_number_refusal(parcel=parcel, method=method, reference=reference)
    if refusal:
        raise BillingError(refusal)
    earlier = _same_payment_shortly_before(parcel=parcel, amount=amount, method=method) if ask_if_second or second_of else None
    if earlier is not None and second_of != earlier.pk:
        raise SecondPaymentQuestion(earlier)
    before = account_state(parcel=parcel, as_of=paid_on, known_by=None)  # a back-dated payment: the account as known now
    if expected_total_due is not None and before.state.total_due != expected_total_due:
        raise BillingError(
            _("La cuenta cambió mientras se cobraba (ahora se deben %(d)s). Revise antes de cobrar.")
            % {"d": money_text(before.state.total_due)}
        )
    return payment_post(
        acting_user=acting_user, parcel=parcel, office=office, amount=amount, paid_on=paid_on, method=method,
        reference=reference, idempotency_key=key, payer_name=parcel.owner.name, before=before, tendered=tendered,
        change=change, backdated=backdated, backdate_reason=backdate_reason if backdated else "", second_of=earlier,
    )


def payment_post(
    *, acting_user: Any, parcel: Parcel, office: Office, amount: Decimal, paid_on: date, method: str, reference: str,
    idempotency_key: str, payer_name: str, before: Account | None = None, tendered: Decimal | None = None,
    change: Decimal | None = None, backdated: bool = False, backdate_reason: str = "", second_of: Payment | None = None,
) -> Receipt:
    """¶12, ¶13: THE one posting path of money received, the counter's (``payment_record``) and a
    collecting bank's (``services.bank``: a bank file's line, an exception applied to a parcel):
    the payment row, its allocation (oldest charge first, surcharge before principal, stored
    once), its ledger entries, the end of an open seizure case once nothing is due, and the
    numbered receipt in ``office``'s series. The caller has checked who may record it and when,
    and holds the parcel row's lock (``select_for_update``), inside its transaction."""
    if before is None:
        before = account_state(parcel=parcel, as_of=paid_on, known_by=None)
    payment = Payment(
        parcel=parcel, office=office, collector=acting_user, paid_on=paid_on, amount=amount, method=method,
        reference=reference, idempotency_key=idempotency_key, payer_name=payer_name, tendered=tendered, change=change,
        backdated=backdated, backdate_reason=backdate_reason, second_of=second_of,
    )
    payment.full_clean()
    payment.save()
    # ¶12, ¶13: the allocation is made once, on the account as of the payment's date, and stored;
    # the receipt prints exactly these rows and no later event derives it again.
    allocations, to_credit = rules.allocate(state=before.ledger, amount=amount)
    by_key = before.charges
    PaymentAllocation.objects.bulk_create(
        [PaymentAllocation(payment=payment, charge=by_key[a.charge_key], surcharge=a.surcharge, principal=a.principal)
         for a in allocations]
        + ([PaymentAllocation(payment=payment, charge=None, surcharge=ZERO, principal=to_credit)] if to_credit > 0 else [])
    )
    # The account after the payment: the records read for ``before`` plus this payment, replayed
    # in memory (the parcel row is locked: nothing else changed them); a second read of every
    # record was a tenth of a counter payment's time.
    after = account_with_payment(before, rules.StoredPayment(
        key=payment_key(payment.pk), paid_on=paid_on, recorded=payment.created_at,
        allocations=tuple(allocations),
        to_credit=to_credit,
    ))
    mine = [
        rules.Application(payment_key=payment_key(payment.pk), charge_key=a.charge_key, surcharge=a.surcharge,
                          principal=a.principal)
        for a in allocations
    ]
    surcharge = sum((a.surcharge for a in mine), ZERO)
    LedgerEntry.objects.create(parcel=parcel, entry_date=paid_on, kind=LedgerEntry.Kind.PAYMENT, credit=amount,
                               payment=payment, description=gettext_noop("Pago en %(o)s") % {"o": office.code}, created_by=acting_user)
    if surcharge > 0:
        LedgerEntry.objects.create(parcel=parcel, entry_date=paid_on, kind=LedgerEntry.Kind.SURCHARGE, debit=surcharge,
                                   payment=payment, description=gettext_noop("Recargo pagado (¶12)"), created_by=acting_user)
    if after.state.total_due <= 0:
        # ¶14: paying the debt stops the seizure procedure.
        SeizureCase.objects.filter(parcel=parcel, status=SeizureCase.Status.OPEN).update(
            status=SeizureCase.Status.PAID, closed_on=paid_on
        )
    return _receipt_issue(payment=payment, office=office, account=after, applications=mine)


def _backdate_refusal(*, acting_user: Any, parcel: Parcel, office: Office, paid_on: date, today: date, reason: str) -> str:
    """Why a payment cannot carry the date ``paid_on`` (empty when it can), issue 11, finding 7.

    Never after today. Before today only a supervisor records it, with a reason (a closed office
    day is refused before, whatever the date: ``closed_day_refusal``), and never before anything the
    account already records after that day (a payment, a void, a refund, a give-back, a credit
    applied, a correction: their stored allocations were made without it)."""
    day = paid_on.strftime("%d/%m/%Y")
    if paid_on > today:
        return _("La fecha del pago (%(d)s) es posterior a hoy (%(t)s): no se registran pagos con fecha futura.") % {
            "d": day, "t": today.strftime("%d/%m/%Y")}
    if paid_on == today:
        return ""
    if not has_role(acting_user, SUPERVISOR):
        return _("Solo un supervisor registra un pago con fecha anterior a hoy (%(d)s).") % {"d": day}
    if not reason:
        return _("Un pago con fecha anterior a hoy (%(d)s) requiere la razón de la fecha retroactiva.") % {"d": day}
    if len(reason) > Payment._meta.get_field("backdate_reason").max_length:
        return _("La razón de la fecha retroactiva es demasiado larga (hasta 200 caracteres).")
    later = later_entry(parcel=parcel, day=paid_on)
    if later is None:
        return ""
    what = {
        LedgerEntry.Kind.PAYMENT: _("un pago"), LedgerEntry.Kind.SURCHARGE: _("un pago"),
        LedgerEntry.Kind.VOID: _("una anulación de pago"), LedgerEntry.Kind.SURCHARGE_VOID: _("una anulación de pago"),
    }.get(later.kind) or _("un asiento «%(k)s»") % {"k": LedgerEntry.Kind(later.kind).label}
    return _(
        "No se puede registrar un pago con fecha %(d)s: la cuenta del predio %(p)s ya tiene %(what)s con fecha %(l)s, "
        "posterior a ese día. Un pago con fecha retroactiva no puede quedar antes de lo ya registrado."
    ) % {"d": day, "p": parcel.parcel_id, "what": what, "l": later.entry_date.strftime("%d/%m/%Y")}


def later_entry(*, parcel: Parcel, day: date) -> LedgerEntry | None:
    """The latest entry of the parcel's account dated after ``day`` other than a charge (a
    payment, a void, a refund, a give-back, a credit applied, a correction): a payment dated
    ``day`` cannot be recorded before it, since their stored allocations were made without it
    (a back-dated payment at the counter; a bank line's value date, ``services.bank``)."""
    return (LedgerEntry.objects.filter(parcel=parcel, entry_date__gt=day).exclude(kind=LedgerEntry.Kind.CHARGE)
            .order_by("-entry_date", "-id").first())


SECOND_PAYMENT_WINDOW = timedelta(minutes=10)  # issue 17: Back, then resubmit, took the same check twice


class SecondPaymentQuestion(BillingError):
    """The same parcel, amount and form of payment as ``earlier`` (not voided), recorded less than
    ``SECOND_PAYMENT_WINDOW`` ago: recorded only when the collector confirms a second payment."""

    def __init__(self, earlier: Payment) -> None:
        self.earlier = earlier
        receipt = earlier.receipt
        super().__init__(_(
            "El predio %(p)s ya tiene un pago igual de %(a)s (%(m)s) registrado a las %(t)s: recibo %(n)s. "
            "¿Es un segundo pago? Si no lo es, no lo cobre otra vez."
        ) % {"p": earlier.parcel.parcel_id, "a": money_text(earlier.amount.amount), "m": Payment.Method(earlier.method).label,
             "t": timezone.localtime(earlier.created_at).strftime("%H:%M"), "n": receipt.display_number})


def _same_payment_shortly_before(*, parcel: Parcel, amount: Decimal, method: str) -> Payment | None:
    """The latest payment of the parcel with this amount and form, not voided, recorded within
    ``SECOND_PAYMENT_WINDOW`` of now (the recording time: the window is the counter's clock, so
    it is checked here rather than in the database, whose clock the tests cannot move)."""
    since = timezone.now() - SECOND_PAYMENT_WINDOW
    return (Payment.objects.filter(parcel=parcel, amount=amount, method=method, created_at__gte=since, void__isnull=True)
            .select_related("receipt__office", "parcel").order_by("-created_at", "-id").first())


def normalized_check_number(reference: str) -> str:
    """The check number as compared: without spaces, in capitals (the database trigger
    ``one_check_number_per_parcel`` compares the same way)."""
    return "".join(reference.split()).upper()


def check_number_refusal(*, parcel: Parcel, method: str, reference: str) -> str:
    """Issue 17: a check number already recorded for the parcel, and not voided, is not taken
    again (empty when it can be). A bounced check is voided first; its number may then come back."""
    number = normalized_check_number(reference)
    if method != Payment.Method.CHECK or not number:
        return ""
    for payment in (Payment.objects.filter(parcel=parcel, method=Payment.Method.CHECK, void__isnull=True)
                    .select_related("receipt__office").order_by("id")):
        if normalized_check_number(payment.reference) == number:
            return _(
                "El cheque %(c)s ya se registró para el predio %(p)s: recibo %(n)s del %(d)s a las %(t)s. Un cheque no se "
                "cobra dos veces; solo si ese pago se anula (cheque devuelto) se puede registrar otra vez."
            ) % {"c": reference.strip(), "p": parcel.parcel_id, "n": payment.receipt.display_number,
                 "d": timezone.localtime(payment.created_at).strftime("%d/%m/%Y"),
                 "t": timezone.localtime(payment.created_at).strftime("%H:%M")}
    return ""


def closed_day_refusal(*, office: Office, day: date) -> str:
    """Issue 17: why no payment can be dated ``day`` at ``office`` (empty when it can): the day
    was closed, its cash counted without it. Names the close: office, day, supervisor, when."""
    close = DayClose.objects.filter(office=office, day=day).select_related("closed_by", "office").first()
    if close is None:
        return ""
    user = close.closed_by
    closed_at = timezone.localtime(close.closed_at)
    return _(
        "El día %(d)s de la colecturía %(o)s (%(on)s) está cerrado: lo cerró %(s)s el %(cd)s a las %(ct)s. "
        "No se registran pagos en un día cerrado."
    ) % {"d": day.strftime("%d/%m/%Y"), "o": office.code, "on": office.name,
         "s": " ".join(user.get_full_name().split()) or user.get_username(),
         "cd": closed_at.strftime("%d/%m/%Y"), "ct": closed_at.strftime("%H:%M")}


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
    names = charge_names(account.charges[application.charge_key] for application in applications)
    lines = []
    for application in applications:
        charge = account.charges[application.charge_key]
        state = states[application.charge_key]
        # ¶9: the year's levy and credit as they stand, corrections included (the roll line never changes).
        line = line_as_corrected(charge.roll_line) if charge.roll_line else None
        lines.append(ReceiptApplication(
            description=charge.description, fiscal_year=charge.fiscal_year.label, number=charge.number, kind=charge.kind,
            om_charge=line.standing.charge if line else None, credit_percent=line.standing.credit_percent if line else None,
            credit=line.standing.credit if line else None, net=line.standing.net if line else None,
            corrections=line.corrections if line else (),
            principal=state.principal, due_date=state.due, last_day_to_pay=state.last_day, surcharge=application.surcharge,
            surcharge_basis=surcharge_explanation(state, rate), principal_paid=application.principal,
            balance_after=state.balance, surcharge_runs=tuple(tuple(run) for run in surcharge_runs(state, rate)),
            **names[charge.pk],
        ))
    snapshot = ReceiptSnapshot(
        parcel_id=parcel.parcel_id, owner_name=parcel.owner.name, owner_key=parcel.owner.owner_key,
        gravity_acres=parcel.gravity_acres, pumped_acres=parcel.pumped_acres, equivalent_acres=parcel.equivalent_acres,
        office_code=office.code, office_name=office.name, collector=payment.collector.get_username(), paid_on=payment.paid_on,
        collector_name=" ".join(payment.collector.get_full_name().split()),
        amount=payment.amount.amount, method=payment.method, reference=payment.reference, applications=tuple(lines),
        credit_balance=account.state.credit_balance, total_due_after=account.state.total_due,
        total_balance_after=account.state.total_balance,
        tendered=payment.tendered.amount if payment.tendered is not None else None,
        change=payment.change.amount if payment.change is not None else None,
        backdate_reason=payment.backdate_reason,
        recorded_on=timezone.localdate(payment.created_at) if payment.backdated else None,
        language=parcel.owner.preferred_language,  # the receipt is written in the owner's document language
    ).to_json()
    receipt = Receipt.objects.create(office=office, fiscal_year=fiscal_year, number=series.last_number, payment=payment, snapshot=snapshot)
    documents.receipt_document_store(receipt)  # ¶9: the PDF, rendered once and stored in this transaction
    chain.link(chain.RECEIPT, receipt.pk)
    return receipt


# --- End of day, refunds ---------------------------------------------------------------------


@transaction.atomic
def day_close(*, acting_user: Any, office: Office, day: date, counted_cash: Decimal, counted_checks: Decimal,
              explanation: str = "") -> DayClose:
    """A supervisor closes the office's day with the counted cash and checks; the over/short is
    recorded, and a day that does not match is closed only with a written ``explanation``.
    After the close, a void of that day's payments is a new reversal dated later."""
    if not has_role(acting_user, SUPERVISOR):
        raise BillingError(_("Solo un supervisor cierra el día."))
    if office.is_bank:
        raise BillingError(_("Un banco agente recaudador no cierra días: sus pagos llegan en archivos con su fecha valor."))
    if DayClose.objects.filter(office=office, day=day).exists():
        raise BillingError(_("El día ya está cerrado."))
    report = day_report(office=office, day=day)  # issue 18: expected cash net of the day's cash refunds
    totals = {method: report.expected(method) for method in (Payment.Method.CASH, Payment.Method.CHECK)}
    explanation = explanation.strip()
    if (counted_cash, counted_checks) != (totals[Payment.Method.CASH], totals[Payment.Method.CHECK]) and not explanation:
        raise BillingError(_("La caja no cuadra con los recibos: escriba qué pasó con el sobrante o faltante antes de cerrar el día."))
    close = DayClose(
        office=office, day=day, counted_cash=counted_cash, counted_checks=counted_checks,
        expected_cash=totals[Payment.Method.CASH], expected_checks=totals[Payment.Method.CHECK], closed_by=acting_user,
        explanation=explanation,
    )
    close.full_clean()
    close.save()
    chain.link(chain.DAY_CLOSE, close.pk)  # its link records the head of every series
    day_close_journal_post(acting_user=acting_user, close=close)  # issue 19: the day's collections journal
    return close


def refund_held(*, parcel: Parcel, except_request: int | None = None) -> Decimal:
    """Issue 19: the credit held by the parcel's refund requests still awaiting a second supervisor
    (all of them, or all but ``except_request``, the one being approved)."""
    pending = RefundRequest.objects.filter(parcel=parcel, status=RefundRequest.Status.REQUESTED)
    if except_request is not None:
        pending = pending.exclude(pk=except_request)
    return sum((row.amount.amount for row in pending), ZERO)


def _refund_way_check(*, method: str, check_number: str, transfer_reference: str) -> None:
    """How the money went back: a check names its number, a transfer its reference, cash neither."""
    if method not in Refund.Method.values:
        raise BillingError(_("Indique cómo se devuelve el dinero: efectivo de la caja, cheque o transferencia."))
    if method == Refund.Method.CHECK and not check_number.strip():
        raise BillingError(_("Indique el número del cheque del reembolso."))
    if method == Refund.Method.TRANSFER and not transfer_reference.strip():
        raise BillingError(_("Indique la referencia de la transferencia del reembolso."))
    if method == Refund.Method.CASH and check_number.strip():
        raise BillingError(_("Un reembolso en efectivo no lleva número de cheque."))
    if method == Refund.Method.TRANSFER and check_number.strip():
        raise BillingError(_("Un reembolso por transferencia no lleva número de cheque."))
    if method != Refund.Method.TRANSFER and transfer_reference.strip():
        raise BillingError(_("Solo un reembolso por transferencia lleva referencia de transferencia."))


def refund_request_check(*, acting_user: Any, parcel: Parcel, amount: Decimal, reason: str, method: str, on: date,
                         office_code: str | None = None, except_request: int | None = None) -> tuple[Office, Decimal]:
    """What a refund request (and its approval) refuses, read before anything is written: returns
    the office whose day report will list the refund and the credit available to it, the account's
    credit less what pending requests hold (issue 19)."""
    if not has_role(acting_user, SUPERVISOR):
        raise BillingError(_("Solo un supervisor reembolsa créditos."))
    if not reason.strip():
        raise BillingError(_("Un reembolso requiere una razón."))
    if method not in Refund.Method.values:
        raise BillingError(_("Indique cómo se devuelve el dinero: efectivo de la caja, cheque o transferencia."))
    office = office_for(acting_user, office_code)
    if method == Refund.Method.CASH and DayClose.objects.filter(office=office, day=on).exists():
        raise BillingError(_("El día %(d)s de la colecturía %(o)s ya está cerrado: no sale efectivo de su caja, que ya se "
                             "contó. Reembolse con un cheque o el próximo día laborable.") % {"d": on.strftime("%d/%m/%Y"), "o": office.code})
    amount = parse_amount(amount)
    credit = account_state(parcel=parcel, as_of=on, known_by=None).state.credit_balance
    held = refund_held(parcel=parcel, except_request=except_request)
    available = max(credit - held, ZERO)
    if amount > available:
        if held:
            raise BillingError(_("El crédito de la cuenta es %(c)s, de los que %(h)s esperan la aprobación de otro reembolso; "
                                 "no se puede reembolsar %(a)s.") % {"c": money_text(credit), "h": money_text(held), "a": money_text(amount)})
        raise BillingError(_("El crédito de la cuenta es %(c)s; no se puede reembolsar %(a)s.") % {"c": money_text(credit), "a": money_text(amount)})
    return office, available


def refund_check(*, acting_user: Any, parcel: Parcel, amount: Decimal, reason: str, method: str, check_number: str = "",
                 transfer_reference: str = "", on: date, office_code: str | None = None,
                 except_request: int | None = None) -> tuple[Office, Decimal]:
    """What ``refund_issue`` refuses, read before anything is written: ``refund_request_check``
    and how the money went back (a check's number, a transfer's reference)."""
    _refund_way_check(method=method, check_number=check_number, transfer_reference=transfer_reference)
    return refund_request_check(acting_user=acting_user, parcel=parcel, amount=amount, reason=reason, method=method, on=on,
                                office_code=office_code, except_request=except_request)


@transaction.atomic
def refund_issue(*, acting_user: Any, parcel: Parcel, amount: Decimal, reason: str, refunded_on: date | None = None,
                 method: str = Refund.Method.CASH, check_number: str = "", transfer_reference: str = "",
                 office_code: str | None = None, except_request: int | None = None) -> Refund:
    """A supervisor pays back money beyond every issued charge (the account's credit). It enters
    the account as a charge the credit settles, so the replay keeps every cent accounted for.

    Issue 18: numbered ``RE-<year>-<n>``; ``method`` says how the money went back (cash from the
    drawer of the supervisor's office, which that day's report subtracts from the expected cash,
    or a check, ``check_number``); listed on the office's day report; no cash out of a closed day's drawer.

    Issue 19: pages and commands no longer call this: they ask with ``refund_request`` and a second
    supervisor's ``refund_approve`` posts the refund through it (``except_request``: the request
    being approved, whose own hold is not counted against it). A refund may go by bank transfer
    (``transfer_reference``)."""
    amount = parse_amount(amount)
    on = refunded_on or timezone.localdate()
    check_number = check_number.strip()
    transfer_reference = transfer_reference.strip()
    parcel = Parcel.objects.select_for_update().get(pk=parcel.pk)
    office, _credit = refund_check(acting_user=acting_user, parcel=parcel, amount=amount, reason=reason, method=method,
                                   check_number=check_number, transfer_reference=transfer_reference, on=on,
                                   office_code=office_code, except_request=except_request)
    refund = Refund.objects.create(parcel=parcel, amount=amount, refunded_on=on, reason=reason.strip(), refunded_by=acting_user,
                                   number=document_number("refund", "RE", on), method=method, check_number=check_number,
                                   transfer_reference=transfer_reference, office=office)
    charge = Charge.objects.create(
        parcel=parcel, kind=Charge.Kind.REFUND, fiscal_year=fiscal_year_for(on), description=gettext_noop("Reembolso de crédito"),
        principal=amount, due_date=on, last_day_to_pay=on, accrues_surcharge=False, created_by=acting_user,
    )
    LedgerEntry.objects.create(parcel=parcel, entry_date=on, kind=LedgerEntry.Kind.REFUND, debit=amount, refund=refund,
                               charge=charge, description=reason.strip()[:200], created_by=acting_user)
    chain.link(chain.REFUND, refund.pk)
    adjustment_for_refund(acting_user=acting_user, refund=refund, today=timezone.localdate())  # issue 19: a closed day's refund
    return refund


# --- Refunds with two people (issue 19) -------------------------------------------------------


@transaction.atomic
def refund_request(*, acting_user: Any, parcel: Parcel, amount: Decimal, reason: str, method: str = Refund.Method.CASH,
                   office_code: str | None = None, on: date | None = None) -> RefundRequest:
    """Issue 19: a supervisor asks to pay back the account's credit; nothing is paid until a
    different supervisor approves (``refund_approve``). The amount is held from then on: another
    request sees the credit less it. ``method`` is how the money will go back (cash from the
    office's drawer, a check or a bank transfer); the check's number or the transfer's reference
    is given at approval, when the money goes."""
    amount = parse_amount(amount)
    on = on or timezone.localdate()
    parcel = Parcel.objects.select_for_update().get(pk=parcel.pk)  # holds of one parcel are read and written in turn
    office, _available = refund_request_check(acting_user=acting_user, parcel=parcel, amount=amount, reason=reason,
                                              method=method, on=on, office_code=office_code)
    request = RefundRequest(parcel=parcel, amount=amount, reason=reason.strip(), method=method, office=office,
                            requested_by=acting_user)
    request.full_clean()
    request.save()
    return request


def _pending(request: RefundRequest | int) -> RefundRequest:
    pk = request if isinstance(request, int) else request.pk
    found = (RefundRequest.objects.select_for_update(of=("self",)).select_related("parcel", "office", "requested_by")
             .filter(pk=pk).first())
    if found is None:
        raise BillingError(_("No existe la solicitud de reembolso %(n)s.") % {"n": pk})
    if found.status != RefundRequest.Status.REQUESTED:
        raise BillingError(_("La solicitud de reembolso %(n)s ya se decidió: %(s)s.") % {"n": pk, "s": found.get_status_display()})
    return found


def _decider_check(acting_user: Any, request: RefundRequest) -> None:
    if not has_role(acting_user, SUPERVISOR):
        raise BillingError(_("Solo un supervisor aprueba o rechaza un reembolso."))
    if acting_user.pk == request.requested_by_id:
        raise BillingError(_("Usted pidió este reembolso: lo aprueba o rechaza otro supervisor."))


@transaction.atomic
def refund_approve(*, acting_user: Any, request: RefundRequest | int, check_number: str = "", transfer_reference: str = "",
                   refunded_on: date | None = None) -> Refund:
    """Issue 19: a second supervisor approves a pending request, saying how the money went (the
    check's number, the transfer's reference; cash needs neither), which posts the refund
    through ``refund_issue`` (its number, ledger entry, chain link and day report, as before),
    on ``refunded_on`` (today) at the request's office. The supervisor who asked is refused."""
    request = _pending(request)
    _decider_check(acting_user, request)
    refund = refund_issue(acting_user=acting_user, parcel=request.parcel, amount=request.amount.amount, reason=request.reason,
                          refunded_on=refunded_on, method=request.method, check_number=check_number,
                          transfer_reference=transfer_reference, office_code=request.office.code, except_request=request.pk)
    request.status = RefundRequest.Status.APPROVED
    request.decided_by = acting_user
    request.decided_at = timezone.now()
    request.refund = refund
    request.full_clean()
    request.save(update_fields=["status", "decided_by", "decided_at", "refund"])
    return refund


@transaction.atomic
def refund_reject(*, acting_user: Any, request: RefundRequest | int, reason: str) -> RefundRequest:
    """Issue 19: a second supervisor rejects a pending request with a reason; nothing is paid and
    the amount it held is free again. The supervisor who asked is refused (he may not undo his
    own request either: it stays on the record, decided by someone else)."""
    request = _pending(request)
    _decider_check(acting_user, request)
    if not reason.strip():
        raise BillingError(_("Diga por qué se rechaza el reembolso."))
    request.status = RefundRequest.Status.REJECTED
    request.decided_by = acting_user
    request.decided_at = timezone.now()
    request.decision_reason = reason.strip()[:200]
    request.full_clean()
    request.save(update_fields=["status", "decided_by", "decided_at", "decision_reason"])
    return request
