"""Forms of Hacienda's and the Authority's collection pages. They only parse what was typed;
``billing.services`` decides (and refuses with ``BillingError``), so every rule still runs where
the write happens."""

from __future__ import annotations

import csv
import io
import re
from datetime import date
from decimal import Decimal, InvalidOperation
from typing import Any

from django import forms
from django.utils.translation import gettext_lazy as _

from levy.models import FiscalYear
from parcels.addresses import zip_problem
from parcels.forms import AmountField, DateInput
from parcels.models import Parcel

from . import accounts
from .errors import BillingError
from .models import Office, SeizureStep, WaterDelivery

CSV_MAX_BYTES = 5 * 1024 * 1024
WATER_COLUMNS = ("parcel_id", "delivered_on", "acre_feet")
WATER_LAND_COLUMN = "land"  # optional: gravity or pumped; required by the service for a parcel with both


# --- 1. The delinquent list (¶12) ---------------------------------------------------------------

SORTS = {
    "days_late": _("días de atraso"),
    "-days_late": _("días de atraso (mayor primero)"),
    "balance": _("saldo"),
    "-balance": _("saldo (mayor primero)"),
}


class DelinquentFilterForm(forms.Form):
    """Filters of the delinquent list. Every field is optional: an empty form lists everything
    late as of today."""

    q = forms.CharField(label=_("Buscar (catastro o dueño)"), required=False, max_length=200,
                        widget=forms.TextInput(attrs={"type": "search"}))
    as_of = forms.DateField(label=_("Al día"), required=False, widget=DateInput())
    fiscal_year = forms.ChoiceField(label=_("Año fiscal"), required=False)
    semester = forms.TypedChoiceField(
        label=_("Plazo (semestre)"), required=False, coerce=int, empty_value=None,
        choices=[("", _("Ambos")), (1, _("1 (julio)")), (2, _("2 (enero)"))],
    )
    min_balance = AmountField(label=_("Saldo mínimo"), required=False, min_value=Decimal("0"))
    min_days_late = forms.IntegerField(label=_("Días de atraso, mínimo"), required=False, min_value=0, max_value=36500)
    o = forms.ChoiceField(label=_("Orden"), required=False, choices=[("", _("último día para pagar"))] + list(SORTS.items()))

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        labels = FiscalYear.objects.order_by("-start").values_list("label", flat=True)
        self.fields["fiscal_year"].choices = [("", _("Todos"))] + [(label, label) for label in labels]


# --- 2. Seizure (¶14) and 3. debt certificates (¶11) ---------------------------------------------


class SeizureStepForm(forms.Form):
    """The step the page offers next; the service checks the order and the 30-day term again."""

    kind = forms.ChoiceField(choices=SeizureStep.Kind.choices, widget=forms.HiddenInput)


class CertificateForm(forms.Form):
    as_of = forms.DateField(
        label=_("Deuda al día"), widget=DateInput(),
        help_text=_("La certificación muestra lo adeudado a esa fecha, con los recargos del ¶12."),
    )


# --- 5. Water before the levy starts (¶8, sec. 374a) --------------------------------------------


class WaterDeliveryForm(forms.Form):
    parcel_id = forms.CharField(label=_("Número de catastro"), max_length=40)
    delivered_on = forms.DateField(label=_("Fecha de la entrega"), widget=DateInput())
    acre_feet = forms.DecimalField(
        label=_("Acres-pie"), max_digits=10, decimal_places=3, min_value=Decimal("0.001"),
        widget=forms.TextInput(attrs={"inputmode": "decimal", "autocomplete": "off"}),
    )
    land = forms.ChoiceField(
        label=_("Tierra a la que fue el agua"), required=False,
        choices=[("", _("la única del predio")), *WaterDelivery.Land.choices],
        help_text=_("Obligatorio si el predio tiene tierra por gravedad y por bombeo: la tierra que el dueño riega con sus "
                    "bombas paga la tarifa de bombeo (sec. 374a)."),
    )

    def clean_parcel_id(self) -> Parcel:
        """The parcel itself (``cleaned_data["parcel_id"]`` is a ``Parcel``), or the service's refusal."""
        try:
            return accounts.parcel_by_code(self.cleaned_data["parcel_id"].strip())
        except BillingError as exc:
            raise forms.ValidationError(str(exc)) from None


class WaterImportForm(forms.Form):
    """A CSV with the columns ``parcel_id, delivered_on, acre_feet``. The form checks only the
    shape of each line (so a malformed line is an error message, never a crash); the service
    checks each delivery and records all of them or none."""

    file = forms.FileField(
        label=_("Archivo CSV de entregas"), widget=forms.ClearableFileInput(attrs={"accept": ".csv,text/csv"}),
        help_text=_("Columnas: parcel_id, delivered_on (AAAA-MM-DD), acre_feet y land (gravity o pumped; obligatoria para un "
                    "predio con ambas tierras). Se registran todas las líneas o ninguna."),
    )

    def clean_file(self) -> bytes:
        upload = self.cleaned_data["file"]
        if upload.size > CSV_MAX_BYTES:
            raise forms.ValidationError(_("El archivo pasa de 5 MB."))
        data = upload.read()
        errors = water_csv_shape_errors(data)
        if errors:
            raise forms.ValidationError(errors)
        return data


