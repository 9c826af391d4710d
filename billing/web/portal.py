"""Pages of the landowner portal: claim an account (public), invite a landowner (Authority staff),
and choose the password from an invitation (Django's ``PasswordResetConfirmView``, same token).

Forms of the landowner portal: claim an account with the bill's access code, staff invites,
and Django's password reset forms with our attributes.

Each visible field gets an ``autocomplete`` token; Django 5.2 ties help text and errors to the
input (``aria-describedby`` → ``<id>_helptext`` / ``<id>_error``), which ``portal/_fields.html``
renders with those ids."""

from __future__ import annotations

import logging
import unicodedata
from collections.abc import Iterator
from typing import Any

from django import forms
from django.contrib import messages
from django.contrib.auth import forms as auth_forms
from django.contrib.auth import get_user_model, login
from django.contrib.auth import views as auth_views
from django.contrib.auth.password_validation import password_validators_help_text_html, validate_password
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse_lazy
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django.views.decorators.cache import never_cache
from django.views.decorators.debug import sensitive_post_parameters
from django.views.decorators.http import require_POST

from parcels import throttle
from parcels.access import get_parcel_for_user
from parcels.middleware import client_ip
from parcels.models import Owner
from parcels.roles import AUTHORITY, COLLECTOR, HACIENDA, LANDOWNER, SUPERVISOR, has_role, role_required

from .. import documents, portal
from ..access import RECEIPT_STAFF, get_seizure_step_for_user
from ..errors import BillingError
from ..models import AccountStatement, Charge, ReprintLog
from ..portal import email_normalize
from ..services import bills, reprints, statements
from .counter import document_refused

logger = logging.getLogger("lajas.portal")

# Reset emails in an hour, per address asked for and per client address asking (parcels.throttle,
# the shared cache): enough for a mistyped attempt or a lost message, too few to flood a mailbox
# or to make the portal's relay a spammer. Every request counts, whether an account has the
# address or not, so the count says nothing about accounts either.
PASSWORD_RESET_PER_EMAIL = 3
PASSWORD_RESET_PER_CLIENT = 5
PASSWORD_RESET_WINDOW_SECONDS = 60 * 60


class ClaimForm(forms.Form):
    """What the landowner types: the parcel and code from the bill (*aviso de contribución*), their
    email and a password.

    Only shape is checked here (required fields, email, matching passwords, password strength);
    whether the parcel and code agree is the service's decision, so that it can count failures."""

    parcel_id = forms.CharField(
        label=gettext_lazy("Número de catastro"), max_length=40,
        help_text=gettext_lazy("Como aparece en su aviso de contribución, con o sin el prefijo y los guiones (por ejemplo LAJ-000123 o 000123)."),
        widget=forms.TextInput(attrs={"autocomplete": "off", "spellcheck": "false", "autocapitalize": "characters"}),
    )
    access_code = forms.CharField(
        label=gettext_lazy("Código de acceso"), max_length=20,
        help_text=gettext_lazy("Por ejemplo ABCDE-23456: diez letras y números impresos en su aviso de contribución."),
        widget=forms.TextInput(attrs={"autocomplete": "one-time-code", "spellcheck": "false", "autocapitalize": "characters"}),
    )
    email = forms.EmailField(
        label=gettext_lazy("Correo electrónico"), max_length=150,
        help_text=gettext_lazy("Será su usuario para entrar. Ahí le llegarán los enlaces para cambiar la contraseña."),
        widget=forms.EmailInput(attrs={"autocomplete": "username"}),
    )
    password1 = forms.CharField(
        label=gettext_lazy("Contraseña"), strip=False, help_text=password_validators_help_text_html,
        widget=forms.PasswordInput(attrs={"autocomplete": "new-password"}),
    )
    password2 = forms.CharField(
        label=gettext_lazy("Repita la contraseña"), strip=False,
        widget=forms.PasswordInput(attrs={"autocomplete": "new-password"}),
    )

    def clean_parcel_id(self) -> str:
        return self.cleaned_data["parcel_id"].strip()

    def clean_email(self) -> str:
        return email_normalize(self.cleaned_data["email"])

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        password1, password2 = data.get("password1"), data.get("password2")
        if password1:
            email = data.get("email", "")
            try:
                validate_password(password1, get_user_model()(username=email, email=email))
            except ValidationError as exc:
                self.add_error("password1", exc)
        if password1 and password2 and password1 != password2:
            self.add_error("password2", gettext_lazy("Las dos contraseñas no son iguales."))
        return data


