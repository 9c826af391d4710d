"""Signing in past the second factor in tests, with real django-otp devices: there is no switch
that turns the second factor off, so tests do what a person does (an app on a phone computing the
code from the device's key) or what ``django_otp.login`` does after a right code."""

from __future__ import annotations

from typing import Any

import django.test
from django_otp import DEVICE_ID_SESSION_KEY
from django_otp.oath import TOTP, hotp
from django_otp.plugins.otp_totp.models import TOTPDevice

from parcels.second_factor import TOTP_DEVICE_NAME, second_factor_required


def app_device(user: Any) -> TOTPDevice:
    """``user``'s confirmed authenticator app, added if they have none (as if enrolled)."""
    device = TOTPDevice.objects.filter(user=user, confirmed=True).first()
    if device is None:
        device = TOTPDevice.objects.create(user=user, name=TOTP_DEVICE_NAME, confirmed=True)
    return device


def totp_code(device: TOTPDevice) -> str:
    """The code an app with this device's key shows now; if this time step was already used (a
    second sign-in within 30 seconds), the next step's code, which the device's tolerance of one
    step accepts."""
    device.refresh_from_db()
    base = TOTP(device.bin_key, device.step, device.t0, device.digits, device.drift).t()
    step = max(base, device.last_t + 1)
    if step > base + device.tolerance:
        raise AssertionError("this device's codes for the next steps are used up; sign in less often in one test")
    return f"{hotp(device.bin_key, step, digits=device.digits):0{device.digits}d}"


def verify_session(client: django.test.Client, user: Any) -> TOTPDevice | None:
    """After ``force_login``: mark the session verified by ``user``'s app the way
    ``django_otp.login`` does, for a user who must give the second factor."""
    user.__dict__.pop("_lajas_second_factor", None)  # the answer cached for a request: ask again
    if not second_factor_required(user):
        return None
    device = app_device(user)
    session = client.session
    session[DEVICE_ID_SESSION_KEY] = device.persistent_id
    session.save()
    return device


class Client(django.test.Client):
    """Django's test client whose ``force_login`` also passes the second factor with a real
    device; ``force_login_password_only`` stops after the password, like a session that has
    not typed its code yet."""

    def force_login(self, user: Any, backend: str | None = None) -> None:
        super().force_login(user, backend)
        verify_session(self, user)

    def force_login_password_only(self, user: Any, backend: str | None = None) -> None:
        super().force_login(user, backend)


def pass_second_factor(client: django.test.Client, user: Any, next_url: str = "") -> Any:
    """After the password page: type the code of ``user``'s app on the code page (adding the app
    first if ``user`` has none, as if enrolled)."""
    from django.urls import reverse

    code = totp_code(app_device(user))
    return client.post(reverse("account:verify"), {"code": code, "next": next_url})
