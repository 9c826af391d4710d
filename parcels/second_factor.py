"""The second factor at sign-in (django-otp): who must give it, enrolment, recovery codes, reset.

Staff (every role but landowners, and Django admin accounts) give a six-digit TOTP code from an
authenticator app after their password; a landowner may enrol from *Mi cuenta* and is asked for
the code from then on. Enrolment makes one TOTP device and ten single-use recovery codes (an
``otp_static`` device) shown once. The key of an enrolment belongs to the browser session that
was shown it and lives 10 minutes unconfirmed (issue 17 §6: a key read by someone else who had
the password is never the one the user confirms). A code is checked against one kind of device only (six
digits: the app; anything else: a recovery code), so a recovery code does not count as a wrong
app code; each device throttles its own failures (django-otp: 1, 2, 4, 8 … seconds).

There is no switch that turns any of this off: demo users and tests get real devices.
"""

from __future__ import annotations

import hashlib
from base64 import b32encode
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Q, QuerySet
from django.utils import timezone
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
# An enrolment's key lives this long unconfirmed, in the one session that was shown it.
ENROLMENT_LIFETIME = timedelta(minutes=10)
ENROLMENT_SESSION_KEY = "lajas_totp_enrolment"


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


@dataclass(frozen=True)
class Verification:
    device: Device | None  # the device that accepted the code
    locked_until: datetime | None = None  # the device refused to try (too many wrong codes)
    expired: bool = False  # enrolment: this session's key is gone (10 minutes, or never shown here)


def _enrolment_cutoff() -> datetime:
    return timezone.now() - ENROLMENT_LIFETIME


def totp_enrolments_expired_discard(*, user: AbstractBaseUser) -> int:
    """Remove ``user``'s unconfirmed apps older than ``ENROLMENT_LIFETIME`` (or of unknown age:
    those the single shared key of before issue 17 left behind)."""
    old = TOTPDevice.objects.filter(user=user, confirmed=False).filter(
        Q(created_at__lt=_enrolment_cutoff()) | Q(created_at__isnull=True))
    return old.delete()[1].get(TOTPDevice._meta.label, 0)


def _session_device(user: AbstractBaseUser, session: Any) -> QuerySet:
    """This session's unconfirmed app, if it is still young enough."""
    return TOTPDevice.objects.filter(pk=session.get(ENROLMENT_SESSION_KEY) or 0, user=user, confirmed=False,
                                     created_at__gte=_enrolment_cutoff())


@transaction.atomic
def totp_enrolment_start(*, user: AbstractBaseUser, session: Any) -> TOTPDevice:
    """The unconfirmed app of the enrolment under way in this browser ``session`` (issue 17 §6).

    Each session gets a key of its own, made fresh the first time it opens the page and shown
    again on a reload there for ``ENROLMENT_LIFETIME``; then it is discarded and a new one is made.
    A key read in one session (whoever opened the page with the same password) is never the key
    another session confirms, and confirming one removes the others."""
    totp_enrolments_expired_discard(user=user)
    device = _session_device(user, session).first()
    if device is None:
        device = TOTPDevice.objects.create(user=user, name=TOTP_DEVICE_NAME, confirmed=False)
        session[ENROLMENT_SESSION_KEY] = device.pk
    return device


def _attempt(devices: Any, token: str) -> Verification:
    for device in devices:
        allowed, info = device.verify_is_allowed()
        if not allowed:
            return Verification(None, (info or {}).get("locked_until"))
        if device.verify_token(token):
            return Verification(device)
    return Verification(None)


@transaction.atomic
def totp_enrolment_confirm(*, user: AbstractBaseUser, session: Any, code: str) -> tuple[Verification, list[str]]:
    """The first code from the app confirms this session's device (``totp_enrolment_start``) and
    issues the recovery codes (returned once, for the page to show); every other unconfirmed
    device of the user is removed. A wrong code leaves the device unconfirmed and throttled; a
    session whose key is older than ``ENROLMENT_LIFETIME`` (or that never had one) confirms
    nothing (``expired``)."""
    if second_factor_enrolled(user):
        return Verification(None), []
    devices = list(_session_device(user, session).select_for_update())
    if not devices:
        session.pop(ENROLMENT_SESSION_KEY, None)
        return Verification(None, expired=True), []
    result = _attempt(devices, normalized_code(code))
    if result.device is None:
        return result, []
    result.device.confirmed = True
    result.device.save(update_fields=["confirmed"])
    TOTPDevice.objects.filter(user=user, confirmed=False).delete()
    session.pop(ENROLMENT_SESSION_KEY, None)
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
