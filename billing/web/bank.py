"""¶13 (issue 19): a collecting bank's payment files, under ``/cobros/banco/`` (namespace
``collections``): a supervisor uploads a file → sees what each line would do (applied,
exceptions, already applied; a malformed file's errors by line) → confirms; the exceptions queue
with its three resolutions. Hacienda and auditors read the files and the queue."""

from __future__ import annotations

import base64
import hashlib

from django import forms
from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django.views.decorators.http import require_POST

from parcels import review
from parcels.roles import AUDITOR, HACIENDA, SUPERVISOR, RoleDenied, has_role, role_required

from ..errors import BillingError
from ..models import BankFile, BankFileLine, BankLineResolution, Office
from ..services import bank as bank_services

READERS = (SUPERVISOR, HACIENDA, AUDITOR)
SESSION_KEY = "bank_file_upload"
IMPORT_ACT = "bank_file_import"


class BankFileForm(forms.Form):
    bank = forms.ModelChoiceField(label=gettext_lazy("Banco"), queryset=Office.objects.filter(kind=Office.Kind.BANK),
                                  to_field_name="code", empty_label=None)
    file = forms.FileField(
        label=gettext_lazy("Archivo de pagos del banco (CSV)"),
        widget=forms.ClearableFileInput(attrs={"accept": ".csv,text/csv"}),
        help_text=gettext_lazy("Columnas: trace_number, value_date (AAAA-MM-DD), amount (1234.56), reference (referencia RF o "
                               "número de catastro), payer_name; y para devoluciones kind = return y original_trace_number. "
                               "Vea docs/payment-files.md."),
    )

    def clean_file(self) -> bytes:
        upload = self.cleaned_data["file"]
        if upload.size > bank_services.MAX_BYTES:
            raise forms.ValidationError(gettext_lazy("El archivo pasa de 5 MB."))
        self.file_name = upload.name
        return upload.read()


class ResolveForm(forms.Form):
    line = forms.IntegerField(widget=forms.HiddenInput)
    action = forms.ChoiceField(label=gettext_lazy("Resolución"), choices=BankLineResolution.Action.choices)
    parcel = forms.CharField(label=gettext_lazy("Predio (catastro)"), required=False, max_length=40,
                             help_text=gettext_lazy("Para aplicar: el predio; en blanco, el que nombra la referencia."))
    note = forms.CharField(label=gettext_lazy("Nota"), required=False, max_length=200,
                           help_text=gettext_lazy("Para devolver: cómo se devolvió el dinero."))


def _figures(plan: bank_services.BankFilePlan) -> list[str]:
    return [plan.bank.code, plan.sha256, *(f"{item.line.line_number}:{item.outcome}:{item.parcel.pk if item.parcel else ''}"
                                           for item in plan.lines)]


def _list_context() -> dict:
    count, total = bank_services.unapplied_funds_total()
    return {"files": BankFile.objects.select_related("bank", "imported_by")[:50],
            "open_exceptions": len(bank_services.bank_exceptions_open()), "unapplied_count": count, "unapplied_total": total}


@role_required(*READERS)
def bank_files(request: HttpRequest) -> HttpResponse:
    """The files imported, and (supervisor) the upload: a POST shows the preview or the errors."""
    can_import = has_role(request.user, SUPERVISOR)
    if request.method == "POST" and not can_import:
        raise RoleDenied((SUPERVISOR,))
    form = BankFileForm(request.POST or None, request.FILES or None) if can_import else None
    errors: list[str] = []
    if request.method == "POST" and form.is_valid():
        bank, data = form.cleaned_data["bank"], form.cleaned_data["file"]
        try:
            plan = bank_services.bank_file_preview(acting_user=request.user, bank=bank, name=form.file_name, data=data)
        except bank_services.MalformedFile as refused:
            errors = refused.errors
        except BillingError as exc:
            form.add_error(None, str(exc))
        else:
            request.session[SESSION_KEY] = {"bank": bank.code, "name": form.file_name, "sha256": plan.sha256,
                                            "data": base64.b64encode(data).decode()}
            return _preview(request, plan)
    return render(request, "billing/bank/files.html", {"form": form, "import_errors": errors, **_list_context()})


def _preview(request: HttpRequest, plan: bank_services.BankFilePlan, *, changed: bool = False) -> HttpResponse:
    return render(request, "billing/bank/preview.html", {
        "plan": plan, "changed": changed, "fingerprint": review.fingerprint(IMPORT_ACT, _figures(plan)),
        "review_field": review.FIELD})


