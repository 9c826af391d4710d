"""Review pages before irreversible acts (certifying estimates, finalizing a roll, closing a day,
voiding a payment): the act's view first renders every figure it will record, and the act happens
only from that page's POST, which carries a fingerprint of the figures shown.

The fingerprint is an HMAC (the project's secret key) over the act's name and its figures, so a
client cannot make one without having been shown the review page, and a fingerprint of figures
that changed since (another clerk's edit, a payment recorded meanwhile) no longer matches: the
review page is shown again with the current figures instead of acting on ones nobody reviewed."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from django.utils.crypto import constant_time_compare, salted_hmac

FIELD = "reviewed"  # the hidden field of the review page's form


def fingerprint(act: str, figures: Iterable[Any]) -> str:
    """The HMAC of ``act`` and ``figures`` (each turned into its ``str``, so Decimal('1.50') and
    Decimal('1.5') differ: the figure as shown is the one reviewed)."""
    payload = json.dumps([act, [str(figure) for figure in figures]], ensure_ascii=False)
    return salted_hmac(f"lajas.review.{act}", payload, algorithm="sha256").hexdigest()


def reviewed(data: Any, act: str, figures: Iterable[Any]) -> bool:
    """Whether ``data`` (request.POST) carries the fingerprint of exactly these figures."""
    sent = data.get(FIELD) or ""
    return bool(sent) and constant_time_compare(sent, fingerprint(act, figures))


def was_sent(data: Any) -> bool:
    """Whether the POST came from a review page (a fingerprint, matching or not)."""
    return bool(data.get(FIELD))
