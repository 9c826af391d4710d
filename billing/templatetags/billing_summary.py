"""``{% parcel_owed_box parcel %}``: the summary box of what a parcel owes today (¶13) and by
when (¶12), for pages of apps below billing (the parcel page), which cannot import the accounts."""

from __future__ import annotations

from typing import Any

from django import template
from django.utils import timezone

from billing import accounts

register = template.Library()


@register.inclusion_tag("billing/_parcel_owed_box.html", takes_context=True)
def parcel_owed_box(context: template.Context, parcel: Any) -> dict[str, Any]:
    """The statement's total due today, and its oldest unpaid line's last day to pay; worded to
    the reader ("Usted debe hoy") for the landowner, about the parcel ("Adeuda hoy") for staff."""
    today = timezone.localdate()
    statement = accounts.statement(parcel=parcel, as_of=today)
    unpaid = [line for line in statement.lines if line.balance > 0]
    first = min(unpaid, key=lambda line: line.last_day_to_pay) if unpaid else None
    landowner = bool((context.get("role") or {}).get("landowner"))
    return {"parcel": parcel, "statement": statement, "first": first, "late": first is not None and first.last_day_to_pay < today,
            "landowner": landowner}


@register.inclusion_tag("billing/_reminder_log.html")
def parcel_reminder_log(parcel: Any) -> dict[str, Any]:
    """Issue 19: the e-mail reminders tried for the parcel (``selectors.parcel_reminder_log``),
    for the registry's parcel page, which cannot import billing; staff pages only."""
    from billing import selectors

    return {"reminders": selectors.parcel_reminder_log(parcel=parcel)}


@register.simple_tag
def bill_offer_days() -> int:
    """``settings.BILL_OFFER_DAYS``: how many days before its due date an installment's bill is offered."""
    from django.conf import settings

    return settings.BILL_OFFER_DAYS
