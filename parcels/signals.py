"""Receivers that write the access log (``AccessEvent``) from Django's sign-in signals and
django-axes' lockout signal, so any sign-in flow (password, a second factor) is recorded without
touching its views. Only the user name is taken from the credentials, never the password."""

from __future__ import annotations

from typing import Any

from axes.signals import user_locked_out
from django.contrib.auth.signals import user_logged_in, user_logged_out, user_login_failed
from django.dispatch import receiver

from .models import AccessEvent
from .services import access_event_record


@receiver(user_logged_in, dispatch_uid="parcels.access_log.login")
def on_login(sender: Any, request: Any, user: Any, **kwargs: Any) -> None:
    access_event_record(acting_user=user, kind=AccessEvent.Kind.LOGIN, request=request)


@receiver(user_login_failed, dispatch_uid="parcels.access_log.login_failed")
def on_login_failed(sender: Any, credentials: dict, request: Any = None, **kwargs: Any) -> None:
    access_event_record(acting_user=None, kind=AccessEvent.Kind.LOGIN_FAILED, request=request,
                        username=str(credentials.get("username") or ""))


@receiver(user_locked_out, dispatch_uid="parcels.access_log.lockout")
def on_locked_out(sender: Any, request: Any, username: str | None = None, ip_address: str | None = None, **kwargs: Any) -> None:
    access_event_record(acting_user=None, kind=AccessEvent.Kind.LOCKOUT, request=request, username=username or "")


@receiver(user_logged_out, dispatch_uid="parcels.access_log.logout")
def on_logout(sender: Any, request: Any, user: Any, **kwargs: Any) -> None:
    if user is not None:
        access_event_record(acting_user=user, kind=AccessEvent.Kind.LOGOUT, request=request)
