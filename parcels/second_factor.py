"""The second factor at sign-in (django-otp): who must give it, enrolment, recovery codes, reset.

Staff (every role but landowners, and Django admin accounts) give a six-digit TOTP code from an
authenticator app after their password; a landowner may enrol from *Mi cuenta* and is asked for
the code from then on. Enrolment makes one TOTP device and ten single-use recovery codes (an
``otp_static`` device) shown once. A code is checked against one kind of device only (six
digits: the app; anything else: a recovery code), so a recovery code does not count as a wrong
app code; each device throttles its own failures (django-otp: 1, 2, 4, 8 … seconds).

There is no switch that turns any of this off: demo users and tests get real devices.
"""

from __future__ import annotations

import hashlib
from base64 import b32encode
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils.translation import gettext as _
from django_otp.models import Device
from django_otp.plugins.otp_static.models import StaticDevice, StaticToken
from django_otp.plugins.otp_totp.models import TOTPDevice

from .models import SecondFactorReset
from .roles import ROLES, STAFF_ROLES, has_role
from .services import acting

RECOVERY_CODE_COUNT = 10
TOTP_DEVICE_NAME = "app"
RECOVERY_DEVICE_NAME = "recovery"


def second_factor_enrolled(user: Any) -> bool:
    """``user`` has a confirmed authenticator app (enrolment done)."""
    return TOTPDevice.objects.filter(user_id=user.pk, confirmed=True).exists()


def second_factor_required(user: Any) -> bool:
    """Whether ``user``'s session must verify a code before it reaches any page: staff and admin
    accounts always, a landowner (or anyone else) once they enrolled. Cached on the instance."""
    if not getattr(user, "is_authenticated", False):
        return False
    cached = getattr(user, "_lajas_second_factor", None)
    if cached is None:
        cached = (user.is_staff or user.is_superuser or has_role(user, *STAFF_ROLES)
                  or second_factor_enrolled(user))
        user._lajas_second_factor = cached
    return cached


def second_factor_pending(user: Any) -> bool:
    """Signed in with the password, the code still owed."""
    return second_factor_required(user) and not user.is_verified()


def may_enrol(user: Any) -> bool:
    """Accounts in a role of the portal, and admin accounts, have a second factor to manage."""
    return bool(user.is_staff or user.is_superuser or has_role(user, *ROLES))


def totp_secret(device: TOTPDevice) -> str:
    """The key in base32 for typing into an app by hand, in groups of four."""
    text = b32encode(device.bin_key).decode("ascii").rstrip("=")
    return " ".join(text[index:index + 4] for index in range(0, len(text), 4))


def totp_qr_data_uri(device: TOTPDevice) -> str:
    """The ``otpauth://`` URI as a QR code PNG (a data: URI, which the CSP allows for images)."""
    import segno

    return segno.make(device.config_url, error="m", micro=False).png_data_uri(scale=5, border=4)


def normalized_code(code: str) -> str:
    """What the person typed, without the spaces and dashes people put in codes."""
    return "".join(code.split()).replace("-", "").lower()


# --- writes ------------------------------------------------------------------------------------


def totp_enrolment_start(*, user: AbstractBaseUser) -> TOTPDevice:
    """The unconfirmed device of the enrolment under way, created once and reused (a reload shows
    the same QR code, and failures on it are throttled like on any device)."""
    device = TOTPDevice.objects.filter(user=user, confirmed=False).order_by("pk").first()
    if device is None:
        device = TOTPDevice.objects.create(user=user, name=TOTP_DEVICE_NAME, confirmed=False)
    return device


@dataclass(frozen=True)
class Verification:
    device: Device | None  # the device that accepted the code
    locked_until: datetime | None = None  # the device refused to try (too many wrong codes)


