"""The second-factor pages: the code after the password, enrolment, new recovery codes and the
account's own page (*Mi cuenta*). The rules and writes are in ``parcels.second_factor``."""

from __future__ import annotations

import django_otp
from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import formats, timezone
from django.utils.http import url_has_allowed_host_and_scheme
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django.views.decorators.cache import never_cache
from django.views.decorators.debug import sensitive_post_parameters
from django.views.decorators.http import require_POST
from django_otp.plugins.otp_static.models import StaticDevice

from . import second_factor
from .roles import LANDOWNER, has_role


class CodeForm(forms.Form):
    code = forms.CharField(
        label=gettext_lazy("Código"), max_length=40, strip=True,
        widget=forms.TextInput(attrs={"autocomplete": "one-time-code", "spellcheck": "false", "autocapitalize": "none",
                                      "autofocus": True}),
    )

    def __init__(self, *args, help_text: str = "", numeric: bool = False, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.fields["code"].help_text = help_text
        if numeric:
            self.fields["code"].widget.attrs["inputmode"] = "numeric"


def _next_url(request: HttpRequest) -> str:
    target = request.POST.get("next") or request.GET.get("next") or ""
    if url_has_allowed_host_and_scheme(target, allowed_hosts={request.get_host()}, require_https=request.is_secure()):
        return target
    return reverse("home")


def _refusal(result: second_factor.Verification) -> str:
    if result.locked_until is not None:
        when = formats.time_format(timezone.localtime(result.locked_until), "H:i:s")
        return _("Demasiados códigos incorrectos: espere hasta las %(when)s para intentarlo otra vez.") % {"when": when}
    return _("El código no es correcto. Revise la hora de su teléfono y escriba el código que muestra ahora.")


def _account_user(request: HttpRequest) -> None:
    if not second_factor.may_enrol(request.user):
        raise PermissionDenied


@never_cache
@sensitive_post_parameters("code")
@login_required
def verify(request: HttpRequest) -> HttpResponse:
    """The code after the password: six digits from the app, or one recovery code."""
    user = request.user
    next_url = _next_url(request)
    if not second_factor.second_factor_pending(user):
        return redirect(next_url)
    if not second_factor.second_factor_enrolled(user):
        return redirect_to_login(next_url, reverse("account:enrol"))
    form = CodeForm(request.POST or None, help_text=_(
        "Los seis dígitos que muestra su aplicación de autenticación, o uno de sus códigos de recuperación."))
    if request.method == "POST" and form.is_valid():
        result = second_factor.second_factor_verify(user=user, code=form.cleaned_data["code"])
        if result.device is not None:
            django_otp.login(request, result.device)
            request.session.cycle_key()
            if isinstance(result.device, StaticDevice):
                left = second_factor.recovery_codes_left(user)
                messages.warning(request, _(
                    "Entró con un código de recuperación; le quedan %(n)s. Genere códigos nuevos en Mi cuenta.") % {"n": left})
            return redirect(next_url)
        form.add_error("code", _refusal(result))
    return render(request, "account/verify.html", {"form": form, "next": next_url})


@never_cache
@sensitive_post_parameters("code")
@login_required
def enrol(request: HttpRequest) -> HttpResponse:
    """Add the authenticator app: QR code and secret, confirmed by a first code; then the
    recovery codes, shown this once."""
    _account_user(request)
    user = request.user
    next_url = _next_url(request)
    if second_factor.second_factor_enrolled(user):
        return redirect("account:security")
    device = second_factor.totp_enrolment_start(user=user)
    form = CodeForm(request.POST or None, numeric=True, help_text=_("Los seis dígitos que muestra la aplicación ahora."))
    if request.method == "POST" and form.is_valid():
        result, codes = second_factor.totp_enrolment_confirm(user=user, code=form.cleaned_data["code"])
        if result.device is not None:
            django_otp.login(request, result.device)
            request.session.cycle_key()
            return render(request, "account/recovery_codes.html", {"codes": codes, "next": next_url, "enrolled": True})
        form.add_error("code", _refusal(result))
    return render(request, "account/enrol.html", {
        "form": form, "next": next_url, "qr": second_factor.totp_qr_data_uri(device),
        "secret": second_factor.totp_secret(device), "uri": device.config_url,
        "required": second_factor.second_factor_required(user),
    })


@never_cache
@login_required
def security(request: HttpRequest) -> HttpResponse:
    """*Mi cuenta*: whether the second factor is on, and new recovery codes."""
    _account_user(request)
    user = request.user
    return render(request, "account/security.html", {
        "enrolled": second_factor.second_factor_enrolled(user),
        "codes_left": second_factor.recovery_codes_left(user),
        "optional": has_role(user, LANDOWNER) and not (user.is_staff or user.is_superuser),
    })


@never_cache
@login_required
@require_POST
def recovery_codes(request: HttpRequest) -> HttpResponse:
    """Ten new recovery codes (the old ones stop working), shown this once."""
    _account_user(request)
    if not second_factor.second_factor_enrolled(request.user):
        return redirect("account:enrol")
    codes = second_factor.recovery_codes_issue(user=request.user)
    return render(request, "account/recovery_codes.html", {"codes": codes, "next": reverse("account:security"),
                                                           "enrolled": False})
