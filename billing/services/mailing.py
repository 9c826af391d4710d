"""Issue 19, mailing: the writes. ¶13 does not require a bill (a bill or an e-mail not received
never moves a date nor waives a surcharge); these are a courtesy the owner can count on.

- ``delivery_email_request`` / ``delivery_email_confirm`` / ``delivery_choose``: a landowner
  enters an e-mail address on the portal, gets a link (``TimestampSigner``, valid
  ``EMAIL_CONFIRM_DAYS``) that confirms it, and only then may choose e-mail delivery.
- ``batch_emails_send``: after a bulk-printing batch has rendered, the owners whose bills froze
  e-mail delivery get a link to the stored PDF; every attempt is logged (``BillEmail``).
- ``returned_mail_from_bill`` / ``returned_mail_from_parcel``: a clerk records an envelope the
  post office sent back; the owner is flagged for a new address (``parcels.services``).
"""

from __future__ import annotations

import logging
from typing import Any

from django.conf import settings
from django.core import signing
from django.core.exceptions import ValidationError
from django.core.mail import send_mail
from django.db import transaction
from django.urls import reverse
from django.utils import translation
from django.utils.translation import gettext as _

from parcels import services as registry
from parcels.models import Owner, Parcel, ReturnedMail
from parcels.roles import AUTHORITY, HACIENDA, has_role

from ..accounts import parcel_by_code
from ..errors import BillingError
from ..mailing import EMAIL, bill_delivery
from ..models import Bill, BillBatch, BillEmail

logger = logging.getLogger("lajas.mailing")

EMAIL_CONFIRM_SALT = "lajas.mailing.email-confirm"
EMAIL_CONFIRM_DAYS = 3
# Issue 19: returned envelopes come back to the office that mailed the bills (Hacienda) or to the
# registry that keeps the addresses (the Authority); either clerk records them.
RETURNED_MAIL_ROLES = (AUTHORITY, HACIENDA)


def _refuse(exc: ValidationError) -> BillingError:
    return BillingError(" ".join(exc.messages))


# --- E-mail address and delivery choice (portal) -------------------------------------------------


def email_confirm_token(owner: Owner) -> str:
    return signing.TimestampSigner(salt=EMAIL_CONFIRM_SALT).sign_object({"owner": owner.pk, "email": owner.email})


def email_confirm_url(owner: Owner) -> str:
    return settings.SITE_URL + reverse("portal:email-confirm", args=[email_confirm_token(owner)])


def _confirmation_send(owner: Owner) -> None:
    with translation.override(owner.preferred_language or "es"):
        subject = _("Confirme su correo electrónico para recibir los avisos de la contribución de riego")
        body = _("Para recibir por correo electrónico los avisos de la contribución de riego del Valle de Lajas, "
                 "abra este enlace (vale %(days)s días):\n\n%(url)s\n\nSi no lo pidió, no haga nada: seguirá "
                 "recibiendo los avisos en papel.") % {"days": EMAIL_CONFIRM_DAYS, "url": email_confirm_url(owner)}
    send_mail(settings.EMAIL_SUBJECT_PREFIX + subject, body, None, [owner.email])


@transaction.atomic
def delivery_email_request(*, acting_user: Any, owner: Owner, email: str) -> Owner:
    """The owner's e-mail address, entered on the portal: a changed address is unconfirmed (and
    delivery goes back to paper); a confirmation link is sent to it after the commit."""
    try:
        owner = registry.owner_email_set(acting_user=acting_user, owner=owner, email=email)
    except ValidationError as exc:
        raise _refuse(exc) from None
    if owner.email and owner.email_confirmed_at is None:
        transaction.on_commit(lambda: _confirmation_send(owner))
    return owner


def delivery_email_confirm(*, token: str) -> Owner:
    """Opening the link: a tampered, expired or outdated link is refused."""
    try:
        data = signing.TimestampSigner(salt=EMAIL_CONFIRM_SALT).unsign_object(token, max_age=EMAIL_CONFIRM_DAYS * 24 * 3600)
    except signing.SignatureExpired:
        raise BillingError(_("El enlace caducó. Pida otro desde el portal.")) from None
    except signing.BadSignature:
        raise BillingError(_("El enlace no es válido.")) from None
    try:
        return registry.owner_email_confirm(owner_id=int(data["owner"]), email=str(data["email"]))
    except ValidationError as exc:
        raise _refuse(exc) from None


def delivery_choose(*, acting_user: Any, owner: Owner, delivery: str) -> Owner:
    try:
        return registry.owner_delivery_set(acting_user=acting_user, owner=owner, delivery=delivery)
    except ValidationError as exc:
        raise _refuse(exc) from None


# --- E-mailed bills of a batch ---------------------------------------------------------------------


