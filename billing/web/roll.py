"""The roll's finalization (¶11) and its corrections (¶9, ¶11): the pages of the levy's year
(``levy:finalize``, ``levy:corrections``) whose actions create charges, so they live in billing,
above levy (``billing.web.urls`` joins them to levy's URLs under the ``levy`` namespace)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from decimal import Decimal
from typing import Any

from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.db.models import Count, Q, Sum
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import formats, timezone
from django.utils.html import format_html
from django.utils.translation import gettext as _
from django.utils.translation import ngettext
from django.views.decorators.http import require_POST

from levy.forms import CorrectionForm
from levy.models import LegalParameterSet, Levy, RollCorrection, RollLine
from levy.services import LevyError, draft_levy, final_levy
from levy.views import fiscal_year_or_404, year_label_or_404
from parcels import review
from parcels.roles import AUDITOR, HACIENDA, has_role, role_required
from parcels.search import one_by_code

from .. import rules as billing_rules
from ..accounts import due_and_last_day
from ..models import Charge
from ..services import corrections as correction_services
from ..services import installments as installment_services

FINALIZE_ACT = "levy.finalize"


@dataclass(frozen=True)
class HalfPreview:
    number: int
    count: int
    total: Decimal
    due: date
    last_day: date


@dataclass(frozen=True)
class FinalizePreview:
    """¶11, ¶12: what finalizing the draft roll today records and issues."""

    levy_pk: int
    label: str
    total_levy: Decimal
    lines: int
    halves: tuple[HalfPreview, ...]
    on: date
    deadline: date
    late: bool

    @property
    def installments(self) -> int:
        return sum(half.count for half in self.halves)

    def figures(self) -> tuple[Any, ...]:
        return (self.levy_pk, self.label, self.total_levy, self.lines, self.on, self.late,
                *((h.number, h.count, h.total, h.due, h.last_day) for h in self.halves))


def finalize_preview(levy: Levy, *, on: date) -> FinalizePreview:
    """¶11, ¶12: the figures of ``installment_services.installments_issue`` for a finalization on
    ``on``, read before it happens (the same due-date rule and the same lines)."""
    params = LegalParameterSet.in_force(on)
    finalized_on = on if params.late_roll_due_on_finalization else None
    lines = RollLine.objects.filter(levy=levy, levied=True)
    sums = lines.aggregate(
        n=Count("pk"), first_n=Count("pk", filter=Q(first_installment__gt=0)), second_n=Count("pk", filter=Q(second_installment__gt=0)),
        first=Sum("first_installment", filter=Q(first_installment__gt=0)),
        second=Sum("second_installment", filter=Q(second_installment__gt=0)),
    )
    halves = []
    for number, count, total in ((1, sums["first_n"], sums["first"]), (2, sums["second_n"], sums["second"])):
        due = billing_rules.installment_due_date(fiscal_year_start=levy.fiscal_year.start, number=number, finalized_on=finalized_on)
        due, last_day = due_and_last_day(due=due)
        halves.append(HalfPreview(number=number, count=count, total=getattr(total, "amount", total) or Decimal("0.00"),
                                  due=due, last_day=last_day))
    deadline = levy.fiscal_year.roll_deadline
    return FinalizePreview(levy_pk=levy.pk, label=levy.fiscal_year.label, total_levy=getattr(levy.total_levy, "amount", levy.total_levy),
                           lines=sums["n"], halves=tuple(halves), on=on, deadline=deadline, late=on > deadline)


def finalize_fingerprint(preview: FinalizePreview) -> str:
    return review.fingerprint(FINALIZE_ACT, preview.figures())


@require_POST
@role_required(HACIENDA)
def finalize(request: HttpRequest, year: str) -> HttpResponse:
    """¶11: a POST without the review page's fingerprint shows the review page (nothing is
    finalized); the review page's POST finalizes only if its figures are still the current ones."""
    label = year_label_or_404(year)
    fiscal_year = fiscal_year_or_404(label)
    levy = draft_levy(fiscal_year) if final_levy(fiscal_year) is None else None
    if levy is not None:
        preview = finalize_preview(levy, on=timezone.localdate())
        changed = review.was_sent(request.POST) and not review.reviewed(request.POST, FINALIZE_ACT, preview.figures())
        if changed or not review.was_sent(request.POST):
            return render(request, "levy/finalize_review.html", {
                "label": label, "p": preview, "fingerprint": finalize_fingerprint(preview), "changed": changed,
                "review_field": review.FIELD,
            }, status=409 if changed else 200)
    try:
        levy = installment_services.roll_finalize(acting_user=request.user, fiscal_year=label)
    except LevyError as exc:
        messages.error(request, str(exc))
    else:
        message = _("Padrón de %(y)s finalizado el %(d)s por %(u)s.") % {
            "y": label, "d": formats.date_format(levy.finalized_on, "SHORT_DATE_FORMAT"), "u": levy.finalized_by.get_username()}
        if levy.finalized_late:
            message += " " + _("Se finalizó después del 1 de julio (¶11): consta como tardío.")
        # Issue 18: what happens next, from what was issued (¶12): the installments and where their bills are printed.
        issued = Charge.objects.filter(roll_line__levy=levy, kind=Charge.Kind.INSTALLMENT).count()
        message = format_html(
            '{} {} <a href="{}">{}</a>.', message,
            ngettext("Se emitió %(n)s plazo (¶12); su aviso se imprime en", "Se emitieron %(n)s plazos (¶12); sus avisos se imprimen "
                     "por lotes en", issued) % {"n": f"{issued:,}"},
            reverse("collections:bill-batches"), _("Avisos"),
        )
        if levy.finalized_late:
            messages.warning(request, message)
        else:
            messages.success(request, message)
    return redirect("levy:worksheet", year=label)


