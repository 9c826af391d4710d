"""Landowner portal accounts: staff invite a landowner by email, or the landowner claims an account
with the parcel number and the access code printed on the bill.

- The invite creates a landowner user without a usable password and emails a one-time link
  (Django's ``default_token_generator``) to choose one; the link expires after
  ``PASSWORD_RESET_TIMEOUT`` and stops working once a password is set or the user signs in.
- The claim checks the code of the parcel's *current* owner
  (``billing.documents.portal_access_code(parcel_id, owner_key)``), so after a sale the old owner's
  printed code no longer opens anything and the new owner's does.
- The cadastre number is read as the public lookup reads it (``billing.public``): with or without
  its prefix and dashes ("LAJ-000006", "laj000006", "000006").
- Failed claims are counted in the shared cache (``parcels.throttle``: every worker and app server
  sees one count) per client address (``parcels.network.client_ip``): after
  ``CLAIM_FAILURE_LIMIT`` failures in the last hour that address is refused even with the right
  code. A parcel has only a high daily cap (``CLAIM_PARCEL_DAILY_LIMIT``), so a stranger guessing
  at someone's number from elsewhere never shuts the owner out.
"""

from __future__ import annotations

import hmac
import logging
from datetime import date, timedelta
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser
from django.contrib.auth.tokens import default_token_generator
from django.core.exceptions import ValidationError
from django.core.mail import EmailMultiAlternatives
from django.db import IntegrityError, transaction
from django.db.models import Q
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils.encoding import force_bytes
from django.utils.http import urlsafe_base64_encode
from django.utils.translation import gettext as _

from parcels import throttle
from parcels.models import Owner, Parcel
from parcels.roles import LANDOWNER
from parcels.search import CodeKey, code_matches
from parcels.services import acting, user_create

from .documents import portal_access_code

logger = logging.getLogger("lajas.portal")

CLAIM_FAILURE_LIMIT = 5  # failed claims per client address in the window
CLAIM_WINDOW_SECONDS = 60 * 60
# Failed claims of one parcel in a day, from any address: only a brake on a guesser spread over many
# addresses (a code is 10 of 32 symbols), far above what the owner's own typing mistakes reach.
CLAIM_PARCEL_DAILY_LIMIT = 100
CLAIM_PARCEL_WINDOW_SECONDS = 24 * 60 * 60


class ClaimRefused(ValidationError):
    """A claim the service turned down; ``code`` says why (``mismatch``, ``throttled``, ``exists``)."""


def email_normalize(email: str) -> str:
    """Emails double as usernames, so one spelling per address: trimmed and lower-case."""
    return email.strip().lower()


def access_code_normalize(code: str) -> str:
    """How a typed code is compared: case, spaces and dashes do not matter."""
    return "".join(code.split()).replace("-", "").replace("\u2010", "").replace("\u2013", "").upper()


def access_code_matches(*, parcel: Parcel, typed: str) -> bool:
    """Constant-time comparison of ``typed`` with the code of the parcel's current owner."""
    expected = access_code_normalize(portal_access_code(parcel.parcel_id, parcel.owner.owner_key))
    # Bytes, not str: compare_digest refuses non-ASCII strings, and the typed code is anything.
    return hmac.compare_digest(access_code_normalize(typed).encode(), expected.encode())


# --- The cadastre number as typed ---------------------------------------------------------------

CANDIDATES = 20


def code_key(typed: str) -> str:
    """A cadastre number as the search compares it: letters and digits, upper case."""
    return "".join(ch for ch in typed.upper() if ch.isalnum())


def parcel_candidates(typed: str) -> list[Parcel]:
    """Parcels whose number is the one typed, with or without its prefix and dashes
    ("LAJ-000123", "laj000123", "000123"): it ends the stored number's letters and digits. The
    claim here and the public "¿cuánto debo?" (``billing.public``) read the number this way."""
    key = code_key(typed)
    if not key:
        return []
    rows = (Parcel.objects.select_related("owner").filter(code_matches("parcel_id", key))
            .annotate(key=CodeKey("parcel_id")).order_by("parcel_id")[:CANDIDATES])
    return [parcel for parcel in rows if parcel.key == key or (parcel.key.endswith(key) and not parcel.key[-len(key) - 1].isdigit())]


