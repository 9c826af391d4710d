"""Pages of the Collector's office (*colecturía*): the counter search, what a parcel owes today with
the payment form, receipts, statements, voids by a supervisor and the office's day report. Views
bind a form, fetch through ``access`` or ``selectors``, call one service, then redirect or render.

Forms of the Collector's counter. They only parse what was typed; ``billing.services`` decides
(and refuses with ``BillingError``), so every check still runs where the payment is written."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from datetime import date
from decimal import Decimal
from functools import wraps
from typing import Any
from urllib.parse import urlencode

from django import forms
from django.conf import settings
from django.contrib import messages
from django.core.paginator import Page, Paginator
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django.views.decorators.http import require_POST

from parcels import review
from parcels.access import get_parcel_for_user
from parcels.forms import AmountField, DateInput
from parcels.models import Parcel
from parcels.money import money_text
from parcels.roles import AUDITOR, COLLECTOR, HACIENDA, LANDOWNER, SUPERVISOR, has_role, role_required

from .. import accounts, counter_status, documents, portal, selectors
from ..access import RECEIPT_STAFF, get_document_for_user, get_receipt_for_user
from ..errors import BillingError
from ..models import DayClose, IssuedDocument, Office, Payment, Refund, ReprintLog, SeizureCase, SeizureStep
from ..services import counter as counter_services
from ..services import reprints
from ..services import voids as void_services

METHODS_NEEDING_REFERENCE = (Payment.Method.CHECK, Payment.Method.TRANSFER)


class CounterSearchForm(forms.Form):
    q = forms.CharField(
        label=gettext_lazy("Número de catastro o nombre del dueño"), max_length=100, required=False,
        widget=forms.TextInput(attrs={"type": "search", "autocomplete": "off", "autofocus": True}),
    )


class PaymentForm(forms.Form):
    """¶13: a payment at the counter. ``idempotency_key`` is new for every rendering of the form,
    so a double submit records one payment; ``expected_total_due`` is what the page showed, so a
    payment on an account that changed meanwhile is refused."""

    amount = AmountField(label=gettext_lazy("Cantidad recibida"), min_value=Decimal("0.01"))
    method = forms.ChoiceField(label=gettext_lazy("Forma de pago"), choices=Payment.Method.choices, initial=Payment.Method.CASH,
                               widget=forms.RadioSelect)
    reference = forms.CharField(
        label=gettext_lazy("Referencia"), max_length=80, required=False,
        help_text=gettext_lazy("Número del cheque o de la transferencia (obligatorio para esas formas de pago)."),
    )
    tendered = AmountField(
        label=gettext_lazy("Efectivo recibido"), required=False, min_value=Decimal("0.01"),
        help_text=gettext_lazy("Solo en efectivo: lo que entregó el pagador. El cambio se calcula y sale en el recibo."),
    )
    idempotency_key = forms.CharField(max_length=64, widget=forms.HiddenInput)
    expected_total_due = forms.DecimalField(max_digits=14, decimal_places=2, widget=forms.HiddenInput)
    # The amount the collector confirmed on the second step, when it is more than is due today.
    confirm_excess = forms.DecimalField(max_digits=14, decimal_places=2, required=False, widget=forms.HiddenInput)
    # Issue 17: the earlier payment (same parcel, amount and form, minutes ago) the collector
    # confirmed this is a second payment after.
    confirm_second = forms.IntegerField(required=False, min_value=1, widget=forms.HiddenInput)

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        if data.get("method") in METHODS_NEEDING_REFERENCE and not data.get("reference", "").strip():
            self.add_error("reference", gettext_lazy("Indique el número del cheque o de la transferencia."))
        if data.get("method") != Payment.Method.CASH:
            data["tendered"] = None  # the box is for cash only; a figure left in it is not a payment detail
        elif data.get("tendered") is not None and data.get("amount") is not None and data["tendered"] < data["amount"]:
            self.add_error("tendered", gettext_lazy("El efectivo recibido (%(t)s) es menos que la cantidad a cobrar (%(a)s).")
                           % {"t": money_text(data['tendered']), "a": money_text(data['amount'])})
        return data

    def needs_excess_confirmation(self) -> bool:
        """More than is due today (as the page showed it), not yet confirmed for this amount."""
        data = self.cleaned_data
        return data["amount"] > data["expected_total_due"] and data.get("confirm_excess") != data["amount"]


class VoidForm(forms.Form):
    reason = forms.CharField(
        label=gettext_lazy("Razón de la anulación"), max_length=200,
        help_text=gettext_lazy("Por ejemplo: cheque devuelto por el banco. Queda en el historial del pago."),
    )


class StatementDateForm(forms.Form):
    as_of = forms.DateField(label=gettext_lazy("Al día"), required=False, widget=DateInput())


class DayReportForm(forms.Form):
    """The day, and what was counted in the drawer; nothing here is saved (closing the day is a
    later service)."""

    day = forms.DateField(label=gettext_lazy("Día"), required=False, widget=DateInput())
    office = forms.ChoiceField(label=gettext_lazy("Colecturía"), required=False)
    counted_cash = AmountField(label=gettext_lazy("Efectivo contado"), required=False, min_value=Decimal("0"))
    counted_checks = AmountField(label=gettext_lazy("Cheques contados"), required=False, min_value=Decimal("0"))

    def __init__(self, *args: Any, offices: list[tuple[str, str]] | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if offices:
            self.fields["office"].choices = offices
        else:
            del self.fields["office"]


class DayCloseForm(forms.Form):
    office = forms.CharField(required=False)
    day = forms.DateField()
    counted_cash = forms.DecimalField(min_value=Decimal("0"), max_digits=14, decimal_places=2)
    counted_checks = forms.DecimalField(min_value=Decimal("0"), max_digits=14, decimal_places=2)
    explanation = forms.CharField(
        label=gettext_lazy("Explicación del sobrante o faltante"), required=False, max_length=1000,
        widget=forms.Textarea(attrs={"rows": 3}),
        help_text=gettext_lazy("Obligatoria si la caja no cuadra: qué pasó y qué se hizo. Sale en el cuadre del día."),
    )


class RefundForm(forms.Form):
    """Issue 18, 19: the refund a supervisor asks for, and how the money will go back (cash from the
    drawer, a check or a bank transfer); the check's number or the transfer's reference is given
    by the second supervisor who approves it."""

    amount = AmountField(label=gettext_lazy("Cantidad a reembolsar"), min_value=Decimal("0.01"))
    method = forms.ChoiceField(label=gettext_lazy("Cómo se devuelve el dinero"), choices=Refund.Method.choices,
                               widget=forms.RadioSelect)
    reason = forms.CharField(label=gettext_lazy("Razón"), max_length=200,
                             help_text=gettext_lazy("Por ejemplo: pagó dos veces el mismo plazo."))


class RefundDecisionForm(forms.Form):
    """Issue 19: a second supervisor approves (with the check's number or the transfer's reference)
    or rejects (with a reason) a pending refund request."""

    action = forms.ChoiceField(choices=[("approve", "approve"), ("reject", "reject")])
    check_number = forms.CharField(label=gettext_lazy("Número del cheque"), max_length=40, required=False)
    transfer_reference = forms.CharField(label=gettext_lazy("Referencia de la transferencia"), max_length=40, required=False)
    reason = forms.CharField(label=gettext_lazy("Razón del rechazo"), max_length=200, required=False)


COUNTER_ROLES = (COLLECTOR, SUPERVISOR)
READERS = (*RECEIPT_STAFF, LANDOWNER)  # landowners reach only their own (404 otherwise)


def _office_or_error(user: Any, code: str | None = None) -> tuple[Office | None, str]:
    try:
        return counter_services.office_for(user, code), ""
    except BillingError as exc:
        return None, str(exc)


# ---------------------------------------------------------------------------------------------
# 1. The counter: find a parcel
# ---------------------------------------------------------------------------------------------


@role_required(*COUNTER_ROLES)
def counter(request: HttpRequest) -> HttpResponse:
    form = CounterSearchForm(request.GET or None)
    query = form.cleaned_data["q"].strip() if form.is_valid() else ""
    results = list(selectors.parcel_search(query=query)) if query else []
    more = len(results) > selectors.SEARCH_LIMIT
    office, office_error = _office_or_error(request.user)
    return render(request, "billing/counter.html", {
        "form": form, "query": query, "results": results[: selectors.SEARCH_LIMIT], "more": more,
        "limit": selectors.SEARCH_LIMIT, "office": office, "office_error": office_error,
        "last_attempt": counter_status.last_attempt(request), "session_seconds": settings.SESSION_COOKIE_AGE,
    })


@require_POST
@role_required(*COUNTER_ROLES)
def session_extend(request: HttpRequest) -> JsonResponse:
    """The session warning's "seguir trabajando": any signed-in request renews the session
    (SESSION_SAVE_EVERY_REQUEST); this one says for how long."""
    request.session.modified = True
    return JsonResponse({"seconds": settings.SESSION_COOKIE_AGE})


# ---------------------------------------------------------------------------------------------
# 2. What a parcel owes today, and the payment form (¶12, ¶13)
# ---------------------------------------------------------------------------------------------


def _fresh_form(data: Any, statement: accounts.Statement, refill: dict[str, str] | None = None) -> PaymentForm:
    """A payment form for this rendering: a new idempotency key and the total the page shows.
    Bound data (what the collector typed) is kept; only the hidden fields are renewed (a
    confirmation of an excess is never carried over: a changed amount asks again). ``refill``
    puts back a form that was sent but not recorded (the page says so beside it)."""
    hidden = {"idempotency_key": uuid.uuid4().hex, "expected_total_due": f"{statement.total_due:.2f}", "confirm_excess": "",
              "confirm_second": ""}
    if data is None:
        initial = {"method": Payment.Method.CASH, **hidden}
        if statement.total_due > 0:
            initial["amount"] = f"{statement.total_due:,.2f}"
        if refill:
            initial.update({name: value for name, value in refill.items() if value})
        return PaymentForm(initial=initial)
    data = data.copy()
    data.update(hidden)
    form = PaymentForm(data)
    form.is_valid()  # so the errors found on the submitted data show again
    return form


def _confirmation_form(data: dict[str, Any], statement: accounts.Statement, second_of: Payment | None = None) -> PaymentForm:
    """The second step for an amount above what is due today, or for the same payment as one
    recorded minutes ago (``second_of``, issue 17): the same payment, confirmed. An excess the
    page already confirmed stays confirmed on the second-payment question."""
    values = {
        "amount": f"{data['amount']:.2f}", "method": data["method"], "reference": data["reference"],
        "tendered": f"{data['tendered']:.2f}" if data.get("tendered") is not None else "",
        "idempotency_key": uuid.uuid4().hex, "expected_total_due": f"{statement.total_due:.2f}",
        "confirm_excess": f"{data['amount']:.2f}" if second_of is None or data.get("confirm_excess") == data["amount"] else "",
        "confirm_second": str(second_of.pk) if second_of is not None else "",
    }
    return PaymentForm(initial=values)


def _remember_unsent(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """A payment form posted after the session expired goes to the sign-in page and is lost:
    keep what it carried in the new session, so the counter can say it was not recorded."""

    @wraps(view)
    def wrapped(request: HttpRequest, pk: int) -> HttpResponse:
        if request.method == "POST" and not request.user.is_authenticated:
            counter_status.unsent_remember(request, pk)
        return view(request, pk)

    return wrapped


@_remember_unsent
@role_required(*COUNTER_ROLES)
def counter_parcel(request: HttpRequest, pk: int) -> HttpResponse:
    parcel = get_object_or_404(Parcel.objects.select_related("owner"), pk=pk)
    today = timezone.localdate()
    error = ""
    destination = None
    second_of = None
    if request.method == "POST":
        form = PaymentForm(request.POST)
        if form.is_valid() and request.POST.get("action") != "revise":
            data = form.cleaned_data
            if form.needs_excess_confirmation():
                destination = accounts.payment_destination(parcel=parcel, amount=data["amount"], on=today)
            # No second step needed; or a stale page, which the service refuses with the current figures.
            if destination is None or destination.total_due != data["expected_total_due"]:
                destination = None
                counter_status.attempt_remember(user=request.user, parcel_pk=parcel.pk, key=data["idempotency_key"],
                                                data=request.POST)
                try:
                    receipt = counter_services.payment_record(
                        acting_user=request.user, parcel=parcel, amount=data["amount"], paid_on=today, method=data["method"],
                        reference=data["reference"].strip(), idempotency_key=data["idempotency_key"],
                        expected_total_due=data["expected_total_due"], tendered=data.get("tendered"),
                        second_of=data.get("confirm_second"), ask_if_second=True,
                    )
                except counter_services.SecondPaymentQuestion as exc:
                    second_of = exc.earlier  # nothing recorded: the page asks, naming the earlier receipt
                    counter_status.attempt_answered(user=request.user, key=data["idempotency_key"])
                except BillingError as exc:
                    error = str(exc)
                    counter_status.attempt_answered(user=request.user, key=data["idempotency_key"])
                else:
                    change = receipt.payment.change
                    if change is not None:
                        messages.success(request, _("Pago registrado. Recibo %(n)s. Cambio a devolver: %(c)s.")
                                         % {"n": receipt.display_number, "c": money_text(change.amount)})
                    else:
                        messages.success(request, _("Pago registrado. Recibo %(n)s.") % {"n": receipt.display_number})
                    return redirect("billing:receipt", pk=receipt.pk)
    # Always the current figures: after a refusal the page shows what is owed now.
    statement = accounts.statement(parcel=parcel, as_of=today)
    last = counter_status.last_attempt(request) if request.method == "GET" else None
    refill = last.data if last is not None and not last.recorded and last.parcel_pk == parcel.pk else None
    if second_of is not None:
        form = _confirmation_form(form.cleaned_data, statement, second_of=second_of)
    elif destination is not None:
        form = _confirmation_form(form.cleaned_data, statement)
    else:
        form = _fresh_form(request.POST if request.method == "POST" else None, statement, refill=refill)
        if request.POST.get("action") == "revise":  # "No, corregir la cantidad": the cursor goes to the amount
            form.fields["amount"].widget.attrs["autofocus"] = True
    office, office_error = _office_or_error(request.user)
    # Issue 17: a closed day takes no payment; the page says so (naming the close) instead of the form.
    day_closed = counter_services.closed_day_refusal(office=office, day=today) if office is not None else ""
    if error and error != day_closed:  # the close is said once, in place of the form
        form.add_error(None, error)
    confirm_tendered = Decimal(form.initial["tendered"]) if destination is not None and form.initial.get("tendered") else None
    return render(request, "billing/counter_parcel.html", {
        "parcel": parcel, "statement": statement, "form": form, "today": today, "office": office, "office_error": office_error,
        "payments": selectors.parcel_payments(parcel=parcel)[:5], "destination": destination,
        "confirm_tendered": confirm_tendered,
        "confirm_change": confirm_tendered - destination.amount if confirm_tendered is not None and destination else None,
        "last_attempt": last, "refilled": refill is not None, "session_seconds": settings.SESSION_COOKIE_AGE,
        "second_of": second_of, "day_closed": day_closed,
        "installment_bills": portal.installment_bills(parcel),
    })


# ---------------------------------------------------------------------------------------------
# 3. Receipts (¶9) and voids
# ---------------------------------------------------------------------------------------------


def _render_receipt(request: HttpRequest, receipt: Any, void_form: VoidForm | None = None) -> HttpResponse:
    can_void = has_role(request.user, SUPERVISOR) and not hasattr(receipt.payment, "void")
    return render(request, "billing/receipt.html", {
        "r": selectors.receipt_display(receipt), "can_void": can_void,
        "void_form": void_form or (VoidForm() if can_void else None),
    })


@role_required(*READERS)
def receipt(request: HttpRequest, pk: int) -> HttpResponse:
    found = get_receipt_for_user(request.user, pk)
    if has_role(request.user, *COUNTER_ROLES):  # the answer to the collector's payment form was shown
        counter_status.attempt_answered(user=request.user, key=found.payment.idempotency_key)
    return _render_receipt(request, found)


VOID_ACT = "billing.void"


def void_figures(*, payment: Payment, reason: str, on: date, entries: tuple[Any, ...] = ()) -> tuple[Any, ...]:
    """What voiding records, as its review page shows it (the confirmation carries its fingerprint):
    the payment, the date, the reason and every entry the void will post (issue 17)."""
    return (payment.pk, payment.receipt.display_number, payment.amount, payment.method, payment.paid_on, on, reason.strip(),
            tuple((e.kind, e.charge, e.on, e.surcharge, e.principal) for e in entries))


@require_POST
@role_required(SUPERVISOR)
def void(request: HttpRequest, pk: int) -> HttpResponse:
    """The receipt's form leads to a review page (receipt, amount, date, reason, and the dated
    reversal it will record); the payment is voided only from that page's POST."""
    payment = get_object_or_404(Payment.objects.select_related("receipt", "parcel", "office"), pk=pk)
    form = VoidForm(request.POST)
    if form.is_valid():
        reason = form.cleaned_data["reason"].strip()
        on = timezone.localdate()
        try:
            if not hasattr(payment, "void"):
                # issue 17: every entry the void will post, listed before it is confirmed
                preview = void_services.void_preview(acting_user=request.user, payment=payment, reason=reason, voided_on=on)
                figures = void_figures(payment=payment, reason=reason, on=on, entries=preview.entries)
                sent = review.was_sent(request.POST)
                changed = sent and not review.reviewed(request.POST, VOID_ACT, figures)
                if changed or not sent:
                    return render(request, "billing/void_review.html", {
                        "payment": payment, "receipt": payment.receipt, "reason": reason, "on": on, "changed": changed,
                        "day_closed": DayClose.objects.filter(office_id=payment.office_id, day=payment.paid_on).exists(),
                        "entries": preview.entries,
                        "fingerprint": review.fingerprint(VOID_ACT, figures), "review_field": review.FIELD,
                    }, status=409 if changed else 200)
            void_services.payment_void(acting_user=request.user, payment=payment, reason=reason, voided_on=on)
        except BillingError as exc:
            form.add_error(None, str(exc))
        else:
            messages.success(request, _("Pago anulado. El recibo %(n)s queda como se emitió, marcado ANULADO.")
                             % {"n": payment.receipt.display_number})
            return redirect("billing:receipt", pk=payment.receipt.pk)
    return _render_receipt(request, get_receipt_for_user(request.user, payment.receipt.pk), void_form=form)