def _bill_email_send(bill: Bill, to: str, language: str) -> None:
    url = settings.SITE_URL + reverse("billing:document-pdf", args=[bill.document.pk])
    with translation.override(language or "es"):
        subject = _("Aviso de contribución de riego %(n)s, predio %(p)s") % {"n": bill.number, "p": bill.parcel.parcel_id}
        body = _("Su aviso de contribución de riego %(n)s del predio %(p)s está listo. Entre al portal y descárguelo "
                 "aquí:\n\n%(url)s\n\nEl aviso es una cortesía: no recibirlo no cambia la fecha de pago ni exime del "
                 "recargo (¶12, ¶13).") % {"n": bill.number, "p": bill.parcel.parcel_id, "url": url}
    send_mail(settings.EMAIL_SUBJECT_PREFIX + subject, body, None, [to])


def batch_emails_send(*, batch: BillBatch, charge_ids: list[int] | None = None) -> dict[str, int]:
    """E-mail each bill of the batch's installments whose snapshot froze e-mail delivery and that
    has no e-mail sent yet: a link to its stored PDF (``billing:document-pdf``, behind the
    owner's sign-in). Each attempt is logged (``BillEmail``); a failure is logged and retried by
    the next run. Returns the counts sent and failed."""
    from .bills import bill_batch_charges

    ids = charge_ids if charge_ids is not None else list(bill_batch_charges(batch).values_list("pk", flat=True))
    sent = failed = 0
    bills = (Bill.objects.filter(charge_id__in=ids).exclude(emails__status=BillEmail.Status.SENT)
             .select_related("parcel", "document").order_by("number"))
    for bill in bills.iterator(chunk_size=200):
        delivery = bill_delivery(bill.snapshot)
        if delivery.method != EMAIL or not delivery.email:
            continue
        try:
            _bill_email_send(bill, delivery.email, bill.snapshot.get("language", ""))
        except Exception as exc:  # the mail server's refusal is logged, the batch goes on
            logger.warning("bill %s: e-mail to %s failed: %s", bill.number, delivery.email, exc)
            BillEmail.objects.create(bill=bill, to=delivery.email, status=BillEmail.Status.FAILED, error=str(exc)[:300])
            failed += 1
        else:
            logger.info("bill %s e-mailed to %s", bill.number, delivery.email)
            BillEmail.objects.create(bill=bill, to=delivery.email, status=BillEmail.Status.SENT)
            sent += 1
    return {"sent": sent, "failed": failed}


# --- Returned mail -----------------------------------------------------------------------------------


def _check_clerk(acting_user: Any) -> None:
    if not has_role(acting_user, *RETURNED_MAIL_ROLES):
        raise BillingError(_("Solo el personal de la Autoridad o de Hacienda registra correo devuelto."))


def _address_text(delivery: Any) -> str:
    parts = [delivery.care_of and f"C/O {delivery.care_of}", delivery.line1, delivery.line2,
             f"{delivery.town} {delivery.state} {delivery.zip_code}".strip()]
    return ", ".join(part for part in parts if part)


@transaction.atomic
def returned_mail_from_bill(*, acting_user: Any, bill_number: str, note: str = "") -> ReturnedMail:
    """The envelope of bill ``bill_number`` came back: the owner it was addressed to (by the
    owner key the bill froze; the parcel's owner when that owner is gone) is flagged."""
    _check_clerk(acting_user)
    number = bill_number.strip().upper()
    bill = Bill.objects.select_related("parcel__owner").filter(number=number).first()
    if bill is None:
        raise BillingError(_("No hay un aviso con el número %(n)s.") % {"n": number or "—"})
    owner = Owner.objects.filter(owner_key=bill.snapshot.get("owner_key") or "").first() or bill.parcel.owner
    delivery = bill_delivery(bill.snapshot)
    try:
        return registry.returned_mail_record(acting_user=acting_user, owner=owner, parcel=bill.parcel, bill_number=bill.number,
                                             address=_address_text(delivery), note=note)
    except ValidationError as exc:
        raise _refuse(exc) from None


@transaction.atomic
def returned_mail_from_parcel(*, acting_user: Any, parcel_code: str, note: str = "") -> ReturnedMail:
    """Mail for parcel ``parcel_code`` came back (no bill number at hand): its current owner is flagged."""
    _check_clerk(acting_user)
    parcel: Parcel = parcel_by_code(parcel_code.strip())
    owner = parcel.owner
    address = ", ".join(owner.address_block)
    try:
        return registry.returned_mail_record(acting_user=acting_user, owner=owner, parcel=parcel, address=address, note=note)
    except ValidationError as exc:
        raise _refuse(exc) from None


def returned_mail_record(*, acting_user: Any, reference: str, note: str = "") -> ReturnedMail:
    """By bill number (``AV-…``) or by cadastre number, whichever the clerk typed."""
    text = reference.strip()
    if text.upper().startswith("AV-"):
        return returned_mail_from_bill(acting_user=acting_user, bill_number=text, note=note)
    return returned_mail_from_parcel(acting_user=acting_user, parcel_code=text, note=note)
