"""Hacienda's and the Authority's collection pages (namespace ``collections``): the delinquent list
(¶12), the seizure procedure (¶14), debt certificates (¶11), the collection dashboard with the
¶1(2)/¶2 split, water sold before the levy starts (¶8, sec. 374a) and office closures (¶12).

Views bind a form, call one service, then redirect or render. Landowners never reach these pages.

Forms of Hacienda's and the Authority's collection pages. They only parse what was typed;
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
from django.contrib import messages
from django.core.exceptions import ValidationError
from django.core.paginator import Page, Paginator
from django.db.models import Prefetch
from django.http import FileResponse, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django.views.decorators.http import require_POST

from levy.models import FiscalYear
from parcels import review, search
from parcels.addresses import zip_problem
from parcels.forms import AmountField, DateInput
from parcels.models import Parcel
from parcels.money import money_text
from parcels.replica import reads_replica
from parcels.roles import AUDITOR, AUTHORITY, COLLECTOR, HACIENDA, SUPERVISOR, role_required

from .. import accounts, charts, delinquency, documents
from ..errors import BillingError
from ..models import (
    BillBatch,
    BillBatchPart,
    DebtCertificate,
    Office,
    OfficeClosure,
    SeizureCase,
    SeizureStep,
    WaterDelivery,
)
from ..pdf import render_certificate
from ..selectors import debt_table
from ..services import bills, collection
from ..services import water as water_services
from .counter import document_refused

CSV_MAX_BYTES = 5 * 1024 * 1024
WATER_COLUMNS = ("parcel_id", "delivered_on", "acre_feet")
WATER_LAND_COLUMN = "land"  # optional: gravity or pumped; required by the service for a parcel with both


# --- 1. The delinquent list (¶12) ---------------------------------------------------------------

SORTS = {
    "days_late": gettext_lazy("días de atraso"),
    "-days_late": gettext_lazy("días de atraso (mayor primero)"),
    "balance": gettext_lazy("saldo"),
    "-balance": gettext_lazy("saldo (mayor primero)"),
}


class DelinquentFilterForm(forms.Form):
    """Filters of the delinquent list. Every field is optional: an empty form lists everything
    late as of today."""

    q = forms.CharField(label=gettext_lazy("Buscar (catastro o dueño)"), required=False, max_length=200,
                        widget=forms.TextInput(attrs={"type": "search"}))
    as_of = forms.DateField(label=gettext_lazy("Al día"), required=False, widget=DateInput())
    fiscal_year = forms.ChoiceField(label=gettext_lazy("Año fiscal"), required=False)
    semester = forms.TypedChoiceField(
        label=gettext_lazy("Plazo (semestre)"), required=False, coerce=int, empty_value=None,
        choices=[("", gettext_lazy("Ambos")), (1, gettext_lazy("1 (julio)")), (2, gettext_lazy("2 (enero)"))],
    )
    min_balance = AmountField(label=gettext_lazy("Saldo mínimo"), required=False, min_value=Decimal("0"))
    min_days_late = forms.IntegerField(label=gettext_lazy("Días de atraso, mínimo"), required=False, min_value=0, max_value=36500)
    o = forms.ChoiceField(label=gettext_lazy("Orden"), required=False, choices=[("", gettext_lazy("último día para pagar"))] + list(SORTS.items()))

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        labels = FiscalYear.objects.order_by("-start").values_list("label", flat=True)
        self.fields["fiscal_year"].choices = [("", gettext_lazy("Todos"))] + [(label, label) for label in labels]


# --- 2. Seizure (¶14) and 3. debt certificates (¶11) ---------------------------------------------


class SeizureStepForm(forms.Form):
    """The step the page offers next; the service checks the order and the 30-day term again."""

    kind = forms.ChoiceField(choices=SeizureStep.Kind.choices, widget=forms.HiddenInput)


class CertificateForm(forms.Form):
    as_of = forms.DateField(
        label=gettext_lazy("Deuda al día"), widget=DateInput(),
        help_text=gettext_lazy("La certificación muestra lo adeudado a esa fecha, con los recargos del ¶12."),
    )


# --- 5. Water before the levy starts (¶8, sec. 374a) --------------------------------------------


class WaterDeliveryForm(forms.Form):
    parcel_id = forms.CharField(label=gettext_lazy("Número de catastro"), max_length=40)
    delivered_on = forms.DateField(label=gettext_lazy("Fecha de la entrega"), widget=DateInput())
    acre_feet = forms.DecimalField(
        label=gettext_lazy("Acres-pie"), max_digits=10, decimal_places=3, min_value=Decimal("0.001"),
        widget=forms.TextInput(attrs={"inputmode": "decimal", "autocomplete": "off"}),
    )
    land = forms.ChoiceField(
        label=gettext_lazy("Tierra a la que fue el agua"), required=False,
        choices=[("", gettext_lazy("la única del predio")), *WaterDelivery.Land.choices],
        help_text=gettext_lazy("Obligatorio si el predio tiene tierra por gravedad y por bombeo: la tierra que el dueño riega con sus "
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
        label=gettext_lazy("Archivo CSV de entregas"), widget=forms.ClearableFileInput(attrs={"accept": ".csv,text/csv"}),
        help_text=gettext_lazy("Columnas: parcel_id, delivered_on (AAAA-MM-DD), acre_feet y land (gravity o pumped; obligatoria para un "
                    "predio con ambas tierras). Se registran todas las líneas o ninguna."),
    )

    def clean_file(self) -> bytes:
        upload = self.cleaned_data["file"]
        if upload.size > CSV_MAX_BYTES:
            raise forms.ValidationError(gettext_lazy("El archivo pasa de 5 MB."))
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
        return [str(gettext_lazy("El archivo no es UTF-8."))]
    reader = csv.DictReader(io.StringIO(text))
    missing = set(WATER_COLUMNS) - set(reader.fieldnames or [])
    if missing:
        return [str(gettext_lazy("línea 1: faltan columnas %(c)s")) % {"c": ", ".join(sorted(missing))}]
    errors: list[str] = []
    rows = 0
    for line, row in enumerate(reader, start=2):
        rows += 1
        values = {name: (row.get(name) or "").strip() for name in WATER_COLUMNS}
        empty = [name for name, value in values.items() if not value]
        if empty:
            errors.append(str(gettext_lazy("línea %(l)s: falta %(c)s")) % {"l": line, "c": ", ".join(empty)})
            continue
        land = (row.get(WATER_LAND_COLUMN) or "").strip()
        if land and land not in WaterDelivery.Land.values:
            errors.append(str(gettext_lazy("línea %(l)s: tierra «%(v)s» (use gravity o pumped)")) % {"l": line, "v": land})
        try:
            date.fromisoformat(values["delivered_on"])
        except ValueError:
            errors.append(str(gettext_lazy("línea %(l)s: fecha «%(v)s» (use AAAA-MM-DD)")) % {"l": line, "v": values["delivered_on"]})
        try:
            feet = Decimal(values["acre_feet"])
        except InvalidOperation:
            errors.append(str(gettext_lazy("línea %(l)s: acres-pie «%(v)s» no es un número")) % {"l": line, "v": values["acre_feet"]})
            continue
        exponent = feet.as_tuple().exponent
        if not feet.is_finite() or (isinstance(exponent, int) and exponent < -3) or abs(feet) >= Decimal("10000000"):
            errors.append(str(gettext_lazy("línea %(l)s: acres-pie «%(v)s» (hasta tres decimales)")) % {"l": line, "v": values["acre_feet"]})
    if not rows:
        errors.append(str(gettext_lazy("El archivo no tiene entregas.")))
    return errors


class WaterBillForm(forms.Form):
    # No max_length: Django would render it as ``maxlength``, which (like ``placeholder``) is not
    # allowed on ``<input type="month">``; the browser's month picker sends AAAA-MM.
    month = forms.CharField(
        label=gettext_lazy("Mes a facturar"), widget=forms.TextInput(attrs={"type": "month"}),
        help_text=gettext_lazy("Las entregas del mes se convierten en un cargo por predio que vence el día 1 del mes siguiente."),
    )

    def clean_month(self) -> tuple[int, int]:
        value = self.cleaned_data["month"].strip()
        try:
            if len(value) != 7:
                raise ValueError(value)
            year, month = (int(part) for part in value.split("-"))
            date(year, month, 1)
        except ValueError:
            raise forms.ValidationError(gettext_lazy("Use el formato AAAA-MM.")) from None
        return year, month


# --- 6. Office closures (¶12) --------------------------------------------------------------------


class OfficeClosureForm(forms.Form):
    day = forms.DateField(label=gettext_lazy("Día cerrado"), widget=DateInput())
    reason = forms.CharField(label=gettext_lazy("Razón"), max_length=200, help_text=gettext_lazy("Por ejemplo: huracán; oficinas cerradas por orden del Gobernador."))


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
            raise forms.ValidationError(gettext_lazy("Escriba el teléfono con su código de área, por ejemplo (787) 899-0000."))
        return value

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        parts = {name: (data.get(name) or "").strip() for name in ("address_line1", "address_line2", "town", "zip_code")}
        if any(parts.values()):
            required = {"address_line1": gettext_lazy("Escriba la línea 1 de la dirección."), "town": gettext_lazy("Escriba el pueblo."),
                        "zip_code": gettext_lazy("Escriba el código postal (ZIP), por ejemplo 00667.")}
            for name, message in required.items():
                if not parts[name] and name not in self.errors:
                    self.add_error(name, message)
        return data


DELINQUENT_READERS = (HACIENDA, AUDITOR)
SEIZURE_USERS = (HACIENDA,)
CERTIFICATE_USERS = (HACIENDA, COLLECTOR, SUPERVISOR)  # who ``collection.certificate_issue`` accepts
DASHBOARD_READERS = (HACIENDA, AUDITOR, AUTHORITY)  # the Authority reads the ¶1(2)/¶2 split of its funds
WATER_USERS = (AUTHORITY,)
CLOSURE_USERS = (HACIENDA,)

PAGE_SIZE = 50
RECENT_DELIVERIES = 50
ZERO = Decimal("0.00")  # dollars


def _pdf_response(data: bytes, filename: str) -> HttpResponse:
    response = HttpResponse(data, content_type="application/pdf")
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    response["X-Content-Type-Options"] = "nosniff"
    return response


# ---------------------------------------------------------------------------------------------
# 1. The delinquent list (¶12)
# ---------------------------------------------------------------------------------------------


def _page_number(value: str | None) -> int:
    """The page asked for; anything but a whole number is the first (as ``Paginator.get_page``)."""
    try:
        return max(1, int(value or 1))
    except ValueError:
        return 1


def _delinquent_csv(found: list[delinquency.Line], as_of: date) -> HttpResponse:
    """The same columns as ``manage.py billing delinquent`` (``delinquency.csv_text``)."""
    response = HttpResponse(delinquency.csv_text(found), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="morosos-{as_of.isoformat()}.csv"'
    return response


@reads_replica
@role_required(*DELINQUENT_READERS)
def delinquent(request: HttpRequest) -> HttpResponse:
    today = timezone.localdate()
    query = request.GET.copy()
    if not query.get("as_of"):
        query["as_of"] = today.strftime("%d/%m/%Y")  # as of today unless asked, shown day first like every date box
    form = DelinquentFilterForm(query)
    valid = form.is_valid()
    data: dict[str, Any] = form.cleaned_data if valid else {}
    as_of = data.get("as_of") or today
    # Issue 20: the list computed in SQL (``billing.delinquency``): the CSV is all of it, filtered
    # and sorted as the page is; the page is one page of it and the totals of all of it, and
    # costs the same whatever the district's size.
    filters = None
    if valid:
        filters = delinquency.Filters(
            as_of=as_of, fiscal_year=data.get("fiscal_year") or "", number=data.get("semester"),
            min_balance=data.get("min_balance"), min_days_late=data.get("min_days_late") or 0,
            parcels=search.parcels_matching(Parcel.objects.all(), data["q"]) if data.get("q") else None,
        )
    if filters is not None and request.GET.get("format") == "csv":
        return _delinquent_csv(delinquency.kept_lines(filters, order=data.get("o") or ""), as_of)
    lines: list[delinquency.Line] = []
    totals = delinquency.Totals()
    number = _page_number(request.GET.get("page"))
    if filters is not None:
        lines, totals, number = delinquency.page(filters, order=data.get("o") or "", number=number, size=PAGE_SIZE)
    page = Page(delinquency.with_records(lines), number, Paginator(range(totals.count), PAGE_SIZE))
    csv_query = request.GET.copy()
    csv_query.pop("page", None)
    csv_query["format"] = "csv"
    totals_shown = {"principal": totals.principal, "surcharge": totals.surcharge, "paid": totals.paid,
                    "balance": totals.balance, "parcels": totals.parcels}
    return render(request, "billing/hacienda/delinquent.html", {
        "form": form, "valid": valid, "as_of": as_of, "today": today, "page": page, "totals": totals_shown,
        "count": totals.count, "csv_query": csv_query.urlencode(), "sorts": SORTS,
    })


# ---------------------------------------------------------------------------------------------
# 2. The seizure procedure (¶14)
# ---------------------------------------------------------------------------------------------


SEIZURE_ACT = "collections.seizure"


@role_required(*SEIZURE_USERS)
def seizure(request: HttpRequest, pk: int) -> HttpResponse:
    """¶14: the parcel's procedure and its next step. The step's form leads to a review page (the
    debt the notice freezes, its term, who signs it, in which language); the step is issued only
    from that page's POST, whose fingerprint must match the figures still current (issue 18)."""
    parcel = get_object_or_404(Parcel.objects.select_related("owner"), pk=pk)
    form = SeizureStepForm(request.POST or None)
    today = timezone.localdate()
    if request.method == "POST" and form.is_valid():
        kind = form.cleaned_data["kind"]
        try:
            preview = collection.seizure_step_preview(acting_user=request.user, parcel=parcel, kind=kind, on=today)
            sent = review.was_sent(request.POST)
            changed = sent and not review.reviewed(request.POST, SEIZURE_ACT, preview.figures())
            if changed or not sent:
                return render(request, "billing/hacienda/seizure_review.html", {
                    "parcel": preview.parcel, "p": preview, "table": debt_table(preview.debt, owing_only=True),
                    "changed": changed, "fingerprint": review.fingerprint(SEIZURE_ACT, preview.figures()),
                    "review_field": review.FIELD,
                }, status=409 if changed else 200)
            step = collection.seizure_step_issue(acting_user=request.user, parcel=parcel, kind=kind, on=today)
        except BillingError as exc:
            form.add_error(None, str(exc))
        else:
            messages.success(request, _("%(k)s %(n)s emitida.") % {"k": step.get_kind_display(), "n": step.number})
            return redirect("collections:seizure", pk=parcel.pk)
    steps = SeizureStep.objects.select_related("issued_by").defer("pdf", "debt")
    cases = list(SeizureCase.objects.filter(parcel=parcel).select_related("opened_by")
                 .prefetch_related(Prefetch("steps", queryset=steps)).order_by("-opened_at", "-id"))
    debt = accounts.statement(parcel=parcel, as_of=today)
    following = collection.seizure_step_next(parcel=parcel)
    next_kind = following.kind
    return render(request, "billing/hacienda/seizure.html", {
        "parcel": parcel, "today": today, "cases": cases, "table": debt_table(debt, owing_only=True), "total_due": debt.total_due,
        "form": form, "next_kind": next_kind, "next_label": SeizureStep.Kind(next_kind).label if next_kind else "",
        "notice": following.notice, "available_on": following.available_on, "available": following.available(today),
    })