# ---------------------------------------------------------------------------------------------
# 4. Statements (estado de cuenta)
# ---------------------------------------------------------------------------------------------


@role_required(*READERS)
def statement(request: HttpRequest, pk: int) -> HttpResponse:
    parcel = get_parcel_for_user(request.user, pk)
    today = timezone.localdate()
    form = StatementDateForm(request.GET or None, initial={"as_of": today})
    as_of = (form.cleaned_data.get("as_of") if form.is_bound and form.is_valid() else None) or today
    shown = accounts.statement(parcel=parcel, as_of=as_of)
    held = counter_services.refund_held(parcel=parcel) if has_role(request.user, SUPERVISOR) else Decimal("0.00")
    return render(request, "billing/statement.html", {
        "parcel": parcel, "statement": shown, "form": form, "today": today,
        **_seizure_context(parcel=parcel, today=today, owed_today=shown.total_due if as_of == today else None),
        "holds_through": selectors.owed_today_holds_through(parcel=parcel, as_of=as_of),  # until when the amount holds
        "payments": selectors.parcel_payments(parcel=parcel, until=as_of),
        "can_collect": has_role(request.user, *COUNTER_ROLES),
        "can_certify": has_role(request.user, HACIENDA, COLLECTOR, SUPERVISOR),  # ¶11: e.g. before a sale
        # Bills and debt certificates follow the parcel (its debts stay with the land, ¶11).
        "documents": IssuedDocument.objects.filter(parcel=parcel, kind__in=["bill", "certificate", "statement"])
        .defer("pdf").order_by("-created_at")[:50],
        # the aviso of each installment and a numbered estado de cuenta, on demand (billing.web.portal)
        "installment_bills": portal.installment_bills(parcel),
        "can_issue": has_role(request.user, LANDOWNER, COLLECTOR, SUPERVISOR, HACIENDA),
        # issue 19: the e-mail reminders sent (or failed) to the owner, for staff only
        "reminders": selectors.parcel_reminder_log(parcel=parcel)
        if has_role(request.user, HACIENDA, COLLECTOR, SUPERVISOR, AUDITOR) else None,
        # issue 19: the credit pending refund requests hold (a supervisor's refund form offers the rest)
        "refund_held": held, "refund_available": shown.credit_balance - held,
    })


