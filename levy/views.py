"""Pages of the yearly levy. Each view checks the role, binds a form or filter, reads through
``selectors``, calls one service (never the models) to write, then redirects or renders."""

from __future__ import annotations

import io
import tempfile
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from django.contrib import messages
from django.core.exceptions import PermissionDenied, ValidationError
from django.core.paginator import Paginator
from django.http import FileResponse, Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django.views.decorators.http import require_POST

from parcels import review
from parcels.jobs import job_active
from parcels.models import Job
from parcels.money import money_text
from parcels.replica import reads_replica
from parcels.roles import AUDITOR, AUTHORITY, HACIENDA, STAFF_ROLES, has_role, role_required

from . import charts, rules, selectors, services
from . import whatif as whatif_jobs
from .exports import XLSX_MAX_ROWS, TooManyRowsForXlsx, write_roll_csv, write_roll_xlsx, xlsx_fits
from .filters import REASON_SHORT
from .forms import EstimateForm, FiscalYearForm, WhatIfForm
from .models import ChainLink, Estimate, FiscalYear, LegalParameterSet, Levy, RollLine
from .services import LEVY_COMPUTE

YEAR_READERS = (AUTHORITY, HACIENDA, AUDITOR)
ROLL_READERS = (HACIENDA, AUDITOR)
WHATIF_USERS = (HACIENDA, AUTHORITY)
PAGE_SIZE = 50
WHATIF_SHOWN = 100
ZERO = Decimal("0.00")

# ¶1–¶4: the worksheet lines as printed, in the order of rules.compute_levy's Worksheet.lines
# (tests/levy/test_pages.py checks that the ¶ and the sign of each line match the rules).
WORKSHEET_LINES: tuple[tuple[str, str, str, Any], ...] = (
    ("om_estimate", "¶1(1)", "+", gettext_lazy("Estimado de gastos de operación y mantenimiento")),
    ("reserve", "¶1(2)", "+", gettext_lazy("Fondo de reserva (no más del 2% del estimado de O&M)")),
    ("credits", "¶1(3)", "+", gettext_lazy("Créditos por derechos de agua cedidos")),
    ("deficit", "¶2", "+", gettext_lazy("Déficit del Fondo de Explotación")),
    ("surplus", "¶2", rules.MINUS, gettext_lazy("Superávit del Fondo de Explotación")),
    ("misc_income", "¶3", rules.MINUS, gettext_lazy("Ingresos misceláneos")),
    ("subtotal", "¶3", "=", gettext_lazy("Subtotal")),
    ("safety_margin", "¶3", "+", gettext_lazy("Margen de seguridad contra atrasos en las recaudaciones")),
    ("total_levy", "¶4", "=", gettext_lazy("Contribución total de operación y mantenimiento")),
)


def year_label_or_404(year: str) -> str:
    """A fiscal year label from the URL, or 404 (the converter only checks the shape). The roll's
    finalization and corrections pages (``billing.web.roll``) read their URL's year with it too."""
    try:
        rules.fiscal_year_start(year)
    except rules.LevyRuleError:
        raise Http404(_("Año fiscal inválido.")) from None
    return year


def fiscal_year_or_404(year: str) -> FiscalYear:
    return get_object_or_404(FiscalYear, label=year_label_or_404(year))


def _amount(value: Any) -> Decimal:
    return getattr(value, "amount", value)


# ---------------------------------------------------------------------------------------------
# 1. Fiscal years
# ---------------------------------------------------------------------------------------------


@dataclass
class YearRow:
    year: FiscalYear
    estimate: Estimate | None
    draft: Levy | None
    final: Levy | None
    overdue: bool  # ¶11: July 1 passed and the roll is not finalized