@role_required(*SEIZURE_USERS)
def seizure_pdf(request: HttpRequest, pk: int) -> HttpResponse:
    """The stored bytes of an issued step, exactly as issued (never rendered again)."""
    step = get_object_or_404(SeizureStep.objects.only("number", "pdf", "sha256"), pk=pk)
    try:
        data = documents.seizure_step_pdf(step)  # byte-identical to its hash, or refused (issue 20)
    except documents.DocumentAltered as exc:
        return document_refused(exc)
    return _pdf_response(data, f"{step.number}.pdf")


# ---------------------------------------------------------------------------------------------
# 3. Debt certificates (¶11)
# ---------------------------------------------------------------------------------------------


@role_required(*CERTIFICATE_USERS)
def certificates(request: HttpRequest, pk: int) -> HttpResponse:
    parcel = get_object_or_404(Parcel.objects.select_related("owner"), pk=pk)
    today = timezone.localdate()
    form = CertificateForm(request.POST or None, initial={"as_of": today})
    if request.method == "POST" and form.is_valid():
        try:
            certificate = collection.certificate_issue(acting_user=request.user, parcel=parcel, as_of=form.cleaned_data["as_of"])
        except BillingError as exc:
            form.add_error(None, str(exc))
        else:
            messages.success(request, _("Certificación de deuda %(n)s emitida.") % {"n": certificate.number})
            return redirect("collections:certificates", pk=parcel.pk)
    issued = DebtCertificate.objects.filter(parcel=parcel).select_related("issued_by", "supersedes", "superseded_by")
    return render(request, "billing/hacienda/certificates.html", {
        "parcel": parcel, "form": form, "certificates": issued, "today": today,
        "table": debt_table(accounts.statement(parcel=parcel, as_of=today)),  # what a certificate issued today would print
    })


