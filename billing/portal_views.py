"""Pages of the landowner portal: claim an account (public), invite a landowner (Authority staff),
and choose the password from an invitation (Django's ``PasswordResetConfirmView``, same token)."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.contrib.auth import login
from django.contrib.auth import views as auth_views
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse_lazy
from django.utils.translation import gettext as _
from django.views.decorators.cache import never_cache
from django.views.decorators.debug import sensitive_post_parameters
from django.views.decorators.http import require_POST

from parcels import throttle
from parcels.access import get_parcel_for_user
from parcels.models import Owner
from parcels.roles import AUTHORITY, COLLECTOR, HACIENDA, LANDOWNER, SUPERVISOR, has_role, role_required

from . import documents, portal
from .errors import BillingError
from .models import AccountStatement, Charge, IssuedDocument
from .portal_forms import ClaimForm, InviteForm, SetPasswordForm
from .services import bills, statements

STATEMENT_LIMIT = 10  # a landowner's requests for one parcel's estado de cuenta in an hour

# AXES is the first backend and only throttles; the account itself authenticates with Django's.
LOGIN_BACKEND = "django.contrib.auth.backends.ModelBackend"


@never_cache
@sensitive_post_parameters("password1", "password2", "access_code")
def claim(request: HttpRequest) -> HttpResponse:
    form = ClaimForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            user = portal.account_claim(
                parcel_id=data["parcel_id"], access_code=data["access_code"], email=data["email"], password=data["password1"],
            )
        except ValidationError as exc:
            form.add_error(None, exc)
        else:
            login(request, user, backend=LOGIN_BACKEND)
            messages.success(request, _("Su cuenta está lista. Estos son sus predios."))
            return redirect("home")
    return render(request, "portal/claim.html", {"form": form})


@role_required(AUTHORITY)
def invite(request: HttpRequest) -> HttpResponse:
    """Two steps: the form, then a confirmation naming the owner, so a mistyped key cannot give
    a stranger someone else's parcels without staff seeing whose they are."""
    initial: dict[str, Any] = {}
    if key := request.GET.get("owner", "").strip():
        owner = Owner.objects.filter(owner_key=key).first()
        initial = {"owner_key": key, "email": owner.email if owner else ""}
    form = InviteForm(request.POST or None, initial=initial)
    context: dict[str, Any] = {"form": form}
    if request.method == "POST" and form.is_valid():
        if request.POST.get("confirm") != "1":
            context.update(confirm=True, owner=form.owner, parcels=form.owner.parcels.order_by("parcel_id")[:20],
                           parcel_count=form.owner.parcels.count(), accounts=form.owner.accounts.select_related("user"))
            return render(request, "portal/invite.html", context)
        try:
            portal.owner_invite(acting_user=request.user, owner=form.owner, email=form.cleaned_data["email"])
        except ValidationError as exc:
            form.add_error("email", exc)
        else:
            messages.success(request, _("Se envió a %(email)s el enlace para elegir su contraseña; la cuenta verá los predios de %(name)s (%(key)s).") % {
                "email": form.cleaned_data["email"], "name": form.owner.name, "key": form.owner.owner_key,
            })
            return redirect("portal:invite")
    return render(request, "portal/invite.html", context)


class ActivateView(auth_views.PasswordResetConfirmView):
    """The invitation's link: choose a password, then in straight to the landowner's home."""

    form_class = SetPasswordForm
    template_name = "portal/activate.html"
    success_url = reverse_lazy("home")
    post_reset_login = True
    post_reset_login_backend = LOGIN_BACKEND

    def form_valid(self, form: SetPasswordForm) -> HttpResponse:
        response = super().form_valid(form)
        messages.success(self.request, _("Su contraseña quedó guardada. Le damos la bienvenida al portal."))
        return response


# --- Bills and numbered statements on demand (the landowner's own, and the counter's) ------------

ON_DEMAND = (LANDOWNER, COLLECTOR, SUPERVISOR, HACIENDA)


def _pdf_response(data: bytes, filename: str) -> HttpResponse:
    response = HttpResponse(data, content_type="application/pdf")
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response


@require_POST
@role_required(*ON_DEMAND)
def installment_bill(request: HttpRequest, pk: int) -> HttpResponse:
    """The *aviso* of one installment: issued now when it has none (by the landowner from the
    portal, the collector at the counter), else the one on file (issued on demand or by bulk
    printing) as a reprint stamped COPIA. A landowner reaches only their own parcels (404)."""
    charge = get_object_or_404(Charge.objects.select_related("parcel"), pk=pk, kind=Charge.Kind.INSTALLMENT)
    get_parcel_for_user(request.user, charge.parcel_id)
    lang = getattr(charge.parcel.owner, "preferred_language", None) or None
    try:
        bill, created = bills.bill_get_or_issue(acting_user=request.user, charge=charge, lang=lang)
    except BillingError as exc:
        messages.error(request, str(exc))
        return redirect("billing:statement", pk=charge.parcel_id)
    document = IssuedDocument.objects.get(bill=bill)
    data = documents.document_pdf(document) if created else documents.document_copy(document)
    return _pdf_response(data, f"aviso-{bill.number}{'' if created else '-copia'}.pdf")


@require_POST
@role_required(*ON_DEMAND)
def statement_pdf(request: HttpRequest, pk: int) -> HttpResponse:
    """A numbered *estado de cuenta* of today, served as stored: the day's last one when the account
    has not changed since, else issued now (issue 17 §6). A landowner asks at most
    ``STATEMENT_LIMIT`` times an hour for a parcel's account."""
    parcel = get_parcel_for_user(request.user, pk)
    channel = AccountStatement.Channel.PORTAL if has_role(request.user, LANDOWNER) else AccountStatement.Channel.COUNTER
    if channel == AccountStatement.Channel.PORTAL and not throttle.attempt_record(
            scope="portal-statement", subject=str(parcel.pk), limit=STATEMENT_LIMIT, window=3600):
        messages.error(request, _("Pidió muchos estados de cuenta de este predio en la última hora. Inténtelo más tarde."))
        return redirect("billing:statement", pk=parcel.pk)
    try:
        issued, _created = statements.statement_get_or_issue(
            parcel=parcel, channel=channel, acting_user=request.user,
            lang=getattr(parcel.owner, "preferred_language", None) or None)
    except BillingError as exc:
        messages.error(request, str(exc))
        return redirect("billing:statement", pk=parcel.pk)
    return _pdf_response(documents.document_pdf(issued.document), f"estado-de-cuenta-{issued.number}.pdf")