@role_required(*YEAR_READERS)
def year_list(request: HttpRequest) -> HttpResponse:
    today = timezone.localdate()
    rows = []
    for year in selectors.fiscal_year_list():
        levies = {levy.status: levy for levy in year.levy_list}
        final = levies.get(Levy.Status.FINAL)
        rows.append(YearRow(
            year=year, estimate=year.current_estimates[0] if year.current_estimates else None,
            draft=levies.get(Levy.Status.DRAFT), final=final, overdue=final is None and today > year.roll_deadline,
        ))
    # Suggest the year after the newest one, or the next to open on a July 1.
    next_start = rows[0].year.start.year + 1 if rows else (today.year if today.month < 7 else today.year + 1)
    form = FiscalYearForm(initial={"year": rules.fiscal_year_label(next_start)})
    return render(request, "levy/year_list.html", {"rows": rows, "form": form, "today": today})


@role_required(AUTHORITY)
def year_start(request: HttpRequest) -> HttpResponse:
    """Start a new fiscal year: the year is created when its first estimates are entered."""
    form = FiscalYearForm(request.GET or None)
    if form.is_valid():
        return redirect("levy:estimates", year=form.cleaned_data["year"])
    for error in form.errors.get("year", []):
        messages.error(request, error)
    return redirect("levy:year-list")


# ---------------------------------------------------------------------------------------------
# 2. Estimates (¶1(1), ¶1(2), ¶1(3), ¶2, ¶3)
# ---------------------------------------------------------------------------------------------


def _reserve_cap_hint(form: EstimateForm | None, current: Estimate | None, params: LegalParameterSet | None) -> str:
    """The reserve cap for the O&M estimate on the screen (the one typed, else the current one)."""
    if params is None:
        return ""
    om: Decimal | None = None
    if form is not None and form.is_bound:
        try:
            om = form.fields["om_estimate"].clean(form.data.get("om_estimate"))
        except ValidationError:  # the field shows its own error; no hint then
            om = None
    elif current is not None:
        om = current.om_estimate.amount
    if om is None:
        return ""
    try:
        cap = rules.reserve_cap(om_estimate=om, params=params.as_rules())
    except rules.LevyRuleError:
        return ""
    return _("Con un O&M de $%(o)s el tope es $%(c)s.") % {"o": f"{om:,.2f}", "c": f"{cap:,.2f}"}


def _add_reserve_cap_hint(form: EstimateForm, current: Estimate | None, params: LegalParameterSet | None) -> None:
    """Before the form is validated or rendered (its bound fields copy the help text)."""
    hint = _reserve_cap_hint(form, current, params)
    if hint:
        form.fields["reserve"].help_text = f"{form.fields['reserve'].help_text} {hint}"


def _refused_field(form: EstimateForm, params: LegalParameterSet | None) -> str | None:
    """The field a service refusal is about, so the message shows beside it (¶1(2) reserve cap)."""
    data = form.cleaned_data
    if params is not None and data.get("om_estimate") is not None and data.get("reserve") is not None:
        try:
            if data["reserve"] > rules.reserve_cap(om_estimate=data["om_estimate"], params=params.as_rules()):
                return "reserve"
        except rules.LevyRuleError:
            return None
    return None