@role_required(SUPERVISOR)
@require_POST
def bank_file_confirm(request: HttpRequest) -> HttpResponse:
    """Import the file the preview showed, if what it would do is still what was shown."""
    upload = request.session.get(SESSION_KEY)
    if not upload or upload.get("sha256") != request.POST.get("sha256"):
        messages.error(request, _("No hay un archivo en revisión: súbalo otra vez."))
        return redirect("collections:bank-files")
    data = base64.b64decode(upload["data"])
    if hashlib.sha256(data).hexdigest() != upload["sha256"]:
        messages.error(request, _("No hay un archivo en revisión: súbalo otra vez."))
        return redirect("collections:bank-files")
    bank = bank_services.bank_office(upload["bank"])
    try:
        plan = bank_services.bank_file_preview(acting_user=request.user, bank=bank, name=upload["name"], data=data)
        if not review.reviewed(request.POST, IMPORT_ACT, _figures(plan)):
            return _preview(request, plan, changed=True)
        bank_file = bank_services.bank_file_import(acting_user=request.user, bank=bank, name=upload["name"], data=data)
    except BillingError as exc:
        messages.error(request, str(exc))
        return redirect("collections:bank-files")
    del request.session[SESSION_KEY]
    messages.success(request, _("Archivo importado: %(a)s aplicados, %(e)s excepciones, %(k)s ya aplicados.") % {
        "a": bank_file.applied_count, "e": bank_file.exception_count, "k": bank_file.already_count})
    return redirect("collections:bank-file", pk=bank_file.pk)


@role_required(*READERS)
def bank_file(request: HttpRequest, pk: int) -> HttpResponse:
    item = get_object_or_404(BankFile.objects.select_related("bank", "imported_by"), pk=pk)
    lines = (item.lines.select_related("parcel", "payment__receipt__office", "payment__void", "resolution__resolved_by",
                                       "resolution__payment__receipt__office", "resolution__parcel")
             .order_by("line_number"))
    return render(request, "billing/bank/file.html", {"file": item, "lines": lines})


@role_required(*READERS)
def bank_exceptions(request: HttpRequest) -> HttpResponse:
    """The exceptions queue: each open line with its resolutions (supervisor), and the funds kept unapplied."""
    can_resolve = has_role(request.user, SUPERVISOR)
    if request.method == "POST" and not can_resolve:
        raise RoleDenied((SUPERVISOR,))
    failed: dict[int, ResolveForm] = {}
    if request.method == "POST":
        form = ResolveForm(request.POST)
        if form.is_valid():
            line = get_object_or_404(BankFileLine, pk=form.cleaned_data["line"])
            try:
                resolution = bank_services.bank_exception_resolve(
                    acting_user=request.user, line=line, action=form.cleaned_data["action"],
                    parcel_code=form.cleaned_data["parcel"], note=form.cleaned_data["note"])
            except BillingError as exc:
                form.add_error(None, str(exc))
                failed[line.pk] = form
            else:
                receipt = getattr(resolution.payment, "receipt", None) if resolution.payment else None
                text = _("Línea %(n)s (rastreo %(t)s): %(a)s.") % {
                    "n": line.line_number, "t": line.trace_number, "a": resolution.get_action_display()}
                if receipt is not None:
                    text += " " + _("Recibo %(r)s.") % {"r": receipt.display_number}
                messages.success(request, text)
                return redirect("collections:bank-exceptions")
        else:
            try:
                failed[int(request.POST.get("line", ""))] = form
            except ValueError:
                pass
    rows = []
    for line in bank_services.bank_exceptions_open():
        choices = bank_services.bank_exception_choices(line)
        form = failed.get(line.pk) or ResolveForm(initial={"line": line.pk, "action": choices[0]}, auto_id=f"id_{line.pk}_%s")
        if line.pk in failed:
            form.auto_id = f"id_{line.pk}_%s"
        form.fields["action"].choices = [(value, label) for value, label in BankLineResolution.Action.choices if value in choices]
        if line.kind == BankFileLine.Kind.RETURN:
            del form.fields["parcel"]
        rows.append((line, form))
    resolved = (BankLineResolution.objects.select_related("line__file", "line__bank", "resolved_by", "payment__receipt__office",
                                                          "parcel").order_by("-resolved_at", "-id")[:50])
    count, total = bank_services.unapplied_funds_total()
    return render(request, "billing/bank/exceptions.html", {
        "rows": rows, "resolved": resolved, "can_resolve": can_resolve, "unapplied_count": count, "unapplied_total": total})