def _seizure_context(*, parcel: Parcel, today: date, owed_today: Decimal | None) -> dict[str, Any]:
    """¶14, issue 18: the parcel's open seizure case, shown first (what it means, until when, what
    stops it), and every seizure step issued for it, listed with the other issued documents."""
    steps = list(SeizureStep.objects.filter(case__parcel=parcel).select_related("case").defer("pdf", "debt")
                 .order_by("-issued_on", "-id"))
    seizures = []
    if any(step.case.status == SeizureCase.Status.OPEN for step in steps):
        owed = owed_today if owed_today is not None else accounts.parcel_debt(parcel=parcel, as_of=today)
        seizures = selectors.open_seizures(parcels=[parcel], owed={parcel.pk: owed}, today=today)
    return {"seizures": seizures, "seizure_documents": steps}


@role_required(*RECEIPT_STAFF)
def ledger(request: HttpRequest, pk: int) -> HttpResponse:
    """The parcel's ledger rows with the running balance, beside its statement (issue 17)."""
    parcel = get_parcel_for_user(request.user, pk)
    today = timezone.localdate()
    lines = selectors.parcel_ledger(parcel=parcel)
    # as of today, or of the last dated entry if one is later (as verify_books reads it)
    as_of = max([today, *(line.entry.entry_date for line in lines if line.entry.kind != "charge")])
    state = accounts.account_state(parcel=parcel, as_of=as_of).state
    unpaid = sum((c.surcharge - c.surcharge_paid for c in state.charges), Decimal("0.00"))
    return render(request, "billing/ledger.html", {
        "parcel": parcel, "lines": lines, "balance": lines[-1].balance if lines else Decimal("0.00"), "as_of": as_of,
        "state": state, "unpaid_surcharge": unpaid, "from_statement": state.total_balance - unpaid - state.credit_balance,
    })