@role_required(*YEAR_READERS)
def estimates(request: HttpRequest, year: str) -> HttpResponse:
    label = year_label_or_404(year)
    start = rules.fiscal_year_start(label)
    fiscal_year = FiscalYear.objects.filter(label=label).first()
    current = services.current_estimate(fiscal_year) if fiscal_year else None
    final = services.final_levy(fiscal_year) if fiscal_year else None
    params = selectors.parameter_set_in_force(start)
    can_enter = has_role(request.user, AUTHORITY) and final is None
    reason_required = current is not None and current.status == Estimate.Status.CERTIFIED
    # A draft is corrected, not replaced: the reason is asked only of certified figures (¶1).
    options = {"replacing": reason_required, "reason_required": reason_required,
               "params": params.as_rules() if params is not None else None}

    previous_label = rules.fiscal_year_label(start.year - 1)
    previous = selectors.estimate_certified_last(previous_label)
    form: EstimateForm | None = None
    if request.method == "POST":
        if not has_role(request.user, AUTHORITY):
            raise PermissionDenied
        form = EstimateForm(request.POST, **options)
        _add_reserve_cap_hint(form, current, params)
        form.show_previous_year(previous, previous_label)
        if form.is_valid():
            try:
                services.estimate_enter(acting_user=request.user, fiscal_year=label, **form.service_kwargs())
            except services.LevyError as exc:
                form.add_error(_refused_field(form, params), str(exc))
            else:
                messages.success(request, _("Estimados de %(y)s guardados sin certificar. Revíselos y certifíquelos.") % {"y": label})
                return redirect("levy:estimates", year=label)
    elif can_enter:
        form = EstimateForm(initial=EstimateForm.initial_from(current), **options)
        _add_reserve_cap_hint(form, current, params)
        form.show_previous_year(previous, previous_label)

    history = list(selectors.estimate_history(fiscal_year)) if fiscal_year else []
    return render(request, "levy/estimates.html", {
        "label": label, "start": start, "fiscal_year": fiscal_year, "current": current, "final": final, "form": form,
        "can_enter": can_enter, "reason_required": reason_required, "params": params,
        "history": [e for e in history if e.status == Estimate.Status.WITHDRAWN],
    })


CERTIFY_ACT = "levy.estimate-certify"


def _amount_of(value: Any) -> Decimal | None:
    if value is None:
        return None
    return getattr(value, "amount", value)


def certify_figures(estimate: Estimate) -> tuple[Any, ...]:
    """¶1(1), ¶1(2), ¶1(3), ¶2, ¶3: what the certification records, as the review page shows it
    (its fingerprint is what the confirmation must carry)."""
    return (estimate.pk, estimate.fiscal_year.label, _amount_of(estimate.om_estimate), _amount_of(estimate.reserve),
            _amount_of(estimate.certified_credits), _amount_of(estimate.deficit), _amount_of(estimate.surplus),
            _amount_of(estimate.misc_income))


def certify_fingerprint(estimate: Estimate) -> str:
    return review.fingerprint(CERTIFY_ACT, certify_figures(estimate))


def _certify_review(request: HttpRequest, label: str, current: Estimate, *, changed: bool = False) -> HttpResponse:
    """The review page: every figure, the ¶ it rests on, and that certifying cannot be undone."""
    start = rules.fiscal_year_start(label)
    params = selectors.parameter_set_in_force(start)
    om = _amount_of(current.om_estimate)
    reserve = _amount_of(current.reserve)
    cap = rate = None
    if params is not None:
        rate = params.reserve_cap_rate * 100
        cap = rules.reserve_cap(om_estimate=om, params=params.as_rules())
    share = (reserve * 100 / om).quantize(Decimal("0.01")) if om else None
    return render(request, "levy/estimate_certify_review.html", {
        "label": label, "e": current, "cap": cap, "cap_rate": rate, "reserve_share": share,
        "within_cap": cap is None or reserve <= cap, "fingerprint": certify_fingerprint(current),
        "changed": changed, "review_field": review.FIELD,
    }, status=409 if changed else 200)


@require_POST
@role_required(AUTHORITY)
def estimate_certify(request: HttpRequest, year: str) -> HttpResponse:
    """¶1(1), ¶3: a POST without the review page's fingerprint shows the review page (nothing is
    certified); the review page's POST certifies only if its figures are still the current ones."""
    label = year_label_or_404(year)
    fiscal_year = FiscalYear.objects.filter(label=label).first()
    current = services.current_estimate(fiscal_year) if fiscal_year else None
    if current is not None and request.POST.get("estimate") != str(current.pk):
        messages.error(request, _("Los estimados cambiaron mientras los revisaba: revíselos de nuevo antes de certificar."))
        return redirect("levy:estimates", year=label)
    if current is not None and current.status == Estimate.Status.ENTERED:
        if not review.was_sent(request.POST):
            return _certify_review(request, label, current)
        if not review.reviewed(request.POST, CERTIFY_ACT, certify_figures(current)):
            return _certify_review(request, label, current, changed=True)
    try:
        estimate = services.estimate_certify(acting_user=request.user, fiscal_year=label)
    except services.LevyError as exc:
        messages.error(request, str(exc))
    else:
        # Issue 18: what happens next. Hacienda computes the levy from them (¶11); a replacement
        # would need certifying again.
        messages.success(request, _("Estimados de %(y)s certificados al Secretario de Hacienda por %(u)s. Hacienda ya puede "
                                    "calcular la contribución de %(y)s (Hoja de cómputo → Calcular el padrón borrador).")
                         % {"y": label, "u": estimate.certified_by.get_username()})
    return redirect("levy:estimates", year=label)


