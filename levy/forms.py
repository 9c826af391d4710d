"""Forms of the levy pages. They only parse and check what was typed; the services decide (and
refuse with ``LevyError``), so every statutory check still runs where the write happens."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from django import forms
from django.utils.html import format_html
from django.utils.translation import gettext_lazy as _

from parcels.forms import AmountField, DateInput
from parcels.money import money_text

from . import rules
from .models import Estimate

AMOUNT_FIELDS = ("om_estimate", "reserve", "deficit", "surplus", "misc_income", "certified_credits")


class FiscalYearForm(forms.Form):
    """Start a new fiscal year: only the label; the year exists once its estimates are entered."""

    year = forms.CharField(label=_("Año fiscal"), max_length=9, help_text=_("Por ejemplo 2027-2028 (1 de julio a 30 de junio)."))

    def clean_year(self) -> str:
        value = self.cleaned_data["year"].strip()
        try:
            rules.fiscal_year_start(value)
        except rules.LevyRuleError:
            raise forms.ValidationError(_("Escriba el año fiscal como 2027-2028.")) from None
        return value


class EstimateForm(forms.Form):
    """¶1(1), ¶1(2), ¶1(3), ¶2, ¶3: what the Authority estimates and certifies for a year."""

    om_estimate = AmountField(
        label=_("Gastos de operación y mantenimiento (¶1(1))"),
        help_text=_("Total estimado de los gastos de O&M del Sistema de Riego para el año fiscal."),
    )
    reserve = AmountField(label=_("Fondo de reserva (¶1(2))"))
    deficit = AmountField(
        label=_("Déficit del Fondo de Explotación (¶2)"), required=False,
        help_text=_("Se suma. Indique un déficit o un superávit, no ambos."),
    )
    surplus = AmountField(
        label=_("Superávit del Fondo de Explotación (¶2)"), required=False,
        help_text=_("Se resta. Indique un déficit o un superávit, no ambos."),
    )
    misc_income = AmountField(
        label=_("Ingresos misceláneos (¶3)"),
        help_text=_("Ingresos del Sistema de Riego para el año fiscal que se restan antes del margen de seguridad."),
    )
    certified_credits = AmountField(
        label=_("Créditos certificados (¶1(3)), opcional"), required=False,
        help_text=_("Déjelo en blanco para que Hacienda calcule el factor (3) igual a los créditos que concede el padrón (¶7)."),
    )
    reason = forms.CharField(
        label=_("Razón del reemplazo"), required=False, widget=forms.Textarea(attrs={"rows": 3}),
        help_text=_("Obligatoria si reemplaza estimados ya certificados; queda en el historial."),
    )

    # The service refuses a reserve above the cap with its own message. The form checks it only
    # when other fields are wrong too, so that one submission shows every problem.
    always_check_cap = False

    def __init__(self, *args: Any, replacing: bool = True, reason_required: bool = False,
                 params: rules.LegalParameters | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.params = params
        self.fields["reserve"].help_text = _("¶1(2): no más del 2% del estimado de O&M.")
        if not replacing:
            del self.fields["reason"]  # the year's first estimates replace nothing
        elif reason_required:
            self.fields["reason"].required = True

    def show_previous_year(self, estimate: Estimate | None, label: str) -> None:
        """Beside each amount, what was certified for the year before (issue 18, point 17): the
        Authority compares as it types. Part of the help text, so a screen reader reads it with
        the field."""
        if estimate is None:
            return
        amounts = estimate.amounts()
        for name in AMOUNT_FIELDS:
            if name not in self.fields:
                continue
            value = amounts.get(name)
            shown = money_text(value) if value is not None else _("calculados por Hacienda (¶7)")
            previous = format_html('<span class="previous-year" data-field="{}">{}</span>', name,
                                   _("Certificado para %(y)s: %(v)s") % {"y": label, "v": shown})
            help_text = self.fields[name].help_text
            self.fields[name].help_text = format_html("{} {}", help_text, previous) if help_text else previous

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        for name in ("deficit", "surplus"):
            if data.get(name) is None and name not in self.errors:
                data[name] = Decimal("0.00")
        if data.get("deficit") and data.get("surplus"):
            message = _("Indique un déficit o un superávit, no ambos (¶2).")
            self.add_error("deficit", message)
            self.add_error("surplus", message)
        om, reserve = data.get("om_estimate"), data.get("reserve")
        if self.params is not None and om is not None and reserve is not None and (self.always_check_cap or self.errors):
            cap = rules.reserve_cap(om_estimate=om, params=self.params)
            if reserve > cap:
                # Word for word the refusal of services.estimate_enter (same message id).
                self.add_error("reserve", _("El fondo de reserva (%(r)s) excede el 2%% del estimado de O&M (tope %(c)s) (¶1(2)).")
                               % {"r": money_text(reserve), "c": money_text(cap)})
        return data

    def service_kwargs(self) -> dict[str, Any]:
        data = self.cleaned_data
        return {
            "om_estimate": data["om_estimate"], "reserve": data["reserve"], "misc_income": data["misc_income"],
            "deficit": data["deficit"], "surplus": data["surplus"], "certified_credits": data.get("certified_credits"),
            "reason": data.get("reason", ""),
        }

    @staticmethod
    def initial_from(estimate: Estimate | None) -> dict[str, Any]:
        """The estimate's amounts as typed on the form (``1,250,000.00``); a zero deficit or
        surplus is left blank so that only one of the two shows."""
        if estimate is None:
            return {}
        amounts = estimate.amounts()
        return {
            name: f"{amounts[name]:,.2f}" for name in AMOUNT_FIELDS
            if amounts.get(name) is not None and not (name in ("deficit", "surplus") and not amounts[name])
        }


class WhatIfForm(EstimateForm):
    """The same amounts for a simulation: nothing is saved, so no reason is asked, and the
    ¶1(2) cap is checked here since no service runs."""

    always_check_cap = True

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, replacing=False, **kwargs)


class CorrectionForm(forms.Form):
    """A supplementary entry on a finalized roll line (¶9, ¶11)."""

    parcel_id = forms.CharField(label=_("Número de catastro"), max_length=40)
    om_charge_delta = forms.DecimalField(label=_("Cambio en el cargo de O&M (¶9)"), max_digits=14, decimal_places=2, initial=0,
                                         help_text=_("Positivo si se debe más; negativo si se debe menos."))
    credit_delta = forms.DecimalField(label=_("Cambio en el crédito por derechos de agua cedidos (¶7)"), max_digits=14,
                                      decimal_places=2, initial=0,
                                      help_text=_("Solo con un por ciento de la sec. 372 distinto del que el renglón ya "
                                                  "tiene; en 0, el crédito sigue al cargo y al por ciento."))
    credit_percent = forms.DecimalField(label=_("Nuevo por ciento de crédito (sec. 372)"), max_digits=5, decimal_places=2,
                                        required=False, min_value=0, max_value=100,
                                        help_text=_("Sin cambio en el crédito, el crédito pasa a ser este por ciento del "
                                                    "cargo corregido y los plazos se dividen de nuevo (¶7, ¶12)."))
    reason = forms.CharField(label=_("Razón"), widget=forms.Textarea(attrs={"rows": 2}))
    due_date = forms.DateField(label=_("Vence"), widget=DateInput(), required=False,
                               help_text=_("Opcional: una fecha posterior a la que dicta la regla, nunca anterior."))