# ---------------------------------------------------------------------------------------------
# 5. The office's day
# ---------------------------------------------------------------------------------------------


@role_required(*COUNTER_ROLES)
def day_report(request: HttpRequest) -> HttpResponse:
    today = timezone.localdate()
    offices = None
    if has_role(request.user, SUPERVISOR):
        offices = [(office.code, str(office)) for office in Office.objects.filter(kind=Office.Kind.COUNTER)]
    params = None
    if request.GET:
        params = request.GET.copy()
        if not params.get("day"):
            params["day"] = today.strftime("%d/%m/%Y")  # so the date box shows the day reported, as the page writes it
    form = DayReportForm(params, offices=offices, initial={"day": today})
    day: date = today
    code = None
    counted_cash: Decimal | None = None
    counted_checks: Decimal | None = None
    if form.is_bound:
        form.is_valid()  # a field typed wrong shows its error; the others still count
        data = form.cleaned_data
        day = data.get("day") or today
        code = data.get("office") or None
        counted_cash = data.get("counted_cash")
        counted_checks = data.get("counted_checks")
    office, office_error = _office_or_error(request.user, code)
    if offices and office is not None and not form.is_bound:
        form.initial["office"] = office.code
    report = selectors.day_report(office=office, day=day) if office is not None else None
    receipts = _day_receipts_page(report, request.GET.get("page")) if report is not None else None
    over_short = (
        selectors.day_over_short(report=report, counted_cash=counted_cash, counted_checks=counted_checks) if report else []
    )
    closed = DayClose.objects.filter(office=office, day=day).select_related("closed_by").first() if office else None
    return render(request, "billing/day_report.html", {
        "form": form, "report": report, "page": receipts, "over_short": over_short, "office_error": office_error, "day": day,
        "today": today, "closed": closed, "counted_cash": counted_cash, "counted_checks": counted_checks,
        "does_not_match": any(row.difference for row in over_short), "close_form": DayCloseForm(),
        "session_seconds": settings.SESSION_COOKIE_AGE,
    })