# ---------------------------------------------------------------------------------------------
# 3. Worksheet, compute, finalize (¶1–¶6, ¶11)
# ---------------------------------------------------------------------------------------------


@dataclass
class PrintedLine:
    key: str
    paragraph: str
    sign: str
    label: str
    amount: Decimal
    running: Decimal


def worksheet_lines(levy: Any) -> list[PrintedLine]:
    """¶1–¶4: each line with its running total, as ``rules.Worksheet.verify`` adds them up."""
    lines = []
    running = ZERO
    for key, paragraph, sign, label in WORKSHEET_LINES:
        amount = _amount(getattr(levy, key))
        if key == "subtotal":
            running = max(running, ZERO)  # ¶3, ¶4: never negative
        elif sign == "+":
            running += amount
        elif sign == rules.MINUS:
            running -= amount
        lines.append(PrintedLine(key=key, paragraph=paragraph, sign=sign, label=str(label), amount=amount, running=running))
    return lines


def credits_check(*, k0: Any, total_levy: Any, safety_margin_rate: Decimal, certified: bool) -> dict[str, Any]:
    """¶1(3), ¶3, ¶7: the figures of the worksheet's warning when credits multiply the levy."""
    check = rules.credits_multiplier(k0=_amount(k0), total_levy=_amount(total_levy), safety_margin_rate=safety_margin_rate)
    return {"check": check, "factor": 1 + safety_margin_rate, "times": rules.CREDITS_WARNING_FACTOR, "certified": certified}


@role_required(*ROLL_READERS)
def worksheet(request: HttpRequest, year: str) -> HttpResponse:
    label = year_label_or_404(year)
    start = rules.fiscal_year_start(label)
    fiscal_year = FiscalYear.objects.filter(label=label).first()
    today = timezone.localdate()
    context: dict[str, Any] = {"label": label, "fiscal_year": fiscal_year, "deadline": start, "today": today,
                               "deadline_past": today > start}
    if fiscal_year is not None:
        estimate = services.current_estimate(fiscal_year)
        final = services.final_levy(fiscal_year)
        levy = final or services.draft_levy(fiscal_year)
        context.update(estimate=estimate, final=final, levy=levy, job=job_active(LEVY_COMPUTE, label))
        context["roll_link"] = final and ChainLink.objects.filter(kind=ChainLink.Kind.ROLL, record_id=final.pk).first()
        if levy is not None:
            context.update(
                lines=worksheet_lines(levy), chart=charts.waterfall(charts.worksheet_steps(levy)),
                phone_chart=charts.phone_waterfall(charts.worksheet_steps(levy)),
                stale=not levy.is_final and services.registry_fingerprint() != levy.registry_fingerprint,
                estimate_changed=estimate is None or levy.estimate_id != estimate.pk,
                margin_rate=Decimal(levy.parameters.get("safety_margin_rate", "0.02")) * 100,
                pumped_weight=Decimal(levy.parameters.get("pumped_weight", "0.5")) * 100,
                # ¶1(3) against ¶7: factor (3) is one rounding of the whole, the roll rounds each credit.
                credits_gap=abs(levy.credits.amount - levy.roll_credits.amount),
                credits_warning=credits_check(k0=levy.k0, total_levy=levy.total_levy,
                                              safety_margin_rate=Decimal(levy.parameters.get("safety_margin_rate", "0.02")),
                                              certified=levy.credits_certified),
                # ¶1(3), ¶3: certified credits dropped to 0.00 because the subtotal did not pass zero.
                certified_unused=(levy.estimate.certified_credits
                                  if levy.credits_certified and levy.estimate.certified_credits is not None
                                  and levy.estimate.certified_credits.amount and not levy.credits.amount else None),
            )
    context["can_act"] = has_role(request.user, HACIENDA)
    return render(request, "levy/worksheet.html", context)