@role_required(*CERTIFICATE_USERS)
def certificate_pdf(request: HttpRequest, pk: int) -> HttpResponse:
    """Rendered from the certificate's immutable snapshot (the data never changes; storing the
    bytes like the seizure steps would also pin the WeasyPrint output)."""
    certificate = get_object_or_404(DebtCertificate.objects.select_related("supersedes"), pk=pk)
    try:
        data = render_certificate(certificate=certificate)  # the stored file, byte-identical to its hash (issue 20)
    except documents.DocumentAltered as exc:
        return document_refused(exc)
    return _pdf_response(data, f"{certificate.number}.pdf")


# ---------------------------------------------------------------------------------------------
# 4. The collection dashboard
# ---------------------------------------------------------------------------------------------


@reads_replica
@role_required(*DASHBOARD_READERS)
def dashboard(request: HttpRequest) -> HttpResponse:
    data = charts.dashboard_kept(as_of=timezone.localdate())
    return render(request, "billing/hacienda/dashboard.html", {
        "data": data, "chart": charts.bar_chart(data.rows), "chart_desc": charts.chart_description(data.rows),
    })


# ---------------------------------------------------------------------------------------------
# 5. Water before the levy starts (¶8, sec. 374a)
# ---------------------------------------------------------------------------------------------