DAY_REPORT_PAGE = 50  # receipts a page of the day report lists; its totals are the whole day's


def _day_receipts_page(report: selectors.DayReport, asked: str | None) -> Page:
    """One page of the day's receipts (a page past the end is the last one), in one query: the
    day's count is the totals' (receipts in the drawer and those voided that day)."""
    paginator = Paginator(range(report.count + report.voided_count), DAY_REPORT_PAGE)
    try:
        number = min(max(1, int(asked or 1)), paginator.num_pages)
    except ValueError:
        number = 1
    start = (number - 1) * DAY_REPORT_PAGE
    return Page(list(report.payments[start:start + DAY_REPORT_PAGE]), number, paginator)


DAY_CLOSE_ACT = "billing.day-close"


def day_close_figures(*, report: Any, counted_cash: Decimal, counted_checks: Decimal, explanation: str) -> tuple[Any, ...]:
    """What closing the day records, as its review page shows it (the confirmation carries its fingerprint)."""
    return (report.office.code, report.day, report.count, report.total, report.voided_count, report.voided_total,
            report.expected(Payment.Method.CASH), counted_cash, report.expected(Payment.Method.CHECK), counted_checks,
            _newlines(explanation.strip()))


def _newlines(text: str) -> str:
    """A textarea's CRLF and a hidden field's LF are the same explanation."""
    return text.replace("\r\n", "\n").replace("\r", "\n")


