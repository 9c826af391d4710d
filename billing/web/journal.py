"""The fund journal for Hacienda's officers (namespace ``collections``, issue 19): the journals
posted on a day, each line with its account, fund (¶1(2) reserve, ¶2 Operating Fund) and the
receipts it sums, and the same lines as the documented CSV for Hacienda's accounting system.
Read-only: the journals are written by ``billing.services.journal`` when the events happen."""

from __future__ import annotations

from django import forms
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils import timezone
from django.utils.translation import gettext_lazy

from parcels.forms import DateInput
from parcels.roles import AUDITOR, HACIENDA, role_required

from ..models import Journal
from ..services import journal as journal_services

JOURNAL_READERS = (HACIENDA, AUDITOR)


class JournalDayForm(forms.Form):
    fecha = forms.DateField(label=gettext_lazy("Fecha contable"), required=False, widget=DateInput())


@role_required(*JOURNAL_READERS)
def journals(request: HttpRequest) -> HttpResponse:
    """The journals posted on ``?fecha=`` (today by default); ``?formato=csv`` downloads their lines."""
    form = JournalDayForm(request.GET or None)
    day = (form.cleaned_data.get("fecha") if form.is_valid() else None) or timezone.localdate()
    if request.GET.get("formato") == "csv" and form.is_valid():
        response = HttpResponse(journal_services.journal_csv(journal_services.journals_on(day)),
                                content_type="text/csv; charset=utf-8")
        response["Content-Disposition"] = f'attachment; filename="diario-{day.isoformat()}.csv"'
        return response
    recent = list(Journal.objects.order_by("-posted_on").values_list("posted_on", flat=True).distinct()[:15])
    rows = list(journal_services.journals_on(day))
    for journal in rows:
        lines = list(journal.lines.all())
        journal.total_debit = sum((line.debit for line in lines), 0)
        journal.total_credit = sum((line.credit for line in lines), 0)
    return render(request, "billing/hacienda/journals.html", {
        "form": form, "day": day, "journals": rows, "recent": recent,
    })