def _water_page(request: HttpRequest, *, delivery_form: WaterDeliveryForm | None = None,
                import_form: WaterImportForm | None = None, import_errors: list[str] | None = None,
                bill_form: WaterBillForm | None = None) -> HttpResponse:
    today = timezone.localdate()
    last_month = date(today.year - (today.month == 1), (today.month - 2) % 12 + 1, 1)
    deliveries = WaterDelivery.objects.select_related("parcel", "charge", "recorded_by").order_by("-delivered_on", "-id")
    return render(request, "billing/hacienda/water.html", {
        "delivery_form": delivery_form or WaterDeliveryForm(initial={"delivered_on": today}),
        "import_form": import_form or WaterImportForm(), "import_errors": import_errors or [],
        "bill_form": bill_form or WaterBillForm(initial={"month": last_month.strftime("%Y-%m")}),
        "deliveries": deliveries[:RECENT_DELIVERIES],
    })


@role_required(*WATER_USERS)
def water(request: HttpRequest) -> HttpResponse:
    form = WaterDeliveryForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            delivery = water_services.water_delivery_record(
                acting_user=request.user, parcel=data["parcel_id"], delivered_on=data["delivered_on"], acre_feet=data["acre_feet"],
                land=data["land"] or None,
            )
        except BillingError as exc:
            form.add_error(None, str(exc))
        else:
            messages.success(request, _("Entrega registrada: %(p)s, tierra %(t)s, %(f)s acres-pie a $%(r)s = $%(a)s.") % {
                "p": delivery.parcel.parcel_id, "t": delivery.get_land_display(), "f": delivery.acre_feet, "r": delivery.rate,
                "a": f"{delivery.amount:,.2f}"})
            return redirect("collections:water")
    return _water_page(request, delivery_form=form if request.method == "POST" else None)