@require_POST
@role_required(SUPERVISOR)
def day_close(request: HttpRequest) -> HttpResponse:
    """A supervisor closes the office's day with the counted cash and checks (one service). The
    day report's form leads to a review page (counted against expected, the over/short and its
    explanation); the day is closed only from that page's POST with the figures still current.
    A close the service refuses anyway (already closed, an over/short with no explanation) skips
    the review and shows the refusal."""
    form = DayCloseForm(request.POST)
    if not form.is_valid():
        messages.error(request, _("Revise el día y las cantidades contadas."))
        return _back_to_day_report(request, form)
    data = form.cleaned_data
    office, error = _office_or_error(request.user, data["office"])
    if office is None:
        messages.error(request, error)
        return _back_to_day_report(request, form)
    report = selectors.day_report(office=office, day=data["day"])
    rows = selectors.day_over_short(report=report, counted_cash=data["counted_cash"], counted_checks=data["counted_checks"])
    explanation = data["explanation"].strip()
    off = any(row.difference for row in rows)
    closed = DayClose.objects.filter(office=office, day=data["day"]).exists()
    if not closed and not (off and not explanation):
        figures = day_close_figures(report=report, counted_cash=data["counted_cash"], counted_checks=data["counted_checks"],
                                    explanation=explanation)
        sent = review.was_sent(request.POST)
        changed = sent and not review.reviewed(request.POST, DAY_CLOSE_ACT, figures)
        if changed or not sent:
            return render(request, "billing/day_close_review.html", {
                "report": report, "rows": rows, "off": off, "explanation": explanation, "data": data, "changed": changed,
                "fingerprint": review.fingerprint(DAY_CLOSE_ACT, figures), "review_field": review.FIELD,
                "back": _day_report_url(request, form),
            }, status=409 if changed else 200)
    try:
        counter_services.day_close(acting_user=request.user, office=office, day=data["day"], counted_cash=data["counted_cash"],
                                   counted_checks=data["counted_checks"], explanation=explanation)
    except BillingError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, _("Día cerrado."))
    return _back_to_day_report(request, form)


