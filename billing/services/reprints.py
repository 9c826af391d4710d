"""Issue 19: COPIA reprints of issued documents, each one logged (``ReprintLog``: who, when, which
document, from where) for the auditors' register of reprints (``billing.registers``). The stored
document never changes: the copy is its stored bytes with the COPIA stamp of the day laid over
them (``documents.document_copy``)."""

from __future__ import annotations

from datetime import date
from typing import Any

from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext as _

from .. import documents
from ..errors import BillingError
from ..models import IssuedDocument, ReprintLog


@transaction.atomic
def reprint_issue(*, acting_user: Any, document: IssuedDocument, channel: str, on: date | None = None) -> bytes:
    """The COPIA reprint of ``document`` stamped with ``on`` (today by default), and its log row.
    The caller has already checked that ``acting_user`` may see the document (``billing.access``)."""
    if acting_user is None or not getattr(acting_user, "is_authenticated", False):
        raise BillingError(_("Una reimpresión (COPIA) queda registrada a nombre de quien la pide: identifíquese."))
    if channel not in ReprintLog.Channel.values:
        raise BillingError(_("Canal de reimpresión desconocido: %(c)s.") % {"c": channel})
    on = on or timezone.localdate()
    data = documents.document_copy(document, on=on)
    ReprintLog.objects.create(document=document, printed_by=acting_user, printed_on=on, channel=channel)
    return data