@role_required(*WATER_USERS)
@require_POST
def water_import(request: HttpRequest) -> HttpResponse:
    form = WaterImportForm(request.POST, request.FILES)
    errors: list[str] = []
    if form.is_valid():
        count, errors = water_services.water_deliveries_import(acting_user=request.user, data=form.cleaned_data["file"])
        if not errors:
            messages.success(request, _("%(n)s entregas registradas.") % {"n": count})
            return redirect("collections:water")
    return _water_page(request, import_form=form, import_errors=[str(error) for error in errors])


@role_required(*WATER_USERS)
@require_POST
def water_bill(request: HttpRequest) -> HttpResponse:
    form = WaterBillForm(request.POST)
    if form.is_valid():
        year, month = form.cleaned_data["month"]
        try:
            count = water_services.water_charges_issue(acting_user=request.user, year=year, month=month)
        except BillingError as exc:
            form.add_error(None, str(exc))
        else:
            if count:
                messages.success(request, _("%(n)s cargos de agua emitidos para %(m)02d/%(y)s.") % {"n": count, "m": month, "y": year})
            else:
                messages.info(request, _("No hay entregas sin facturar en %(m)02d/%(y)s.") % {"m": month, "y": year})
            return redirect("collections:water")
    return _water_page(request, bill_form=form)