def _day_report_url(request: HttpRequest, form: DayCloseForm) -> str:
    """The report of that day with those counts: only the report's own fields, never the CSRF
    token (a token in a URL ends up in histories, logs and Referer headers)."""
    kept = {name: request.POST[name] for name in DAY_REPORT_FIELDS if request.POST.get(name)}
    if form.is_valid():  # the date box shows d/m/Y like the page (its hint says dd/mm/aaaa)
        kept["day"] = form.cleaned_data["day"].strftime("%d/%m/%Y")
    return f"{reverse('billing:day-report')}?{urlencode(kept)}"


def _back_to_day_report(request: HttpRequest, form: DayCloseForm) -> HttpResponse:
    return redirect(_day_report_url(request, form))


DAY_REPORT_FIELDS = ("day", "office", "counted_cash", "counted_checks")


REFUND_ACT = "billing.refund"


def refund_figures(*, parcel: Parcel, data: dict[str, Any], on: date, office: Office, credit: Decimal) -> tuple[Any, ...]:
    """What requesting a refund records, as its review page shows it (the confirmation carries its
    fingerprint); ``credit`` is the credit available to it (less what pending requests hold)."""
    return (parcel.pk, data["amount"], data["method"], data["reason"].strip(), on, office.code, credit)


@require_POST
@role_required(SUPERVISOR)
def refund(request: HttpRequest, pk: int) -> HttpResponse:
    """A supervisor asks to refund the account's credit (money beyond every issued charge). The
    statement's form leads to a review page (amount, credit available before and after, how the
    money goes back, the office); the request is recorded only from that page's POST with the
    figures still current (issue 18), and waits for a different supervisor's approval (issue 19,
    ``refund_requests``). A form with errors, a refusal or "No, corregir" shows the form again."""
    parcel = get_object_or_404(Parcel.objects.select_related("owner"), pk=pk)
    today = timezone.localdate()
    credit = accounts.statement(parcel=parcel, as_of=today).credit_balance
    held = counter_services.refund_held(parcel=parcel)
    form = RefundForm(request.POST)
    if request.POST.get("action") != "revise" and form.is_valid():
        data = form.cleaned_data
        try:
            office, available = counter_services.refund_request_check(
                acting_user=request.user, parcel=parcel, amount=data["amount"], reason=data["reason"], method=data["method"],
                on=today)
            figures = refund_figures(parcel=parcel, data=data, on=today, office=office, credit=available)
            sent = review.was_sent(request.POST)
            changed = sent and not review.reviewed(request.POST, REFUND_ACT, figures)
            if changed or not sent:
                return render(request, "billing/refund_review.html", {
                    "parcel": parcel, "data": data, "on": today, "office": office, "credit": available,
                    "credit_after": available - data["amount"], "changed": changed, "held": held,
                    "fingerprint": review.fingerprint(REFUND_ACT, figures), "review_field": review.FIELD,
                }, status=409 if changed else 200)
            found = counter_services.refund_request(
                acting_user=request.user, parcel=parcel, amount=data["amount"], reason=data["reason"], method=data["method"],
                on=today)
        except BillingError as exc:
            form.add_error(None, str(exc))
        else:
            messages.success(request, _("Solicitud de reembolso n.º %(n)s registrada: %(a)s (%(m)s). Espera la aprobación de "
                                        "otro supervisor; hasta entonces esa cantidad queda reservada.") % {
                "n": found.pk, "a": money_text(found.amount.amount), "m": found.get_method_display()})
            return redirect("billing:statement", pk=parcel.pk)
    if request.POST.get("action") == "revise":  # "Corregir": back to the form with what was typed, cursor on the amount
        form = RefundForm(initial={name: request.POST.get(name, "") for name in ("amount", "method", "reason")})
        form.fields["amount"].widget.attrs["autofocus"] = True
    return render(request, "billing/refund.html", {"parcel": parcel, "form": form, "credit": credit - held, "held": held,
                                                   "today": today})


@role_required(SUPERVISOR)
def refund_requests(request: HttpRequest) -> HttpResponse:
    """Issue 19: the refund requests awaiting a second supervisor, each with its approve and reject
    forms (the ones this supervisor asked for say another must decide), and the latest decided."""
    pending = selectors.refund_requests_pending()
    decided = selectors.refund_requests_decided()[:20]
    return render(request, "billing/refund_requests.html", {"pending": pending, "decided": decided})