def water_csv_shape_errors(data: bytes) -> list[str]:
    """Every line whose shape is wrong (missing value, bad date, acre-feet not a number with at
    most three decimals); an empty list when the service can take the file."""
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        return [str(_("El archivo no es UTF-8."))]
    reader = csv.DictReader(io.StringIO(text))
    missing = set(WATER_COLUMNS) - set(reader.fieldnames or [])
    if missing:
        return [str(_("línea 1: faltan columnas %(c)s")) % {"c": ", ".join(sorted(missing))}]
    errors: list[str] = []
    rows = 0
    for line, row in enumerate(reader, start=2):
        rows += 1
        values = {name: (row.get(name) or "").strip() for name in WATER_COLUMNS}
        empty = [name for name, value in values.items() if not value]
        if empty:
            errors.append(str(_("línea %(l)s: falta %(c)s")) % {"l": line, "c": ", ".join(empty)})
            continue
        land = (row.get(WATER_LAND_COLUMN) or "").strip()
        if land and land not in WaterDelivery.Land.values:
            errors.append(str(_("línea %(l)s: tierra «%(v)s» (use gravity o pumped)")) % {"l": line, "v": land})
        try:
            date.fromisoformat(values["delivered_on"])
        except ValueError:
            errors.append(str(_("línea %(l)s: fecha «%(v)s» (use AAAA-MM-DD)")) % {"l": line, "v": values["delivered_on"]})
        try:
            feet = Decimal(values["acre_feet"])
        except InvalidOperation:
            errors.append(str(_("línea %(l)s: acres-pie «%(v)s» no es un número")) % {"l": line, "v": values["acre_feet"]})
            continue
        exponent = feet.as_tuple().exponent
        if not feet.is_finite() or (isinstance(exponent, int) and exponent < -3) or abs(feet) >= Decimal("10000000"):
            errors.append(str(_("línea %(l)s: acres-pie «%(v)s» (hasta tres decimales)")) % {"l": line, "v": values["acre_feet"]})
    if not rows:
        errors.append(str(_("El archivo no tiene entregas.")))
    return errors


class WaterBillForm(forms.Form):
    # No max_length: Django would render it as ``maxlength``, which (like ``placeholder``) is not
    # allowed on ``<input type="month">``; the browser's month picker sends AAAA-MM.
    month = forms.CharField(
        label=_("Mes a facturar"), widget=forms.TextInput(attrs={"type": "month"}),
        help_text=_("Las entregas del mes se convierten en un cargo por predio que vence el día 1 del mes siguiente."),
    )

    def clean_month(self) -> tuple[int, int]:
        value = self.cleaned_data["month"].strip()
        try:
            if len(value) != 7:
                raise ValueError(value)
            year, month = (int(part) for part in value.split("-"))
            date(year, month, 1)
        except ValueError:
            raise forms.ValidationError(_("Use el formato AAAA-MM.")) from None
        return year, month


# --- 6. Office closures (¶12) --------------------------------------------------------------------


class OfficeClosureForm(forms.Form):
    day = forms.DateField(label=_("Día cerrado"), widget=DateInput())
    reason = forms.CharField(label=_("Razón"), max_length=200, help_text=_("Por ejemplo: huracán; oficinas cerradas por orden del Gobernador."))


# --- The Collector's offices (¶13): what the bills print ----------------------------------------


class OfficeForm(forms.ModelForm):
    """An office's printed details; an address is whole (line 1, town and ZIP) or absent."""

    class Meta:
        model = Office
        fields = ["name", "address_line1", "address_line2", "town", "zip_code", "phone", "hours_es", "hours_en",
                  "ways_to_pay_es", "ways_to_pay_en", "on_bills"]
        widgets = {"ways_to_pay_es": forms.Textarea(attrs={"rows": 3}), "ways_to_pay_en": forms.Textarea(attrs={"rows": 3})}

    def validate_unique(self) -> None:
        """The one-office-on-bills mark moves (``office_update``), so it is not refused here."""

    def clean_zip_code(self) -> str:
        value = self.cleaned_data["zip_code"].strip()
        problem = zip_problem(value, "PR")
        if problem:
            raise forms.ValidationError(problem)
        return value

    def clean_phone(self) -> str:
        value = " ".join(self.cleaned_data["phone"].split())
        if value and len(re.sub(r"\D", "", value)) not in (10, 11):
            raise forms.ValidationError(_("Escriba el teléfono con su código de área, por ejemplo (787) 899-0000."))
        return value

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        parts = {name: (data.get(name) or "").strip() for name in ("address_line1", "address_line2", "town", "zip_code")}
        if any(parts.values()):
            required = {"address_line1": _("Escriba la línea 1 de la dirección."), "town": _("Escriba el pueblo."),
                        "zip_code": _("Escriba el código postal (ZIP), por ejemplo 00667.")}
            for name, message in required.items():
                if not parts[name] and name not in self.errors:
                    self.add_error(name, message)
        return data