class InviteForm(forms.Form):
    """Staff name the owner by key and the address that receives the link."""

    owner_key = forms.CharField(
        label=gettext_lazy("Clave del dueño"), max_length=40, help_text=gettext_lazy("Por ejemplo DL-000123."),
        widget=forms.TextInput(attrs={"autocomplete": "off", "spellcheck": "false"}),
    )
    email = forms.EmailField(
        label=gettext_lazy("Correo electrónico del terrateniente"), max_length=150,
        help_text=gettext_lazy("Recibirá un enlace para elegir su contraseña; será también su usuario."),
        widget=forms.EmailInput(attrs={"autocomplete": "off"}),
    )

    owner: Owner

    def clean_owner_key(self) -> str:
        value = self.cleaned_data["owner_key"].strip()
        matches = list(Owner.objects.filter(owner_key__iexact=value)[:2])
        if len(matches) != 1:
            raise ValidationError(gettext_lazy("No hay un dueño con la clave «%(key)s».") % {"key": value})
        self.owner = matches[0]
        return self.owner.owner_key

    def clean_email(self) -> str:
        return email_normalize(self.cleaned_data["email"])


class PasswordResetForm(auth_forms.PasswordResetForm):
    email = forms.EmailField(
        label=gettext_lazy("Correo electrónico"), max_length=254,
        help_text=gettext_lazy("El que usa para entrar o el que dio a la Autoridad."),
        widget=forms.EmailInput(attrs={"autocomplete": "email"}),
    )

    def get_users(self, email: str) -> Iterator[Any]:
        """Active users with this address, including those created without a password
        (``create_user`` without ``--password-stdin``, an invited landowner who lost the
        invitation): there is no other sign-in here, so the reset link is how they choose one.
        Django's own form skips them, and they could never get in."""
        users = get_user_model()._default_manager.filter(email__iexact=email, is_active=True)
        return (user for user in users if _email_matches(user, email))

    def save(self, *, request: Any = None, **kwargs: Any) -> None:
        """Sends the links unless this address or this client already asked too often in the hour;
        the page that follows is the same either way (PasswordResetDoneView)."""
        email = unicodedata.normalize("NFKC", self.cleaned_data["email"]).casefold()
        client = client_ip(request) if request is not None else ""
        by_email = {"scope": "password-reset-email", "subject": email, "limit": PASSWORD_RESET_PER_EMAIL}
        by_client = {"scope": "password-reset-client", "subject": client, "limit": PASSWORD_RESET_PER_CLIENT}
        if throttle.attempts(**by_email) >= PASSWORD_RESET_PER_EMAIL or throttle.attempts(**by_client) >= PASSWORD_RESET_PER_CLIENT:
            logger.warning("password reset throttled for client %s", client)
            return
        throttle.attempt_record(**by_email, window=PASSWORD_RESET_WINDOW_SECONDS)
        throttle.attempt_record(**by_client, window=PASSWORD_RESET_WINDOW_SECONDS)
        super().save(request=request, **kwargs)


def _email_matches(user: Any, email: str) -> bool:
    """The same address, compared as Django does (Unicode, case-insensitive)."""
    stored = getattr(user, user.get_email_field_name()) or ""
    return unicodedata.normalize("NFKC", email).casefold() == unicodedata.normalize("NFKC", stored).casefold()


class SetPasswordForm(auth_forms.SetPasswordForm):
    """Django's form (validators, matching), with our labels."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["new_password1"].label = gettext_lazy("Contraseña nueva")
        self.fields["new_password2"].label = gettext_lazy("Repita la contraseña nueva")


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
                client=client_ip(request),
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
    document = bills.bill_document(bill)  # rendered now if its printing batch has not reached it yet
    data = (documents.document_pdf(document) if created
            else reprints.reprint_issue(acting_user=request.user, document=document, channel=ReprintLog.Channel.PORTAL))
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


@role_required(*RECEIPT_STAFF, LANDOWNER)
def seizure_pdf(request: HttpRequest, pk: int) -> HttpResponse:
    """A seizure step's PDF (¶14) exactly as issued, for the parcel's owner (listed with the other
    issued documents of the statement, issue 18) and money staff; 404 for anyone else."""
    step = get_seizure_step_for_user(request.user, pk)
    try:
        data = documents.seizure_step_pdf(step)  # byte-identical to its hash, or refused (issue 20)
    except documents.DocumentAltered as exc:
        return document_refused(exc)
    return _pdf_response(data, f"{step.number}.pdf")