def _attempt(devices: Any, token: str) -> Verification:
    for device in devices:
        allowed, info = device.verify_is_allowed()
        if not allowed:
            return Verification(None, (info or {}).get("locked_until"))
        if device.verify_token(token):
            return Verification(device)
    return Verification(None)


@transaction.atomic
def totp_enrolment_confirm(*, user: AbstractBaseUser, code: str) -> tuple[Verification, list[str]]:
    """The first code from the app confirms the device and issues the recovery codes (returned
    once, for the page to show). A wrong code leaves the device unconfirmed and throttled."""
    if second_factor_enrolled(user):
        return Verification(None), []
    devices = TOTPDevice.objects.select_for_update().filter(user=user, confirmed=False).order_by("pk")[:1]
    result = _attempt(devices, normalized_code(code))
    if result.device is None:
        return result, []
    result.device.confirmed = True
    result.device.save(update_fields=["confirmed"])
    TOTPDevice.objects.filter(user=user, confirmed=False).delete()
    return result, recovery_codes_issue(user=user)


@transaction.atomic
def recovery_codes_issue(*, user: AbstractBaseUser) -> list[str]:
    """Ten new single-use recovery codes; the old ones stop working."""
    device = StaticDevice.objects.filter(user=user).order_by("pk").first()
    if device is None:
        device = StaticDevice.objects.create(user=user, name=RECOVERY_DEVICE_NAME, confirmed=True)
    StaticToken.objects.filter(device__user=user).delete()
    StaticDevice.objects.filter(user=user).exclude(pk=device.pk).delete()
    codes = [StaticToken.random_token() for _ in range(RECOVERY_CODE_COUNT)]
    StaticToken.objects.bulk_create([StaticToken(device=device, token=code) for code in codes])
    return codes


def recovery_codes_left(user: Any) -> int:
    return StaticToken.objects.filter(device__user_id=user.pk, device__confirmed=True).count()


@transaction.atomic
def second_factor_verify(*, user: AbstractBaseUser, code: str) -> Verification:
    """Check a code at sign-in: six digits against the app, anything else against the recovery
    codes (a recovery code that works is used up)."""
    token = normalized_code(code)
    model = TOTPDevice if token.isdigit() else StaticDevice
    devices = model.objects.devices_for_user(user, confirmed=True).select_for_update().order_by("pk")
    return _attempt(devices, token)


@transaction.atomic
def second_factor_reset(*, acting_user: Any, user: AbstractBaseUser, reason: str) -> SecondFactorReset:
    """An administrator removes every second-factor device of ``user`` (a lost phone, used-up
    codes): the user enrols again at the next sign-in, and a session verified with a removed
    device owes the code again. Recorded in the audit trail with who did it."""
    if acting_user is None:
        raise ValidationError(_("Un restablecimiento necesita el administrador que lo hace."))
    removed = 0
    for model in (TOTPDevice, StaticDevice):
        _total, per_model = model.objects.filter(user=user).delete()
        removed += per_model.get(model._meta.label, 0)
    record = SecondFactorReset(user=user, username=user.get_username(), devices_removed=removed, reason=reason)
    record.full_clean()
    with acting(acting_user):
        record.save()
    return record


def demo_totp_key(username: str) -> str:
    """The fixed key of a demo user's app (hex, 20 bytes), derived from the name so that
    ``seed_demo`` prints the same secret on every machine. For demo data only."""
    return hashlib.sha1(f"lajas-demo-totp:{username}".encode()).hexdigest()


def demo_totp_device_set(*, user: AbstractBaseUser) -> TOTPDevice:
    """A demo user's confirmed app with the fixed demo key (``seed_demo`` only: it runs only
    where ``DEMO_DATA_ALLOWED``)."""
    device = TOTPDevice.objects.filter(user=user, confirmed=True).first()
    if device is None:
        device = TOTPDevice.objects.create(user=user, name=TOTP_DEVICE_NAME, confirmed=True,
                                           key=demo_totp_key(user.get_username()))
    return device
