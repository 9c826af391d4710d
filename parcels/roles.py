"""The roles of the portal, kept as Django groups (created by migration ``parcels.0002``).

A view names the roles that may use it; anything else is refused (403 for a signed-in user of
another role, the login page for anonymous visitors). Landowners only ever reach their own
objects through ``parcels.access`` / ``billing.access``, which answer 404 for anything else.
Both refusals are raised as their own exception classes (``RoleDenied``, ``access.NotYours``) so
``parcels.middleware.AccessAuditMiddleware`` records them in the access log.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any

from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.utils.translation import gettext_lazy as _

AUTHORITY = "authority"
HACIENDA = "hacienda"
COLLECTOR = "collector"
SUPERVISOR = "supervisor"
LANDOWNER = "landowner"
AUDITOR = "auditor"

ROLE_LABELS = {
    AUTHORITY: _("Autoridad (personal del registro)"),
    HACIENDA: _("Hacienda (oficial)"),
    COLLECTOR: _("Colecturía (colector)"),
    SUPERVISOR: _("Supervisor de colecturía"),
    LANDOWNER: _("Terrateniente"),
    AUDITOR: _("Auditor (solo lectura)"),
}
ROLES = tuple(ROLE_LABELS)
STAFF_ROLES = (AUTHORITY, HACIENDA, COLLECTOR, SUPERVISOR, AUDITOR)


class RoleDenied(PermissionDenied):
    """A signed-in user without any of the roles a view names (403, recorded in the access log)."""

    def __init__(self, roles: tuple[str, ...]) -> None:
        super().__init__()
        self.roles = roles


def user_roles(user: Any) -> frozenset[str]:
    """The role names of ``user`` (cached on the instance for the request)."""
    if not getattr(user, "is_authenticated", False):
        return frozenset()
    cached = getattr(user, "_lajas_roles", None)
    if cached is None:
        cached = frozenset(user.groups.values_list("name", flat=True))
        user._lajas_roles = cached
    return cached


def has_role(user: Any, *roles: str) -> bool:
    return bool(user_roles(user) & set(roles))


def role_required(*roles: str) -> Callable:
    """Decorator for function views: anonymous → login, signed in without the role → 403."""

    def decorator(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
        @wraps(view)
        def wrapped(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
            if not request.user.is_authenticated:
                return redirect_to_login(request.get_full_path())
            if not has_role(request.user, *roles):
                raise RoleDenied(roles)
            return view(request, *args, **kwargs)

        wrapped.allowed_roles = roles  # type: ignore[attr-defined]
        return wrapped

    return decorator
