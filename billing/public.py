"""The public "¿cuánto debo?" (no login): the cadastre number and the access code printed on the
bill (``documents.portal_access_code``) open today's statement of the parcel, without the owner's
name or address, and on request a numbered *estado de cuenta* PDF (``services.statements``).

Lookups are throttled in the shared cache (``parcels.throttle``: every worker and app server
counts the same attempts), per client address and per cadastre number: after
``FAILURE_LIMIT`` wrong pairs for a number, or ``CLIENT_FAILURE_LIMIT`` from an address, in the
last hour, lookups are refused even with the right code; an address also gets at most
``CLIENT_LOOKUP_LIMIT`` lookups an hour in all (each PDF is a numbered document). Every refusal
reads the same whether or not the parcel exists."""

from __future__ import annotations

import logging
from dataclasses import dataclass

from django.utils.translation import gettext as _

from parcels import throttle
from parcels.models import Parcel

from .portal import access_code_matches, code_key, parcel_candidates

logger = logging.getLogger("lajas.portal")

FAILURE_LIMIT = 5  # wrong codes per cadastre number in the window
CLIENT_FAILURE_LIMIT = 10  # wrong pairs per client address in the window
CLIENT_LOOKUP_LIMIT = 60  # lookups of any kind per client address in the window
WINDOW_SECONDS = 60 * 60


class LookupRefused(Exception):
    """``code`` is ``mismatch`` or ``throttled``; the message never says whether the parcel exists."""

    def __init__(self, message: str, code: str) -> None:
        super().__init__(message)
        self.code = code


@dataclass(frozen=True)
class Found:
    parcel: Parcel


def _refused(code: str) -> LookupRefused:
    if code == "throttled":
        return LookupRefused(_("Hubo demasiados intentos. Intente de nuevo en una hora o acuda a la Oficina del Colector."), code)
    return LookupRefused(_("El número de catastro o el código de acceso no coinciden."), code)


def lookup(*, parcel_id: str, access_code: str, client: str) -> Found:
    """The parcel of the typed cadastre number whose current owner's access code was typed;
    ``LookupRefused`` otherwise (or when throttled, checked before the code)."""
    candidates = parcel_candidates(parcel_id)
    subject = f"pk:{candidates[0].pk}" if len(candidates) == 1 else "typed:" + code_key(parcel_id)
    by_parcel = {"scope": "owed-parcel", "subject": subject, "limit": FAILURE_LIMIT}
    by_client = {"scope": "owed-client", "subject": client, "limit": CLIENT_FAILURE_LIMIT}
    every = {"scope": "owed-lookup", "subject": client, "limit": CLIENT_LOOKUP_LIMIT}
    if (throttle.attempts(**by_parcel) >= FAILURE_LIMIT or throttle.attempts(**by_client) >= CLIENT_FAILURE_LIMIT
            or not throttle.attempt_record(**every, window=WINDOW_SECONDS)):
        logger.warning("public lookup throttled for client %s, number %r", client, parcel_id[:40])
        raise _refused("throttled")
    matched = [parcel for parcel in candidates if access_code_matches(parcel=parcel, typed=access_code)]
    if len(matched) != 1:
        throttle.attempt_record(**by_parcel, window=WINDOW_SECONDS)
        throttle.attempt_record(**by_client, window=WINDOW_SECONDS)
        raise _refused("mismatch")
    return Found(parcel=matched[0])

