"""Who signs a document: an officer's full name (the User's first and last name) and title
(``StaffProfile.title``). Billing asks ``officer_signature`` before it issues a certificate or a
notice and refuses to issue when it raises."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError
from django.utils.translation import gettext as _


class OfficerSignatureMissing(ValidationError):
    """The user has no full name or no title to sign with; the message says which and who fixes it."""


def officer_signature(user: Any) -> tuple[str, str]:
    """``(full name, title)`` as printed under a signature, e.g. ``("Ana Rivera Soto", "Colector de
    Rentas Internas")``; raises ``OfficerSignatureMissing`` (a ``ValidationError``) with a Spanish
    message when either is empty."""
    full_name = " ".join(user.get_full_name().split()) if user is not None else ""
    profile = getattr(user, "staff_profile", None) if user is not None else None
    title = " ".join((profile.title if profile is not None else "").split())
    username = user.get_username() if user is not None else "—"
    if not full_name and not title:
        missing = _("el nombre completo y el cargo")
    elif not full_name:
        missing = _("el nombre completo")
    elif not title:
        missing = _("el cargo")
    else:
        return full_name, title
    raise OfficerSignatureMissing(
        _("No se puede emitir: al usuario «%(u)s» le falta %(what)s para firmar. Un administrador lo completa "
          "en el administrador del sitio (Usuarios) o con «manage.py create_user … --full-name … --title …».")
        % {"u": username, "what": missing},
        code="officer_signature_missing",
    )
