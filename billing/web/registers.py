"""Issue 19: the registers for auditors (*registros*) on a page: pick the register and the period,
read the table with its control totals, download it as CSV or PDF (``billing.registers``). Auditors,
Hacienda officers and collection supervisors read them; other roles get 403."""

from __future__ import annotations

from django import forms
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils import timezone
from django.utils.translation import get_language, gettext_lazy
from django.views.decorators.http import require_safe

from parcels.forms import DateInput
from parcels.roles import AUDITOR, HACIENDA, SUPERVISOR, role_required

from .. import registers
from ..errors import BillingError

READERS = (AUDITOR, HACIENDA, SUPERVISOR)
PAGE_SIZE = 100  # rows per page; the CSV and the PDF hold them all


class RegisterForm(forms.Form):
    kind = forms.ChoiceField(label=gettext_lazy("Registro"))
    start = forms.DateField(label=gettext_lazy("Desde"), widget=DateInput())
    end = forms.DateField(label=gettext_lazy("Hasta"), widget=DateInput())

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.fields["kind"].choices = [(kind, title) for kind, title in registers.TITLES.items()]

    def clean(self) -> dict:
        data = super().clean()
        if data.get("start") and data.get("end") and not self.errors:
            try:
                data["register"] = registers.register_build(data["kind"], data["start"], data["end"])
            except BillingError as exc:
                self.add_error(None, str(exc))
        return data


@require_safe
@role_required(*READERS)
def register(request: HttpRequest) -> HttpResponse:
    """GET only: the form, and with a valid query the register (``?format=csv`` / ``pdf`` downloads it)."""
    today = timezone.localdate()
    form = RegisterForm(request.GET or None, initial={"kind": "receipts", "start": today.replace(day=1), "end": today})
    result = form.cleaned_data.get("register") if form.is_bound and form.is_valid() else None
    if result is not None:
        name = f"registro-{result.kind}-{result.start.isoformat()}-{result.end.isoformat()}"
        if request.GET.get("format") == "csv":
            response = HttpResponse(registers.register_csv(result), content_type="text/csv; charset=utf-8")
            response["Content-Disposition"] = f'attachment; filename="{name}.csv"'
            return response
        if request.GET.get("format") == "pdf":
            response = HttpResponse(registers.register_pdf(result, lang=get_language()), content_type="application/pdf")
            response["Content-Disposition"] = f'attachment; filename="{name}.pdf"'
            return response
    query = request.GET.copy()
    query.pop("page", None)
    query.pop("format", None)
    page = Paginator(result.display_rows if result else [], PAGE_SIZE).get_page(request.GET.get("page"))
    return render(request, "billing/registers.html", {"form": form, "register": result, "page": page, "query": query.urlencode()})