@require_POST
@role_required(HACIENDA)
def compute(request: HttpRequest, year: str) -> HttpResponse:
    """Queue ``levy_compute`` for a worker; the progress page waits for it. While another compute
    of the year runs, the request is refused and its page says which one (and shows its progress)."""
    label = year_label_or_404(year)
    try:
        job = services.levy_compute_start(acting_user=request.user, fiscal_year=label)
    except services.LevyComputeBusy as exc:
        messages.error(request, str(exc))
        job = exc.job
    return redirect("levy:compute-progress", year=label, pk=job.pk)


@role_required(*ROLL_READERS)
def compute_progress(request: HttpRequest, year: str, pk: int) -> HttpResponse:
    label = year_label_or_404(year)
    job = get_object_or_404(Job, pk=pk, kind=LEVY_COMPUTE, payload__fiscal_year=label)
    refused = job.result.get("refused") if job.status == Job.Status.DONE else None
    if job.status == Job.Status.DONE and not refused:
        messages.success(request, _("Padrón borrador de %(y)s calculado: %(n)s predios en el padrón.")
                         % {"y": label, "n": f"{job.result.get('lines', 0):,}"})
        return redirect("levy:worksheet", year=label)
    failed = job.error.splitlines()[0] if job.status == Job.Status.FAILED and job.error else ""
    return render(request, "levy/compute_progress.html", {
        "label": label, "job": job, "refused": refused, "failed": failed,
        "waiting": job.status in (Job.Status.QUEUED, Job.Status.RUNNING),
    })


# ---------------------------------------------------------------------------------------------
# 4. The roll (¶7, ¶9, ¶12) and its exports
# ---------------------------------------------------------------------------------------------

FILTER_PARAMS = ("q", "levied", "reason", "credit")


@reads_replica
@role_required(*ROLL_READERS)
def roll(request: HttpRequest, year: str) -> HttpResponse:
    label = year_label_or_404(year)
    levy = selectors.roll_levy(label)
    if levy is None:
        fiscal_year = fiscal_year_or_404(label)
        return render(request, "levy/roll.html", {"label": label, "fiscal_year": fiscal_year, "levy": None})
    export = request.GET.get("format")
    if export == "csv":
        return _roll_csv(levy)
    if export == "xlsx":
        return _roll_xlsx(request, levy)

    filterset = selectors.roll_list(levy=levy, params=request.GET)
    lines = filterset.qs
    pumped_weight = Decimal(levy.parameters.get("pumped_weight", "0.5"))
    whole = selectors.roll_totals_kept(levy, RollLine.objects.filter(levy=levy), pumped_weight=pumped_weight)
    filtered = any(request.GET.get(name) for name in FILTER_PARAMS)
    totals = selectors.roll_totals_kept(levy, lines) if filtered else whole
    paginator = Paginator(lines, PAGE_SIZE)
    paginator.count = totals["lines"]  # already counted with the sums: one query fewer
    page = paginator.get_page(request.GET.get("page"))
    for line in page.object_list:
        line.reason_label = REASON_SHORT.get(line.reason, line.reason)

    total_levy = levy.total_levy.amount
    factor_3 = levy.credits.amount
    gap = factor_3 - whole["credit"]
    reconciliation = {
        "charges_ok": whole["om_charge"] == total_levy,
        "net_credits": whole["net"] + whole["credit"],
        "net_credits_ok": whole["net"] + whole["credit"] == total_levy,
        "halves": whole["first_installment"] + whole["second_installment"],
        "halves_ok": whole["first_installment"] + whole["second_installment"] == whole["net"],
        "stored_ok": (levy.roll_total.amount, levy.roll_credits.amount, levy.roll_net.amount)
        == (whole["om_charge"], whole["credit"], whole["net"]),
        # Both at the stored precision: five places, as half of a four-place pumped acre needs (¶5).
        "acres_ok": whole["levied_exact_acres"] == levy.equivalent_acres,
        "acres_gap": whole["levied_exact_acres"] - levy.equivalent_acres,
        "factor_3": factor_3, "granted": whole["credit"], "gap": gap, "gap_abs": abs(gap),
        "needed_net": total_levy - factor_3,
    }
    return render(request, "levy/roll.html", {
        "label": label, "fiscal_year": levy.fiscal_year, "levy": levy, "filter": filterset, "page": page,
        "totals": totals, "whole": whole, "filtered": filtered, "rec": reconciliation,
        "xlsx_fits": xlsx_fits(whole["lines"]), "xlsx_too_long": "" if xlsx_fits(whole["lines"]) else xlsx_too_long(whole["lines"]),
    })


