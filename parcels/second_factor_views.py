"""The second-factor pages: the code after the password, enrolment, new recovery codes and the
account's own page (*Mi cuenta*); and the change of a first password an administrator set. The rules and writes are in ``parcels.second_factor``."""

from __future__ import annotations

import django_otp
from django import forms
from django.contrib import messages
from django.contrib.auth import update_session_auth_hash
from django.contrib.auth.decorators import login_required
from django.contrib.auth.forms import PasswordChangeForm
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

from . import second_factor, services
from .models import AccessEvent
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


def _log_refusal(request: HttpRequest, result: second_factor.Verification, *, detail: str = "") -> None:
    """A wrong or throttled code goes to the access log like a failed sign-in (issue 17 §6)."""
    if result.locked_until is not None:
        services.access_event_record(acting_user=request.user, kind=AccessEvent.Kind.OTP_THROTTLED, request=request,
                                     detail=" ".join(filter(None, [detail, "until " + result.locked_until.isoformat(timespec="seconds")])))
    else:
        services.access_event_record(acting_user=request.user, kind=AccessEvent.Kind.OTP_FAILED, request=request,
                                     detail=detail)


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
                services.access_event_record(acting_user=user, kind=AccessEvent.Kind.OTP_RECOVERY, request=request,
                                             detail=f"{left} left")
                messages.warning(request, _(
                    "Entró con un código de recuperación; le quedan %(n)s. Genere códigos nuevos en Mi cuenta.") % {"n": left})
            return redirect(next_url)
        _log_refusal(request, result)
        form.add_error("code", _refusal(result))
    return render(request, "account/verify.html", {"form": form, "next": next_url})


@never_cache
@sensitive_post_parameters("code")
@login_required
def enrol(request: HttpRequest) -> HttpResponse:
    """Add the authenticator app: QR code and secret of a key made for this session (10 minutes),
    confirmed by a first code; then the recovery codes, shown this once."""
    _account_user(request)
    user = request.user
    next_url = _next_url(request)
    if second_factor.second_factor_enrolled(user):
        return redirect("account:security")
    form = CodeForm(request.POST or None, numeric=True, help_text=_("Los seis dígitos que muestra la aplicación ahora."))
    if request.method == "POST" and form.is_valid():
        result, codes = second_factor.totp_enrolment_confirm(user=user, session=request.session,
                                                             code=form.cleaned_data["code"])
        if result.device is not None:
            django_otp.login(request, result.device)
            request.session.cycle_key()
            services.access_event_record(acting_user=user, kind=AccessEvent.Kind.OTP_ENROLLED, request=request)
            return render(request, "account/recovery_codes.html", {"codes": codes, "next": next_url, "enrolled": True})
        if result.expired:
            form.add_error("code", _("La clave que se le mostró caducó (dura 10 minutos sin confirmar). Borre esa cuenta de su "
                                   "aplicación y añada esta nueva."))
        else:
            _log_refusal(request, result, detail="enrolment")
            form.add_error("code", _refusal(result))
    device = second_factor.totp_enrolment_start(user=user, session=request.session)
    return render(request, "account/enrol.html", {
        "form": form, "next": next_url, "qr": second_factor.totp_qr_data_uri(device),
        "secret": second_factor.totp_secret(device), "uri": device.config_url,
        "required": second_factor.second_factor_required(user),
    })


class FirstPasswordChangeForm(PasswordChangeForm):
    """Django's change of password (the current one, the new one twice, the password validators),
    refusing a new password equal to the administrator's."""

    def clean_new_password1(self) -> str:
        password = self.cleaned_data.get("new_password1") or ""
        if password and self.user.check_password(password):
            raise forms.ValidationError(_("La contraseña nueva debe ser distinta de la que le dieron."), code="same")
        return password


@never_cache
@sensitive_post_parameters("old_password", "new_password1", "new_password2")
@login_required
def password_change(request: HttpRequest) -> HttpResponse:
    """The first sign-in with a password an administrator set: the user chooses their own before
    any other page, the second factor's enrolment included (issue 17 §6). Open only while that
    change is due; otherwise the account's page."""
    if not request.session.get(services.PASSWORD_CHANGE_SESSION_KEY):
        return redirect("account:security" if second_factor.may_enrol(request.user) else "home")
    next_url = _next_url(request)
    form = FirstPasswordChangeForm(request.user, request.POST or None)
    if request.method == "POST" and form.is_valid():
        user = form.save()
        update_session_auth_hash(request, user)
        services.password_change_done(acting_user=user, request=request)
        request.session.pop(services.PASSWORD_CHANGE_SESSION_KEY, None)
        messages.success(request, _("Su contraseña quedó cambiada."))
        return redirect(next_url)
    return render(request, "account/password_change.html", {"form": form, "next": next_url})


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
