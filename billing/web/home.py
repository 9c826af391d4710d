"""The home page (``/``): staff see the registry's counts; a landowner sees each of his parcels
with what it owes today and its next payment, his latest receipts and the ¶12 terms. It reads
the accounts, so it lives in billing, at the top of parcels → levy → billing."""

from __future__ import annotations

from decimal import Decimal

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils import timezone
from django.utils.translation import get_language

from parcels.access import owner_ids_for_user
from parcels.models import Parcel
from parcels.roles import LANDOWNER, STAFF_ROLES, has_role

from ..accounts import account_states, delinquency_parameters
from ..models import Receipt, charge_names
from ..portal import installment_bills_of
from ..references import payment_reference, reference_display
from ..selectors import open_seizures
from ..services.bills import bill_office, office_snapshot
from ..wording import rate_label


def _open_charges(unpaid: list, charges: dict) -> list[dict]:
    """Issue 19, ¶13: each open charge with its RF payment reference (billing.references), in
    payment order, with its name in the reader's language (``charges``: the account's, by key)."""
    return [{"label": charges[state.key].label, "balance": state.balance, "last_day": state.last_day,
             "reference": reference_display(payment_reference(charges[state.key].pk))}
            for state in unpaid if state.key in charges]


def _landowner_rows(parcels: list[Parcel]) -> list[dict]:
    """Each of a landowner's parcels with what it owes today (¶13) and its next payment: the
    oldest charge with a balance, by its last day to pay (¶12); and each open charge with its
    payment reference for a bank transfer (issue 19)."""

    today = timezone.localdate()
    states = account_states(parcels=parcels, as_of=today)
    bills = installment_bills_of(parcels, today=today)
    # their names in a few queries for all of them, not per parcel (issue 20, query budgets)
    charge_names([charge for account in states.values() for charge in account.charges.values()])
    rows = []
    for parcel in parcels:
        state = states[parcel.pk].state
        unpaid = sorted((c for c in state.charges if c.balance > 0), key=lambda c: (c.last_day, c.key))
        rows.append({"parcel": parcel, "owed_now": state.total_due, "next": unpaid[0] if unpaid else None,
                     "late": bool(unpaid) and unpaid[0].last_day < today, "bills": bills[parcel.pk],
                     "open_charges": _open_charges(unpaid, states[parcel.pk].charges)})
    return rows


def _landowner_totals(rows: list[dict]) -> dict:
    """¶13: what the landowner owes today across all his parcels, and the earliest last day to pay
    among their next payments (¶12): past means late."""
    total = sum((row["owed_now"] for row in rows), Decimal("0.00"))
    last_days = [row["next"].last_day for row in rows if row["next"] is not None]
    earliest = min(last_days) if last_days else None
    return {"total_owed": total, "earliest_last_day": earliest,
            "earliest_late": earliest is not None and earliest < timezone.localdate()}


@login_required
def home(request: HttpRequest) -> HttpResponse:
    if has_role(request.user, *STAFF_ROLES):
        return render(request, "parcels/home_staff.html", {
            "parcel_count": Parcel.objects.count(),
            "permanent_count": Parcel.objects.filter(inclusion=Parcel.Inclusion.PERMANENT).count(),
        })
    if has_role(request.user, LANDOWNER):
        parcels = Parcel.objects.filter(owner_id__in=owner_ids_for_user(request.user)).select_related("owner")
        account = getattr(request.user, "owner_account", None)
        receipts = (
            Receipt.objects.filter(snapshot__owner_key=account.owner.owner_key).select_related("office", "payment")
            .order_by("-issued_at")[:20] if account else []
        )
        params = delinquency_parameters(timezone.localdate())
        rows = _landowner_rows(list(parcels))
        # ¶14, issue 18: an open seizure case of one of his parcels comes first
        seizures = open_seizures(parcels=[row["parcel"] for row in rows], owed={row["parcel"].pk: row["owed_now"] for row in rows},
                                 today=timezone.localdate())
        # ¶13: where to pay, as the bills print it (the office they name, its address, phone, hours);
        # not its ways to pay, written for the bill ("bring this bill")
        office = office_snapshot(bill_office())
        lang = "en" if (get_language() or "").startswith("en") else "es"
        return render(request, "parcels/home_landowner.html", {
            "rows": rows, **_landowner_totals(rows), "receipts": receipts, "grace_days": params.grace_days,
            "seizures": seizures, "today": timezone.localdate(),
            "rate": rate_label(params.surcharge_rate), "office": office,
            "office_address": ", ".join(office.address_block[1:]) if office else "",
            "office_hours": office.hours(lang) if office else "",
            "transfer": {"bank": settings.PAYMENT_TRANSFER_BANK, "account": settings.PAYMENT_TRANSFER_ACCOUNT,
                         "routing": settings.PAYMENT_TRANSFER_ROUTING},
        })
    return render(request, "parcels/home_norole.html", status=403)