def _export_name(levy: Levy, extension: str) -> str:
    return f"padron-{levy.fiscal_year.label}-{'final' if levy.is_final else 'borrador'}.{extension}"


def _roll_csv(levy: Levy) -> HttpResponse:
    """Every line of the roll (not only the filtered page), as ``manage.py levy export`` prints it.

    Written whole into a temporary file before the first byte is sent, then streamed from it: a
    database lost half-way is then a 500, never a 200 whose file simply ends early, the length it
    is sent with lets the browser tell a transfer cut on the way, and a roll of a million lines
    (some hundred megabytes) never sits in memory (issue 20)."""
    spool = tempfile.TemporaryFile()
    text = io.TextIOWrapper(spool, encoding="utf-8", newline="")
    write_roll_csv(levy, text)
    text.flush()
    text.detach()
    spool.seek(0)
    return FileResponse(spool, as_attachment=True, filename=_export_name(levy, "csv"), content_type="text/csv; charset=utf-8")


def xlsx_too_long(line_count: int) -> str:
    return _("Una hoja de Excel (XLSX) admite a lo sumo %(max)s filas y este padrón tiene %(n)s líneas: "
             "descargue el CSV, que las tiene todas.") % {"max": f"{XLSX_MAX_ROWS:,}", "n": f"{line_count:,}"}


def _roll_xlsx(request: HttpRequest, levy: Levy) -> HttpResponse:
    """The roll as an Excel workbook (``write_roll_xlsx``), written row by row into a temporary
    file, then streamed from it (whole before the first byte, like the CSV). A roll longer than
    an XLSX sheet (1,048,576 rows) is refused back to the roll page with a message offering the
    CSV; the page says so before the export is asked for (issue 20)."""
    spool = tempfile.TemporaryFile()
    try:
        write_roll_xlsx(levy, spool, sheet_title=_("Padrón"), summary_title=_("Resumen"))
    except TooManyRowsForXlsx as exc:
        spool.close()
        messages.error(request, xlsx_too_long(exc.args[0]))
        return redirect("levy:roll", year=levy.fiscal_year.label)
    spool.seek(0)
    return FileResponse(spool, as_attachment=True, filename=_export_name(levy, "xlsx"),
                        content_type="application/vnd.openxmlformats-officedocument.spreadsheetml.sheet")


# ---------------------------------------------------------------------------------------------
# 5. What-if (a simulation: writes nothing)
# ---------------------------------------------------------------------------------------------


