"""The roll's finalization (¶11) and its corrections (¶9, ¶11): the pages of the levy's year
(``levy:finalize``, ``levy:corrections``) whose actions create charges, so they live in billing,
above levy (``billing.roll_urls`` joins them to levy's URLs under the ``levy`` namespace)."""

from __future__ import annotations

from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils import formats
from django.utils.translation import gettext as _
from django.views.decorators.http import require_POST

from levy import rules
from levy.forms import CorrectionForm
from levy.models import FiscalYear, RollCorrection, RollLine
from levy.services import LevyError, final_levy
from parcels.roles import AUDITOR, HACIENDA, has_role, role_required

from .services import corrections as correction_services
from .services import installments as installment_services


def _label(year: str) -> str:
    """A fiscal year label from the URL, or 404 (the converter only checks the shape)."""
    try:
        rules.fiscal_year_start(year)
    except rules.LevyRuleError:
        raise Http404(_("Año fiscal inválido.")) from None
    return year


def _year_or_404(year: str) -> FiscalYear:
    return get_object_or_404(FiscalYear, label=_label(year))


@require_POST
@role_required(HACIENDA)
def finalize(request: HttpRequest, year: str) -> HttpResponse:
    label = _label(year)
    if request.POST.get("confirm") != "yes":
        messages.error(request, _("Marque la casilla de confirmación: un padrón finalizado no se puede cambiar (¶11)."))
        return redirect("levy:worksheet", year=label)
    try:
        levy = installment_services.roll_finalize(acting_user=request.user, fiscal_year=label)
    except LevyError as exc:
        messages.error(request, str(exc))
    else:
        message = _("Padrón de %(y)s finalizado el %(d)s por %(u)s.") % {
            "y": label, "d": formats.date_format(levy.finalized_on, "SHORT_DATE_FORMAT"), "u": levy.finalized_by.get_username()}
        if levy.finalized_late:
            message += " " + _("Se finalizó después del 1 de julio (¶11): consta como tardío.")
            messages.warning(request, message)
        else:
            messages.success(request, message)
    return redirect("levy:worksheet", year=label)


@role_required(HACIENDA, AUDITOR)
def corrections(request: HttpRequest, year: str) -> HttpResponse:
    """Supplementary entries on the finalized roll: each references its line, with a reason and its
    own due date, and is billed and reconciled apart from the original roll (¶9, ¶11)."""
    fiscal_year = _year_or_404(year)
    levy = final_levy(fiscal_year)
    form = CorrectionForm(request.POST or None)
    if request.method == "POST":
        if not has_role(request.user, HACIENDA):
            raise PermissionDenied
        if levy is None:
            form.add_error(None, _("El padrón de este año no está finalizado."))
        elif form.is_valid():
            line = RollLine.objects.filter(levy=levy, parcel_code=form.cleaned_data["parcel_id"]).first()
            if line is None:
                form.add_error("parcel_id", _("Ese predio no está en el padrón de %(y)s.") % {"y": fiscal_year.label})
            else:
                try:
                    correction_services.roll_correction_create(
                        acting_user=request.user, roll_line=line, om_charge_delta=form.cleaned_data["om_charge_delta"],
                        credit_delta=form.cleaned_data["credit_delta"], reason=form.cleaned_data["reason"],
                        due_date=form.cleaned_data["due_date"], credit_percent=form.cleaned_data["credit_percent"],
                    )
                except LevyError as exc:
                    form.add_error(None, str(exc))
                else:
                    messages.success(request, _("Corrección registrada y cargada a la cuenta del predio."))
                    return redirect("levy:corrections", year=fiscal_year.label)
    entries = (
        RollCorrection.objects.filter(roll_line__levy=levy).select_related("roll_line", "created_by").order_by("-created_at")
        if levy else RollCorrection.objects.none()
    )
    return render(request, "levy/corrections.html", {"form": form, "levy": levy, "label": fiscal_year.label, "entries": entries})
