"""The only way a view gets a receipt, bill or debt certificate for a user (a bill or certificate
follows its parcel's current owner, ``parcels.access``). For receipts: collection and treasury staff see any receipt, a
landowner only the receipts issued to their owner record (the owner snapshotted on the receipt when
it was paid: after a sale the previous owner keeps their receipts and the buyer does not see them);
anything else is 404, so a landowner cannot learn that another owner's receipt number exists."""

from __future__ import annotations

from typing import Any

from django.shortcuts import get_object_or_404

from parcels.access import NotYours, get_parcel_for_user
from parcels.roles import AUDITOR, COLLECTOR, HACIENDA, LANDOWNER, SUPERVISOR, has_role

from .models import IssuedDocument, Receipt, SeizureStep

# Staff who read any receipt or statement. The registry staff (authority) keep parcels, not money.
RECEIPT_STAFF = (COLLECTOR, SUPERVISOR, HACIENDA, AUDITOR)


def get_receipt_for_user(user: Any, pk: int) -> Receipt:
    queryset = Receipt.objects.select_related("office", "payment", "payment__parcel", "payment__void", "payment__void__voided_by")
    if has_role(user, *RECEIPT_STAFF):
        return get_object_or_404(queryset, pk=pk)
    if has_role(user, LANDOWNER):
        account = getattr(user, "owner_account", None)
        receipt = queryset.filter(pk=pk, snapshot__owner_key=account.owner.owner_key).first() if account else None
        if receipt is not None:
            return receipt
    raise NotYours("receipt", pk)


def get_document_for_user(user: Any, pk: int) -> IssuedDocument:
    """A bill, debt certificate or numbered estado de cuenta (without its PDF bytes) for staff or
    the parcel's current owner: the documents the statement lists under "Documentos emitidos"."""
    document = get_object_or_404(IssuedDocument.objects.defer("pdf"), pk=pk, kind__in=["bill", "certificate", "statement"])
    try:
        get_parcel_for_user(user, document.parcel_id)
    except NotYours:
        raise NotYours(document.kind, pk) from None
    return document


def get_seizure_step_for_user(user: Any, pk: int) -> SeizureStep:
    """A seizure step (¶14, with its stored PDF) for money staff or the parcel's current owner
    (the debt and its procedure stay with the land, ¶11); anyone else gets 404."""
    step = get_object_or_404(SeizureStep.objects.select_related("case"), pk=pk)
    try:
        get_parcel_for_user(user, step.case.parcel_id)
    except NotYours:
        raise NotYours("seizure", pk) from None
    return step
