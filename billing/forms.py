"""Forms of the Collector's counter. They only parse what was typed; ``billing.services`` decides
(and refuses with ``BillingError``), so every check still runs where the payment is written."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from django import forms
from django.utils.translation import gettext_lazy as _

from parcels.forms import AmountField, DateInput

from .models import Payment

METHODS_NEEDING_REFERENCE = (Payment.Method.CHECK, Payment.Method.TRANSFER)


class CounterSearchForm(forms.Form):
    q = forms.CharField(
        label=_("Número de catastro o nombre del dueño"), max_length=100, required=False,
        widget=forms.TextInput(attrs={"type": "search", "autocomplete": "off", "autofocus": True}),
    )


class PaymentForm(forms.Form):
    """¶13: a payment at the counter. ``idempotency_key`` is new for every rendering of the form,
    so a double submit records one payment; ``expected_total_due`` is what the page showed, so a
    payment on an account that changed meanwhile is refused."""

    amount = AmountField(label=_("Cantidad recibida"), min_value=Decimal("0.01"))
    method = forms.ChoiceField(label=_("Forma de pago"), choices=Payment.Method.choices, initial=Payment.Method.CASH,
                               widget=forms.RadioSelect)
    reference = forms.CharField(
        label=_("Referencia"), max_length=80, required=False,
        help_text=_("Número del cheque o de la transferencia (obligatorio para esas formas de pago)."),
    )
    tendered = AmountField(
        label=_("Efectivo recibido"), required=False, min_value=Decimal("0.01"),
        help_text=_("Solo en efectivo: lo que entregó el pagador. El cambio se calcula y sale en el recibo."),
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
            self.add_error("reference", _("Indique el número del cheque o de la transferencia."))
        if data.get("method") != Payment.Method.CASH:
            data["tendered"] = None  # the box is for cash only; a figure left in it is not a payment detail
        elif data.get("tendered") is not None and data.get("amount") is not None and data["tendered"] < data["amount"]:
            self.add_error("tendered", _("El efectivo recibido (%(t)s) es menos que la cantidad a cobrar (%(a)s).")
                           % {"t": f"${data['tendered']:,.2f}", "a": f"${data['amount']:,.2f}"})
        return data

    def needs_excess_confirmation(self) -> bool:
        """More than is due today (as the page showed it), not yet confirmed for this amount."""
        data = self.cleaned_data
        return data["amount"] > data["expected_total_due"] and data.get("confirm_excess") != data["amount"]


class VoidForm(forms.Form):
    reason = forms.CharField(
        label=_("Razón de la anulación"), max_length=200,
        help_text=_("Por ejemplo: cheque devuelto por el banco. Queda en el historial del pago."),
    )


class StatementDateForm(forms.Form):
    as_of = forms.DateField(label=_("Al día"), required=False, widget=DateInput())


class DayReportForm(forms.Form):
    """The day, and what was counted in the drawer; nothing here is saved (closing the day is a
    later service)."""

    day = forms.DateField(label=_("Día"), required=False, widget=DateInput())
    office = forms.ChoiceField(label=_("Colecturía"), required=False)
    counted_cash = AmountField(label=_("Efectivo contado"), required=False, min_value=Decimal("0"))
    counted_checks = AmountField(label=_("Cheques contados"), required=False, min_value=Decimal("0"))

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
        label=_("Explicación del sobrante o faltante"), required=False, max_length=1000,
        widget=forms.Textarea(attrs={"rows": 3}),
        help_text=_("Obligatoria si la caja no cuadra: qué pasó y qué se hizo. Sale en el cuadre del día."),
    )


class RefundForm(forms.Form):
    amount = forms.DecimalField(label=_("Cantidad a reembolsar"), min_value=Decimal("0.01"), max_digits=14, decimal_places=2)
    reason = forms.CharField(label=_("Razón"), max_length=200)