CORRECTION_ACT = "levy.correction"


@role_required(HACIENDA, AUDITOR)
def corrections(request: HttpRequest, year: str) -> HttpResponse:
    """Supplementary entries on the finalized roll: each references its line, with a reason and its
    own due date, and is billed and reconciled apart from the original roll (¶9, ¶11).

    The form leads to a review page (the line and each half before and after, the new charges and
    the lowerings, the give-back and the *crédito aplicado* it will post, read by
    ``roll_correction_preview`` without writing); the correction is recorded only from that page's
    POST, whose fingerprint must match the figures still current (issue 18)."""
    fiscal_year = fiscal_year_or_404(year)
    levy = final_levy(fiscal_year)
    form = CorrectionForm(request.POST or None)
    if request.method == "POST":
        if not has_role(request.user, HACIENDA):
            raise PermissionDenied
        if levy is None:
            form.add_error(None, _("El padrón de este año no está finalizado."))
        elif form.is_valid():
            line = one_by_code(RollLine.objects.filter(levy=levy), "parcel_code", form.cleaned_data["parcel_id"])
            if line is None:
                form.add_error("parcel_id", _("Ese predio no está en el padrón de %(y)s.") % {"y": fiscal_year.label})
            else:
                data = form.cleaned_data
                asked = {"acting_user": request.user, "roll_line": line, "om_charge_delta": data["om_charge_delta"],
                         "credit_delta": data["credit_delta"], "reason": data["reason"], "due_date": data["due_date"],
                         "credit_percent": data["credit_percent"], "made_on": timezone.localdate()}
                try:
                    preview = correction_services.roll_correction_preview(**asked)
                    sent = review.was_sent(request.POST)
                    changed = sent and not review.reviewed(request.POST, CORRECTION_ACT, preview.figures())
                    if changed or not sent:
                        return render(request, "levy/correction_review.html", {
                            "label": fiscal_year.label, "p": preview, "plan": preview.plan, "form": form, "changed": changed,
                            "fingerprint": review.fingerprint(CORRECTION_ACT, preview.figures()), "review_field": review.FIELD,
                        }, status=409 if changed else 200)
                    correction_services.roll_correction_create(**asked)
                except LevyError as exc:
                    form.add_error(None, str(exc))
                else:
                    messages.success(request, _("Corrección registrada y cargada a la cuenta del predio."))
                    return redirect("levy:corrections", year=fiscal_year.label)
    entries = (
        RollCorrection.objects.numbered().filter(roll_line__levy=levy).select_related("roll_line", "created_by").order_by("-created_at")
        if levy else RollCorrection.objects.none()
    )
    return render(request, "levy/corrections.html", {"form": form, "levy": levy, "label": fiscal_year.label, "entries": entries})