# ---------------------------------------------------------------------------------------------
# 6. Office closures (¶12)
# ---------------------------------------------------------------------------------------------


@role_required(*CLOSURE_USERS)
def closures(request: HttpRequest) -> HttpResponse:
    form = OfficeClosureForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            closure = collection.office_closure_add(acting_user=request.user, day=form.cleaned_data["day"], reason=form.cleaned_data["reason"])
        except ValidationError as exc:
            form.add_error(None, exc)
        else:
            messages.success(request, _closure_outcome_message(_closures_with_outcome().get(pk=closure.pk)))
            return redirect("collections:closures")
    return render(request, "billing/hacienda/closures.html", {
        "form": form, "closures": _closures_with_outcome().select_related("created_by").order_by("-day"),
    })


def _closures_with_outcome() -> Any:
    """Each closure with what recording it posted (issue 18): the last days it moved
    (``LastDayMove``) and the surcharge it gave back (``GiveBack.surcharge``)."""
    from django.db.models import Count, DecimalField, OuterRef, Subquery, Sum
    from django.db.models.functions import Coalesce

    from ..models import GiveBack, LastDayMove

    moves = LastDayMove.objects.filter(closure=OuterRef("pk")).values("closure").annotate(n=Count("pk")).values("n")
    backs = GiveBack.objects.filter(closure=OuterRef("pk")).values("closure").annotate(t=Sum("surcharge")).values("t")
    money = DecimalField(max_digits=14, decimal_places=2)
    return OfficeClosure.objects.annotate(
        moved=Coalesce(Subquery(moves), 0),
        surcharge_back=Coalesce(Subquery(backs, output_field=money), Decimal("0.00"), output_field=money),
    )


