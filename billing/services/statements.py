"""¶12, ¶13: the numbered *estado de cuenta* (``EC-<year>-000001``): today's amount of a parcel,
frozen (``accounts.statement(...).to_json()``), rendered to a PDF with its QR verification code,
stored and chained. The bill points to it for the amount of the day; it is issued on request
from the landowner portal, the counter, and the public "¿cuánto debo?" page (no user)."""

from __future__ import annotations

import json
import logging
from datetime import date
from typing import Any

from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext as _

from parcels.models import Parcel
from parcels.roles import COLLECTOR, HACIENDA, LANDOWNER, SUPERVISOR, has_role

from .. import accounts, chain, documents, pdf
from ..accounts import Statement
from ..errors import BillingError
from ..models import AccountStatement, IssuedDocument
from .numbering import numbers_allocate

logger = logging.getLogger(__name__)
STATEMENT_PREFIX = "EC"  # estado de cuenta
STATEMENT_STAFF = (COLLECTOR, SUPERVISOR, HACIENDA)


def statement_html(*, statement: AccountStatement, code: str, lang: str | None = None) -> str:
    """The statement's PDF as HTML, from its snapshot only (no name or address: the public page
    issues it too)."""
    data = statement.snapshot
    url = documents.verification_url(code) if code else ""
    with pdf.document_language(lang) as key:
        title = _("Estado de cuenta %(n)s") % {"n": statement.number}
        return pdf.html_for("billing/pdf/statement.html", {
            "statement": statement, "data": data, "items": Statement.from_json(data).lines, "as_of": statement.as_of,
            "verify_url": url, "verify_code": code, "qr": pdf.qr_data_uri(url) if url else "",
            "portal_url": documents.portal_url(),
        }, title=title, lang=key)


def _check_user(acting_user: Any, channel: str, parcel: Parcel) -> None:
    if channel == AccountStatement.Channel.PUBLIC:
        return
    if channel == AccountStatement.Channel.COUNTER and has_role(acting_user, *STATEMENT_STAFF):
        return
    if channel == AccountStatement.Channel.PORTAL and has_role(acting_user, LANDOWNER):
        from parcels.access import owner_ids_for_user

        if parcel.owner_id in set(owner_ids_for_user(acting_user)):
            return
    raise BillingError(_("El usuario %(u)s no puede emitir el estado de cuenta de este predio.")
                       % {"u": getattr(acting_user, "username", None)})


@transaction.atomic
def statement_issue(*, parcel: Parcel, channel: str, acting_user: Any | None = None, as_of: date | None = None,
                    lang: str | None = None) -> AccountStatement:
    """¶12, ¶13: a numbered *estado de cuenta* of ``parcel`` as of ``as_of`` (today): the
    statement frozen as its snapshot, its PDF stored in the same transaction and chained.
    ``channel`` is where it was asked for (``portal``: the parcel's owner; ``counter``: the
    Collector's office or Hacienda; ``public``: the "¿cuánto debo?" page, no user)."""
    if channel not in AccountStatement.Channel.values:
        raise BillingError(_("Canal desconocido."))
    _check_user(acting_user, channel, parcel)
    on = as_of or timezone.localdate()
    with pdf.document_language(lang):  # how each surcharge was counted, in the document's language
        snapshot = accounts.statement(parcel=parcel, as_of=on).to_json()
    number = numbers_allocate("statement", STATEMENT_PREFIX, on, 1)[0]
    user = acting_user if channel != AccountStatement.Channel.PUBLIC else None
    statement = AccountStatement(number=number, parcel=parcel, as_of=on, snapshot=snapshot, channel=channel, issued_by=user)
    statement.full_clean()
    statement.save()
    code = documents.verification_code(IssuedDocument.Kind.STATEMENT, number)
    data = pdf.html_to_pdf(statement_html(statement=statement, code=code, lang=lang))
    documents.document_save(documents.document_new(kind=IssuedDocument.Kind.STATEMENT, number=number, parcel_id=parcel.pk,
                                                   code=code, data=data, statement=statement))
    chain.link(chain.STATEMENT, statement.pk)
    logger.info("statement %s of %s issued (%s) by %s", number, parcel.parcel_id, channel, getattr(user, "username", None))
    return statement


def _as_stored(snapshot: dict) -> Any:
    """``snapshot`` as the JSON column gives it back (lists for tuples, and so on)."""
    return json.loads(json.dumps(snapshot))


@transaction.atomic
def statement_get_or_issue(*, parcel: Parcel, channel: str, acting_user: Any | None = None,
                           lang: str | None = None) -> tuple[AccountStatement, bool]:
    """Today's *estado de cuenta* of ``parcel`` from ``channel``: the last one issued there today
    when the account has not changed since (issue 17 §6: twenty requests in a row stored twenty
    permanent PDFs), else a new one (``statement_issue``); ``(statement, created)``.

    "Not changed" is read from the statement itself: today's ``accounts.statement`` equals the
    snapshot of the day's last estado (a payment, a void, a correction or a surcharge all change
    it; so does the document's language, which words its lines)."""
    _check_user(acting_user, channel, parcel)
    on = timezone.localdate()
    last = AccountStatement.objects.filter(parcel=parcel, as_of=on, channel=channel).order_by("-pk").first()
    if last is not None:
        with pdf.document_language(lang):
            today = accounts.statement(parcel=parcel, as_of=on).to_json()
        if _as_stored(today) == last.snapshot:
            return last, False
    return statement_issue(parcel=parcel, channel=channel, acting_user=acting_user, lang=lang), True

