"""Forms of the landowner portal: claim an account with the bill's access code, staff invites,
and Django's password reset forms with our attributes.

Each visible field gets an ``autocomplete`` token; Django 5.2 ties help text and errors to the
input (``aria-describedby`` → ``<id>_helptext`` / ``<id>_error``), which ``portal/_fields.html``
renders with those ids.
"""

from __future__ import annotations

import logging
import unicodedata
from collections.abc import Iterator
from typing import Any

from django import forms
from django.contrib.auth import forms as auth_forms
from django.contrib.auth import get_user_model
from django.contrib.auth.password_validation import password_validators_help_text_html, validate_password
from django.core.exceptions import ValidationError
from django.utils.translation import gettext_lazy as _

from parcels import throttle
from parcels.middleware import client_ip
from parcels.models import Owner

from .portal import email_normalize

logger = logging.getLogger("lajas.portal")

# Reset emails in an hour, per address asked for and per client address asking (parcels.throttle,
# the shared cache): enough for a mistyped attempt or a lost message, too few to flood a mailbox
# or to make the portal's relay a spammer. Every request counts, whether an account has the
# address or not, so the count says nothing about accounts either.
PASSWORD_RESET_PER_EMAIL = 3
PASSWORD_RESET_PER_CLIENT = 5
PASSWORD_RESET_WINDOW_SECONDS = 60 * 60


class ClaimForm(forms.Form):
    """What the landowner types: the parcel and code from the bill, their email and a password.

    Only shape is checked here (required fields, email, matching passwords, password strength);
    whether the parcel and code agree is the service's decision, so that it can count failures."""

    parcel_id = forms.CharField(
        label=_("Número de catastro"), max_length=40,
        help_text=_("Como aparece en su factura, por ejemplo LAJ-000123."),
        widget=forms.TextInput(attrs={"autocomplete": "off", "spellcheck": "false", "autocapitalize": "characters"}),
    )
    access_code = forms.CharField(
        label=_("Código de acceso"), max_length=20,
        help_text=_("Por ejemplo ABCDE-23456: diez letras y números impresos en su factura."),
        widget=forms.TextInput(attrs={"autocomplete": "one-time-code", "spellcheck": "false", "autocapitalize": "characters"}),
    )
    email = forms.EmailField(
        label=_("Correo electrónico"), max_length=150,
        help_text=_("Será su usuario para entrar. Ahí le llegarán los enlaces para cambiar la contraseña."),
        widget=forms.EmailInput(attrs={"autocomplete": "username"}),
    )
    password1 = forms.CharField(
        label=_("Contraseña"), strip=False, help_text=password_validators_help_text_html,
        widget=forms.PasswordInput(attrs={"autocomplete": "new-password"}),
    )
    password2 = forms.CharField(
        label=_("Repita la contraseña"), strip=False,
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
            self.add_error("password2", _("Las dos contraseñas no son iguales."))
        return data


class InviteForm(forms.Form):
    """Staff name the owner by key and the address that receives the link."""

    owner_key = forms.CharField(
        label=_("Clave del dueño"), max_length=40, help_text=_("Por ejemplo DL-000123."),
        widget=forms.TextInput(attrs={"autocomplete": "off", "spellcheck": "false"}),
    )
    email = forms.EmailField(
        label=_("Correo electrónico del terrateniente"), max_length=150,
        help_text=_("Recibirá un enlace para elegir su contraseña; será también su usuario."),
        widget=forms.EmailInput(attrs={"autocomplete": "off"}),
    )

    owner: Owner

    def clean_owner_key(self) -> str:
        value = self.cleaned_data["owner_key"].strip()
        matches = list(Owner.objects.filter(owner_key__iexact=value)[:2])
        if len(matches) != 1:
            raise ValidationError(_("No hay un dueño con la clave «%(key)s».") % {"key": value})
        self.owner = matches[0]
        return self.owner.owner_key

    def clean_email(self) -> str:
        return email_normalize(self.cleaned_data["email"])


class PasswordResetForm(auth_forms.PasswordResetForm):
    email = forms.EmailField(
        label=_("Correo electrónico"), max_length=254,
        help_text=_("El que usa para entrar o el que dio a la Autoridad."),
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
        self.fields["new_password1"].label = _("Contraseña nueva")
        self.fields["new_password2"].label = _("Repita la contraseña nueva")
