"""Receivers that write the access log (``AccessEvent``) from Django's sign-in signals and
django-axes' lockout signal, so any sign-in flow (password, a second factor) is recorded without
touching its views (the second factor's own events are written by its views). Only the user name is taken from the credentials, never the password."""

from __future__ import annotations

from typing import Any

from axes.signals import user_locked_out
from django.contrib.auth.signals import user_logged_in, user_logged_out, user_login_failed
from django.dispatch import receiver

from .models import AccessEvent
from .services import PASSWORD_CHANGE_SESSION_KEY, access_event_record, password_change_is_due


@receiver(user_logged_in, dispatch_uid="parcels.access_log.login")
def on_login(sender: Any, request: Any, user: Any, **kwargs: Any) -> None:
    access_event_record(acting_user=user, kind=AccessEvent.Kind.LOGIN, request=request)
    if request is not None and hasattr(request, "session") and password_change_is_due(user):
        request.session[PASSWORD_CHANGE_SESSION_KEY] = True


@receiver(user_login_failed, dispatch_uid="parcels.access_log.login_failed")
def on_login_failed(sender: Any, credentials: dict, request: Any = None, **kwargs: Any) -> None:
    access_event_record(acting_user=None, kind=AccessEvent.Kind.LOGIN_FAILED, request=request,
                        username=str(credentials.get("username") or ""))


@receiver(user_locked_out, dispatch_uid="parcels.access_log.lockout")
def on_locked_out(sender: Any, request: Any, username: str | None = None, ip_address: str | None = None, **kwargs: Any) -> None:
    access_event_record(acting_user=None, kind=AccessEvent.Kind.LOCKOUT, request=request, username=username or "")


@receiver(user_logged_out, dispatch_uid="parcels.access_log.logout")
def on_logout(sender: Any, request: Any, user: Any, **kwargs: Any) -> None:
    """A sign-out; one that leaves a session still owing its second-factor code is recorded as
    such first (signed in with the password, never with the code)."""
    if user is None:
        return
    from .second_factor import second_factor_required

    if callable(getattr(user, "is_verified", None)) and second_factor_required(user) and not user.is_verified():
        access_event_record(acting_user=user, kind=AccessEvent.Kind.OTP_ABANDONED, request=request)
    access_event_record(acting_user=user, kind=AccessEvent.Kind.LOGOUT, request=request)