# --- Claim throttling ------------------------------------------------------------------------


def _claim_subject(*, parcels: list[Parcel], typed_parcel_id: str) -> str:
    """One counter per parcel whatever the spelling; a number that names no single parcel counts
    under its letters and digits, so a refusal looks the same whether or not the parcel exists."""
    return f"pk:{parcels[0].pk}" if len(parcels) == 1 else "typed:" + code_key(typed_parcel_id)


def _email_taken(email: str) -> bool:
    """Any user already signing in as, or reached at, ``email``: the owner's own accounts included,
    and any other (one user is linked to at most one owner)."""
    return get_user_model().objects.filter(Q(username__iexact=email) | Q(email__iexact=email)).exists()


def account_claim(*, parcel_id: str, access_code: str, email: str, password: str, client: str) -> AbstractBaseUser:
    """A landowner account for the current owner of ``parcel_id``, proven by the bill's access code.

    ``parcel_id`` is read as the public lookup reads it (with or without prefix and dashes);
    ``client`` is the client's address (``parcels.network.client_ip``), whose failures are counted.

    Raises ``ClaimRefused``: ``mismatch`` (one message whether the parcel or the code was wrong),
    ``throttled`` (too many failures from this address in the hour, or for this parcel in the day,
    checked before the code), or ``exists`` (an account already uses that email)."""
    email = email_normalize(email)
    candidates = parcel_candidates(parcel_id)
    by_client = {"scope": "portal-claim-client", "subject": client, "limit": CLAIM_FAILURE_LIMIT}
    by_parcel = {"scope": "portal-claim-parcel", "subject": _claim_subject(parcels=candidates, typed_parcel_id=parcel_id),
                 "limit": CLAIM_PARCEL_DAILY_LIMIT}
    if throttle.attempts(**by_client) >= CLAIM_FAILURE_LIMIT:
        logger.warning("portal claim throttled for client %s, number %r", client, parcel_id[:40])
        raise ClaimRefused(
            _("Hubo demasiados intentos fallidos desde su conexión. Intente de nuevo en una hora "
              "o llame a la Autoridad de Tierras."),
            code="throttled",
        )
    if throttle.attempts(**by_parcel) >= CLAIM_PARCEL_DAILY_LIMIT:
        logger.warning("portal claim throttled for number %r (daily cap), client %s", parcel_id[:40], client)
        raise ClaimRefused(
            _("Hubo demasiados intentos fallidos con este número de catastro hoy. Intente de nuevo mañana "
              "o llame a la Autoridad de Tierras."),
            code="throttled",
        )
    matched = [parcel for parcel in candidates if access_code_matches(parcel=parcel, typed=access_code)]
    if len(matched) != 1:
        throttle.attempt_record(**by_client, window=CLAIM_WINDOW_SECONDS)
        throttle.attempt_record(**by_parcel, window=CLAIM_PARCEL_WINDOW_SECONDS)
        raise ClaimRefused(_("El número de catastro o el código no coinciden."), code="mismatch")
    parcel = matched[0]
    exists = ClaimRefused(
        _("Ya hay una cuenta con ese correo electrónico. Entre con su contraseña o use «¿Olvidó su contraseña?»."),
        code="exists",
    )
    if _email_taken(email):
        raise exists
    try:
        with transaction.atomic(), acting(None, source="portal-claim"):
            user = user_create(username=email, email=email, password=password, role=LANDOWNER, owner=parcel.owner)
    except IntegrityError:  # the same address claimed twice at once: the unique username decides
        raise exists from None
    logger.info("portal account %s claimed for owner %s", user.pk, parcel.owner.owner_key)
    return user


# --- Invitations -----------------------------------------------------------------------------


