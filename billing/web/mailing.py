"""Issue 19, mailing pages: the landowner's choice of paper or e-mail delivery (portal) and the
link that confirms the e-mail address; the clerk's returned-mail page; a batch's mailing list and
its counts per ZIP as CSV. Each view binds a form, calls one service, then redirects or renders."""

from __future__ import annotations

from django import forms
from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_safe

from parcels import throttle
from parcels.models import Owner, ReturnedMail
from parcels.roles import AUDITOR, HACIENDA, LANDOWNER, RoleDenied, has_role, role_required

from .. import bulk, mailing
from ..errors import BillingError
from ..models import BillBatch
from ..services import mailing as mailing_services

# Confirmation links an owner may ask for in an hour: enough for a typo or a lost message, too few
# to make the portal's mail relay send to strangers' addresses (parcels.throttle, the shared cache).
CONFIRM_LINKS_PER_HOUR = 5


class EmailForm(forms.Form):
    email = forms.EmailField(
        label=gettext_lazy("Correo electrónico para los avisos"), max_length=254,
        help_text=gettext_lazy("Le enviaremos un enlace para confirmarlo. Hasta que lo abra, los avisos siguen llegando en papel."),
        widget=forms.EmailInput(attrs={"autocomplete": "email"}),
    )


class DeliveryForm(forms.Form):
    delivery = forms.ChoiceField(label=gettext_lazy("¿Cómo quiere recibir sus avisos?"), choices=Owner.Delivery.choices,
                                 widget=forms.RadioSelect)


def _owner_of(request: HttpRequest) -> Owner:
    account = getattr(request.user, "owner_account", None)
    if account is None:
        raise Http404
    return Owner.objects.get(pk=account.owner_id)


@never_cache
@role_required(LANDOWNER)
def delivery(request: HttpRequest) -> HttpResponse:
    """The landowner's delivery page: the e-mail address (a link confirms it) and paper or e-mail."""
    owner = _owner_of(request)
    email_form = EmailForm(request.POST if request.POST.get("action") == "email" else None, initial={"email": owner.email},
                           prefix="email")
    delivery_form = DeliveryForm(request.POST if request.POST.get("action") == "delivery" else None,
                                 initial={"delivery": owner.delivery}, prefix="delivery")
    if request.method == "POST":
        try:
            if request.POST.get("action") == "email" and email_form.is_valid():
                if not throttle.attempt_record(scope="portal-email-confirm", subject=str(owner.pk), limit=CONFIRM_LINKS_PER_HOUR,
                                               window=3600):
                    raise BillingError(_("Pidió muchos enlaces de confirmación en la última hora. Inténtelo más tarde."))
                owner = mailing_services.delivery_email_request(acting_user=request.user, owner=owner,
                                                                email=email_form.cleaned_data["email"])
                if owner.email_confirmed_at is None:
                    messages.success(request, _("Le enviamos un enlace a %(email)s: ábralo para confirmar su correo.") % {
                        "email": owner.email})
                else:
                    messages.success(request, _("Su correo ya estaba confirmado."))
                return redirect("portal:delivery")
            if request.POST.get("action") == "delivery" and delivery_form.is_valid():
                owner = mailing_services.delivery_choose(acting_user=request.user, owner=owner,
                                                         delivery=delivery_form.cleaned_data["delivery"])
                messages.success(request, _("Recibirá sus avisos: %(how)s.") % {"how": owner.get_delivery_display().lower()})
                return redirect("portal:delivery")
        except BillingError as exc:
            (email_form if request.POST.get("action") == "email" else delivery_form).add_error(None, str(exc))
    return render(request, "portal/delivery.html", {
        "owner": owner, "email_form": email_form, "delivery_form": delivery_form,
        "confirmed": bool(owner.email and owner.email_confirmed_at),
    })


@never_cache
@require_safe
def email_confirm(request: HttpRequest, token: str) -> HttpResponse:
    """The link e-mailed to the address (no sign-in needed: the signed link is the proof)."""
    try:
        owner = mailing_services.delivery_email_confirm(token=token)
    except BillingError as exc:
        return render(request, "portal/email_confirm.html", {"error": str(exc)}, status=400)
    return render(request, "portal/email_confirm.html", {"owner": owner})


class ReturnedMailForm(forms.Form):
    reference = forms.CharField(
        label=gettext_lazy("Número de aviso o número de catastro"), max_length=40,
        help_text=gettext_lazy("Como aparece en el sobre devuelto: AV-2026-000123, o el predio LAJ-000123."),
        widget=forms.TextInput(attrs={"autocomplete": "off", "spellcheck": "false", "autocapitalize": "characters"}),
    )
    note = forms.CharField(label=gettext_lazy("Nota"), max_length=300, required=False,
                           help_text=gettext_lazy("Opcional: lo que dice el sello del correo, por ejemplo «dirección insuficiente»."))


@never_cache
@role_required(*mailing_services.RETURNED_MAIL_ROLES, AUDITOR)
def returned_mail(request: HttpRequest) -> HttpResponse:
    """Record an envelope the post office sent back; the latest returns below."""
    if request.method == "POST" and not has_role(request.user, *mailing_services.RETURNED_MAIL_ROLES):
        raise RoleDenied(mailing_services.RETURNED_MAIL_ROLES)  # the auditor reads the page, records nothing
    form = ReturnedMailForm(request.POST or None)
    if request.method == "POST":
        if form.is_valid():
            try:
                returned = mailing_services.returned_mail_record(acting_user=request.user, reference=form.cleaned_data["reference"],
                                                                 note=form.cleaned_data["note"])
            except BillingError as exc:
                form.add_error("reference", str(exc))
            else:
                messages.success(request, _("Correo devuelto registrado: %(name)s (%(key)s) queda señalado para una dirección nueva.") % {
                    "name": returned.owner.name, "key": returned.owner.owner_key})
                return redirect("collections:returned-mail")
    recent = ReturnedMail.objects.select_related("owner", "parcel", "recorded_by")[:50]
    return render(request, "billing/returned_mail.html", {"form": form, "recent": recent})


def _csv(text: str, filename: str) -> HttpResponse:
    response = HttpResponse(text, content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response


@role_required(HACIENDA)
def batch_mailing_list(request: HttpRequest, pk: int, what: str) -> HttpResponse:
    """A batch's mailing list (``lista``) or its counts per ZIP (``por-zip``), as CSV."""
    import io

    batch = get_object_or_404(BillBatch.objects.select_related("fiscal_year"), pk=pk)
    rows = bulk.batch_rows(batch)
    handle = io.StringIO()
    stem = f"lista-de-correo-{batch.fiscal_year.label}-plazo{batch.number}-lote{batch.pk}"
    if what == "por-zip":
        mailing.write_zip_counts(rows, handle)
        return _csv(handle.getvalue(), f"{stem}-por-zip.csv")
    mailing.write_mailing_list(rows, handle)
    return _csv(handle.getvalue(), f"{stem}.csv")