@require_POST
@role_required(SUPERVISOR)
def refund_decide(request: HttpRequest, pk: int) -> HttpResponse:
    """Issue 19: approve (posting the refund: its number, ledger entry and day report) or reject a
    pending request; a refusal (the same supervisor who asked, a missing check number …) comes
    back to the list as an error message."""
    form = RefundDecisionForm(request.POST)
    if not form.is_valid():
        messages.error(request, _("Indique si aprueba o rechaza la solicitud."))
        return redirect("billing:refund-requests")
    data = form.cleaned_data
    try:
        if data["action"] == "approve":
            found = counter_services.refund_approve(acting_user=request.user, request=pk, check_number=data["check_number"],
                                                    transfer_reference=data["transfer_reference"])
        else:
            counter_services.refund_reject(acting_user=request.user, request=pk, reason=data["reason"])
    except BillingError as exc:
        messages.error(request, str(exc))
        return redirect("billing:refund-requests")
    if data["action"] == "reject":
        messages.success(request, _("Solicitud de reembolso n.º %(n)s rechazada: no se pagó nada.") % {"n": pk})
        return redirect("billing:refund-requests")
    office = found.office
    values = {"n": found.number, "a": money_text(found.amount.amount), "c": found.check_number, "t": found.transfer_reference,
              "o": office.name if office else "", "d": found.refunded_on.strftime("%d/%m/%Y"), "r": pk}
    if found.method == Refund.Method.CHECK:
        text = _("Solicitud n.º %(r)s aprobada. Reembolso %(n)s registrado: %(a)s con el cheque núm. %(c)s. Sale en el cuadre "
                 "del día %(d)s de %(o)s.")
    elif found.method == Refund.Method.TRANSFER:
        text = _("Solicitud n.º %(r)s aprobada. Reembolso %(n)s registrado: %(a)s por transferencia (referencia %(t)s). Sale "
                 "en el cuadre del día %(d)s de %(o)s.")
    else:
        text = _("Solicitud n.º %(r)s aprobada. Reembolso %(n)s registrado: %(a)s en efectivo de la caja. Entregue el "
                 "dinero; el cuadre del día %(d)s de %(o)s lo resta del efectivo esperado.")
    messages.success(request, text % values)
    return redirect("billing:refund-requests")


def document_refused(exc: Exception) -> HttpResponse:
    """Issue 20: a stored document whose file is missing or no longer hashes as issued is not
    served; the reader is told why (and the error is logged by ``billing.storage.stored_pdf``)."""
    return HttpResponse(str(exc), status=500, content_type="text/plain; charset=utf-8")


@role_required(*READERS)
def receipt_pdf(request: HttpRequest, pk: int) -> HttpResponse:
    """The receipt's PDF as issued (stored bytes; stamped ANULADO when its payment was voided), or
    with ``?copia=1`` a reprint stamped COPIA with today's date. Same access as the receipt page (a landowner: only their own, else 404)."""
    receipt = get_receipt_for_user(request.user, pk)
    document = documents.receipt_document(receipt)
    copy = request.GET.get("copia") == "1"
    try:
        if copy:  # every COPIA is logged (issue 19: the register of reprints)
            channel = ReprintLog.Channel.PORTAL if has_role(request.user, LANDOWNER) else ReprintLog.Channel.COUNTER
            data = reprints.reprint_issue(acting_user=request.user, document=document, channel=channel)
        else:
            data = documents.document_download(document)  # a voided payment's receipt says ANULADO on every download
    except documents.DocumentAltered as exc:
        return document_refused(exc)
    response = HttpResponse(data, content_type="application/pdf")
    suffix = "-copia" if copy else ""
    response["Content-Disposition"] = f'attachment; filename="recibo-{receipt.display_number}{suffix}.pdf"'
    return response


@role_required(*READERS)
def document_pdf(request: HttpRequest, pk: int) -> HttpResponse:
    """A bill's, debt certificate's or estado's PDF as stored, for staff and for the parcel's
    current owner (404 for anyone else); receipts go through ``receipt_pdf`` (they follow the payer)."""
    document = IssuedDocument.objects.get(pk=get_document_for_user(request.user, pk).pk)
    try:
        data = documents.document_pdf(document)  # byte-identical to its hash, or refused (issue 20)
    except documents.DocumentAltered as exc:
        return document_refused(exc)
    response = HttpResponse(data, content_type="application/pdf")
    response["Content-Disposition"] = f'attachment; filename="{document.kind}-{document.number}.pdf"'
    return response