def _closure_outcome_message(closure: Any) -> str:
    """¶12: what the closure just recorded did, from the rows it posted."""
    from django.utils.formats import date_format
    from django.utils.translation import ngettext

    day = date_format(closure.day, "SHORT_DATE_FORMAT")
    if not closure.moved:
        return _("Cierre del %(d)s registrado. Ningún cargo emitido tenía ese día como último día para pagar: no se movió "
                 "ninguno ni se devolvió recargo.") % {"d": day}
    moved = ngettext(
        "Cierre del %(d)s registrado: %(n)s último día para pagar pasó al siguiente día laborable",
        "Cierre del %(d)s registrado: %(n)s últimos días para pagar pasaron al siguiente día laborable", closure.moved,
    ) % {"d": day, "n": f"{closure.moved:,}"}
    if closure.surcharge_back > 0:
        back = _("se devolvieron %(s)s de recargo ya pagado que con el nuevo día no se debía (queda como crédito o paga "
                 "el cargo abierto más antiguo).") % {"s": money_text(closure.surcharge_back)}
    else:
        back = _("no había recargo pagado que devolver.")
    return f"{moved}; {back}"


# --- Bulk printing of bills -------------------------------------------------------------------


@role_required(HACIENDA)
def bill_batches(request: HttpRequest) -> HttpResponse:
    """Hacienda prints a semester's bills as merged PDFs made by a background job."""
    years = list(FiscalYear.objects.filter(levies__status="final").distinct().values_list("label", flat=True))
    error = ""
    if request.method == "POST":
        try:
            number = int(request.POST.get("number", "0"))
            prefix = request.POST.get("parcel_prefix", "").strip()
            batch = bills.bill_batch_start(request.user, request.POST.get("fiscal_year", ""), number,
                                               {"parcel_prefix": prefix} if prefix else None)
        except (ValueError, BillingError) as exc:
            error = str(exc) if isinstance(exc, BillingError) else _("Elija el plazo 1 (julio) o 2 (enero).")
        else:
            return redirect("collections:bill-batch", pk=batch.pk)
    batches = BillBatch.objects.select_related("fiscal_year", "job", "created_by").order_by("-created_at")[:20]
    return render(request, "billing/hacienda/bill_batches.html", {"years": years, "batches": batches, "error": error,
                                                                  "posted": request.POST})


@role_required(HACIENDA)
def bill_batch(request: HttpRequest, pk: int) -> HttpResponse:
    batch = get_object_or_404(BillBatch.objects.select_related("fiscal_year", "job"), pk=pk)
    error = ""
    if request.method == "POST":  # "Reanudar": a failed batch goes on where it stopped
        try:
            bills.bill_batch_resume(request.user, batch)
        except BillingError as exc:
            error = str(exc)
        else:
            return redirect("collections:bill-batch", pk=batch.pk)
    parts = list(batch.parts.all())
    # issue 20: after its job has numbered the bills, the parts' tasks render them; the batch is
    # still printing until the last part sets ``finished_at``
    printing = (batch.parts_planned is not None and batch.finished_at is None and batch.job is not None
                and batch.job.status == "done")
    return render(request, "billing/hacienda/bill_batch.html", {
        "batch": batch, "job": batch.job, "parts": parts, "bills": batch.bills.count(), "error": error,
        "running": printing or (batch.job is not None and batch.job.status in ("queued", "running")), "printing": printing,
        "rendered": batch.bills.filter(document__isnull=False).count() if printing else None,
        # issue 19: the paper bills (the mailing list's rows) and those e-mailed instead
        "paper": sum(part.pages for part in parts),
        "emailed": batch.bills.filter(emails__status="sent").count(),
    })


@role_required(HACIENDA)
def bill_batch_part(request: HttpRequest, pk: int, index: int) -> HttpResponse:
    """One merged PDF of a batch, served as stored."""
    part = get_object_or_404(BillBatchPart, batch_id=pk, index=index)
    return FileResponse(part.pdf.open("rb"), content_type="application/pdf", as_attachment=True,
                        filename=f"avisos-lote{pk}-parte{index + 1:03d}.pdf")
