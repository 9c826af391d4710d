"""¶13: the Collector's offices' printed details, under ``/cobros/oficinas/`` (namespace
``collections``): Hacienda and supervisors edit what the bills print; each change is kept."""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.translation import gettext as _
from pghistory.models import Events

from parcels.roles import role_required
from parcels.templatetags.audit_history import related_names_prime

from ..errors import BillingError
from ..models import Office
from ..services import offices as office_services
from .hacienda import OfficeForm

HISTORY_LIMIT = 50


@role_required(*office_services.OFFICE_EDITORS)
def office_list(request: HttpRequest) -> HttpResponse:
    return render(request, "billing/hacienda/offices.html", {"offices": Office.objects.all()})


@role_required(*office_services.OFFICE_EDITORS)
def office_edit(request: HttpRequest, code: str) -> HttpResponse:
    office = get_object_or_404(Office, code=code)
    form = OfficeForm(request.POST or None, instance=Office.objects.get(pk=office.pk))
    if request.method == "POST" and form.is_valid():
        try:
            office_services.office_update(acting_user=request.user, office=office,
                                          **{name: form.cleaned_data[name] for name in OfficeForm.Meta.fields})
        except BillingError as exc:
            form.add_error(None, str(exc))
        else:
            messages.success(request, _("Datos de la oficina %(c)s guardados; los avisos que se emitan desde ahora los imprimen.")
                             % {"c": office.code})
            return redirect("collections:office-edit", code=office.code)
    events = related_names_prime(Events.objects.tracks(office).order_by("-pgh_created_at")[:HISTORY_LIMIT])
    return render(request, "billing/hacienda/office_edit.html", {"office": office, "form": form, "events": events})
