"""What became of the collector's last payment form, told after signing in again.

A session that times out in the middle of a payment leaves the collector not knowing whether the
money was recorded. Two things make it knowable, both keyed by the form's idempotency key (one
per rendering of the form, ``Payment.idempotency_key`` is unique):

- every payment form a signed-in collector sends is remembered in the shared cache, keyed by
  user, just before the payment service runs (so whichever process answers, it is known);
- a form sent after the session expired never reaches the service (the sign-in page answers
  instead); what it carried is kept in the new, anonymous session, which survives the sign-in.

After signing in again the counter pages look the key up: a payment with that key exists (its
receipt) or none does (nothing was charged). Reads and cache writes only; no business rows.

Only a payment whose outcome the collector never saw is news (issue 17): a form answered on
screen (its receipt page shown, or the counter page with its refusal or its question) is marked
answered and not told again after the next sign-in. A recorded payment a supervisor voided
since is told as voided, never as "do not collect it again".
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal, InvalidOperation
from typing import Any

from django.core.cache import cache
from django.db import connection
from django.http import HttpRequest
from django.utils import timezone

from .models import Payment, PaymentVoid, Receipt

KEPT = timedelta(hours=12)  # an attempt older than this at sign-in is not news any more
UNSENT_SESSION_KEY = "billing_unsent_payment"
MEMO_SESSION_KEY = "billing_last_payment_seen"
FIELDS = ("amount", "method", "reference", "tendered")


@dataclass(frozen=True)
class LastAttempt:
    """The last payment form the user sent before this sign-in, and whether it was recorded."""

    parcel_pk: int
    parcel_id: str  # the cadastre number
    amount: Decimal | None
    submitted_at: datetime
    expired: bool  # sent after the session had expired: it never reached the payment service
    data: dict[str, str]  # what the form carried, to put back in it (only when not recorded)
    receipt: Receipt | None
    void: PaymentVoid | None = None  # the recorded payment was voided since (issue 17)

    @property
    def recorded(self) -> bool:
        return self.receipt is not None

    @property
    def voided(self) -> bool:
        return self.void is not None


def _cache_key(user_id: int) -> str:
    return f"billing:last-payment:{connection.settings_dict['NAME']}:{user_id}"


def _entry(*, key: str, parcel_pk: int, data: Any, expired: bool) -> dict[str, Any]:
    return {
        "key": str(key)[:64], "parcel_pk": int(parcel_pk), "submitted_at": timezone.now().isoformat(), "expired": expired,
        "data": {name: str(data.get(name, ""))[:100] for name in FIELDS},
    }


def attempt_remember(*, user: Any, parcel_pk: int, key: str, data: Any) -> None:
    """Called by the counter just before ``payment_record``: this user's last sent form."""
    cache.set(_cache_key(user.pk), _entry(key=key, parcel_pk=parcel_pk, data=data, expired=False), KEPT.total_seconds())


def attempt_answered(*, user: Any, key: str) -> None:
    """The page that answers the form with ``key`` was shown to ``user`` (its receipt, or the
    counter's refusal or question): its outcome is known and is not told after the next sign-in."""
    entry = cache.get(_cache_key(user.pk))
    if entry and entry.get("key") == key and not entry.get("answered"):
        cache.set(_cache_key(user.pk), {**entry, "answered": True}, KEPT.total_seconds())


def unsent_remember(request: HttpRequest, parcel_pk: int) -> None:
    """A payment form posted without a valid session (it timed out): kept in the new session."""
    key = request.POST.get("idempotency_key", "")
    if key:
        request.session[UNSENT_SESSION_KEY] = _entry(key=key, parcel_pk=parcel_pk, data=request.POST, expired=True)


def last_attempt(request: HttpRequest) -> LastAttempt | None:
    """The last form sent before the current sign-in, looked up by its key; None when there is
    none, or it was sent during this sign-in (the page that answered it said what happened)."""
    user = request.user
    signed_in = user.last_login
    if signed_in is None:
        return None
    unsent = request.session.pop(UNSENT_SESSION_KEY, None)
    memo = request.session.get(MEMO_SESSION_KEY)
    if unsent is not None:  # now attributable: the person who signed in on this browser
        cache.set(_cache_key(user.pk), unsent, KEPT.total_seconds())
        entry = unsent
    elif memo is not None and memo.get("login") == signed_in.isoformat():
        entry = memo["entry"]  # read once per sign-in: what was sent before it does not change
    else:
        entry = cache.get(_cache_key(user.pk))
    request.session[MEMO_SESSION_KEY] = {"login": signed_in.isoformat(), "entry": entry}
    if not entry or entry.get("answered"):
        return None
    submitted_at = datetime.fromisoformat(entry["submitted_at"])
    if submitted_at >= signed_in or signed_in - submitted_at > KEPT:
        return None
    payment = Payment.objects.filter(idempotency_key=entry["key"]).select_related("receipt__office", "void__voided_by").first()
    try:
        amount = Decimal(entry["data"].get("amount", "").replace(",", "").replace("$", "").strip())
    except InvalidOperation:
        amount = None
    from parcels.models import Parcel

    parcel_id = Parcel.objects.filter(pk=entry["parcel_pk"]).values_list("parcel_id", flat=True).first() or ""
    if payment is not None:
        amount = payment.amount.amount
    return LastAttempt(parcel_pk=entry["parcel_pk"], parcel_id=parcel_id, amount=amount, submitted_at=submitted_at, expired=entry["expired"],
                       data=entry["data"], receipt=payment.receipt if payment is not None else None,
                       void=getattr(payment, "void", None) if payment is not None else None)