@role_required(*WHATIF_USERS)
def whatif(request: HttpRequest, year: str) -> HttpResponse:
    """The simulation form; a valid one queues ``levy_whatif`` (``levy.whatif``: the rules over the
    whole registry take too long for a request at 100,000 parcels, issue 20) and comes back here
    with ``job=<pk>``, which shows the job's progress, then its result. Writes no estimate, levy
    or roll."""
    label = year_label_or_404(year)
    start = rules.fiscal_year_start(label)
    # An unsaved FiscalYear when the year has no estimates yet: only .start and .pk are read.
    fiscal_year = FiscalYear.objects.filter(label=label).first() or FiscalYear(label=label, start=start)
    params = selectors.parameter_set_in_force(start)
    if params is None:
        raise Http404(_("No hay parámetros legales vigentes para ese año."))
    current = services.current_estimate(fiscal_year) if fiscal_year.pk else None
    if "run" in request.GET:
        form = WhatIfForm(request.GET, params=params.as_rules())
    else:
        form = WhatIfForm(initial=EstimateForm.initial_from(current), params=params.as_rules())
    _add_reserve_cap_hint(form, current, params)
    context: dict[str, Any] = {"label": label, "form": form, "current": current, "result": None, "job": None}
    job_id = request.GET.get("job", "")
    if job_id.isdigit():  # a simulation asked before: its progress or its result, never a second one
        job = get_object_or_404(Job, pk=int(job_id), kind=whatif_jobs.LEVY_WHATIF, created_by=request.user,
                                payload__fiscal_year=label)
        context["job"] = job
        context["waiting"] = job.status in (Job.Status.QUEUED, Job.Status.RUNNING)
        if job.status == Job.Status.FAILED:
            context["failed"] = job.error.splitlines()[0] if job.error else ""
        elif job.status == Job.Status.DONE and job.result.get("refused"):
            form.is_valid()
            form.add_error(None, job.result["refused"])
        elif job.status == Job.Status.DONE:
            stored = whatif_jobs.shown(job.result)
            context.update(stored)
            sheet = stored["sheet"]
            context["lines"] = worksheet_lines(sheet)
            context["credits_warning"] = credits_check(k0=sheet.k0, total_levy=sheet.total_levy,
                                                       safety_margin_rate=stored["safety_margin_rate"],
                                                       certified=sheet.credits_certified)
            context["existing"] = selectors.roll_levy(label) if fiscal_year.pk else None
    elif form.is_bound and form.is_valid():
        job = whatif_jobs.whatif_start(acting_user=request.user, fiscal_year=label, amounts=form.cleaned_data)
        query = request.GET.copy()
        query["job"] = str(job.pk)
        return redirect(f"{request.path}?{query.urlencode()}")
    return render(request, "levy/whatif.html", context)


# ---------------------------------------------------------------------------------------------
# 6. Legal parameters
# ---------------------------------------------------------------------------------------------

PERCENT_FIELDS = ("reserve_cap_rate", "safety_margin_rate", "pumped_weight", "surcharge_rate")
DOLLAR_FIELDS = ("water_first_year_rate", "water_max_authority_rate", "water_pumped_rate")


@role_required(*STAFF_ROLES)
def parameters(request: HttpRequest) -> HttpResponse:
    today = timezone.localdate()
    sets = list(selectors.parameter_sets())
    in_force = next((p for p in sets if p.effective_from <= today), None)
    shown = []
    for parameter_set in sets:
        rows = []
        for field in LegalParameterSet._meta.fields:
            if field.name in ("id", "created_at", "effective_from", "source", "reason", "created_by"):
                continue
            value = getattr(parameter_set, field.name)
            if field.name in PERCENT_FIELDS:
                display = f"{value * 100:,.2f} %"
            elif field.name in DOLLAR_FIELDS:
                display = money_text(value)
            elif isinstance(value, bool):
                display = _("Sí") if value else _("No")
            elif field.choices:
                display = getattr(parameter_set, f"get_{field.name}_display")()
            else:
                display = str(value)
            rows.append((field.verbose_name, display, field.name))
        shown.append({"set": parameter_set, "rows": rows, "in_force": parameter_set == in_force})
    return render(request, "levy/parameters.html", {"sets": shown, "today": today})