@transaction.atomic
def owner_invite(*, acting_user: Any, owner: Owner, email: str) -> AbstractBaseUser:
    """Invite ``email`` to see ``owner``'s parcels: creates the landowner user (username = email,
    no usable password) unless it already exists for this owner, then emails a one-time link to
    choose the password. Inviting again resends the link; an address that belongs to another
    account is refused."""
    email = email_normalize(email)
    User = get_user_model()
    existing = list(
        User.objects.filter(Q(username__iexact=email) | Q(email__iexact=email)).select_related("owner_account")[:2]
    )
    if not existing:
        with acting(acting_user, source="portal-invite"):
            user = user_create(username=email, email=email, role=LANDOWNER, owner=owner)
    else:
        user = existing[0]
        account = getattr(user, "owner_account", None)
        if len(existing) > 1 or account is None or account.owner_id != owner.pk:
            raise ValidationError(_("Ese correo electrónico ya pertenece a otra cuenta del portal."), code="taken")
        if not user.is_active:
            raise ValidationError(_("La cuenta con ese correo electrónico está desactivada."), code="inactive")
    logger.info("portal invite of user %s for owner %s by %s", user.pk, owner.owner_key, getattr(acting_user, "username", None))
    transaction.on_commit(lambda: invite_email_send(user=user, owner=owner))
    return user


def invite_link(user: AbstractBaseUser) -> str:
    """The one-time link to choose a password, on ``SITE_URL`` (the service has no request)."""
    path = reverse("portal:activate", kwargs={
        "uidb64": urlsafe_base64_encode(force_bytes(user.pk)), "token": default_token_generator.make_token(user),
    })
    return settings.SITE_URL + path


def invite_email_send(*, user: AbstractBaseUser, owner: Owner) -> None:
    context = {"user": user, "owner": owner, "link": invite_link(user), "site_url": settings.SITE_URL,
               "timeout_days": max(1, settings.PASSWORD_RESET_TIMEOUT // 86400)}
    subject = "".join(render_to_string("portal/invite_subject.txt", context).splitlines())
    message = EmailMultiAlternatives(subject, render_to_string("portal/invite_email.txt", context), to=[user.email])
    message.attach_alternative(render_to_string("portal/invite_email.html", context), "text/html")
    message.send()


# --- Bills and numbered statements on demand (reads) ------------------------------------------


def installment_bills(parcel: Parcel, *, today: date | None = None) -> list[dict[str, Any]]:
    """Each installment of a finalized roll of ``parcel`` whose bill is offered by ``today``
    (from ``settings.BILL_OFFER_DAYS`` before it falls due, ``services.bills.offered_from``), with
    its bill when it has one (one per installment, ``services.bills``): the current fiscal year
    first, then the others newest first. What the portal's statement, the landowner's home and
    the counter offer to download."""
    return installment_bills_of([parcel], today=today)[parcel.pk]


def installment_bills_of(parcels: list[Parcel], *, today: date | None = None) -> dict[int, list[dict[str, Any]]]:
    """``installment_bills`` of each of ``parcels`` (by pk), in two queries whatever their number
    (the landowner's home lists every parcel: issue 20, query budgets)."""
    from django.utils import timezone

    from levy.models import Levy

    from .models import Bill, Charge

    today = today or timezone.localdate()
    horizon = today + timedelta(days=settings.BILL_OFFER_DAYS)
    charges = list(Charge.objects.filter(parcel__in=[parcel.pk for parcel in parcels], kind=Charge.Kind.INSTALLMENT,
                                         roll_line__levy__status=Levy.Status.FINAL, due_date__lte=horizon)
                   .select_related("fiscal_year").order_by("-fiscal_year__start", "number"))
    charges.sort(key=lambda charge: not (charge.fiscal_year.start <= today <= charge.fiscal_year.end))  # stable: current year first
    bills = {bill.charge_id: bill for bill in Bill.objects.filter(charge__in=charges).only("pk", "number", "charge_id")}
    found: dict[int, list[dict[str, Any]]] = {parcel.pk: [] for parcel in parcels}
    for charge in charges:
        found[charge.parcel_id].append({"charge": charge, "bill": bills.get(charge.pk)})
    return found
