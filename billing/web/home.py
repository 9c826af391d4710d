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
from ..models import Charge, Receipt, charge_names
from ..portal import installment_bills
from ..references import payment_reference, reference_display
from ..selectors import open_seizures
from ..services.bills import bill_office, office_snapshot
from ..wording import rate_label


def _charge_id(key: str) -> int | None:
    """The charge id of an account's charge key (``accounts.charge_key``: ``C`` + 12 digits)."""
    return int(key[1:]) if key[:1] == "C" and key[1:].isdigit() else None


def _open_charges(unpaid: list) -> list[dict]:
    """Issue 19, ¶13: each open charge with its RF payment reference (billing.references), in
    payment order, with its name in the reader's language."""
    ids = [pk for pk in (_charge_id(c.key) for c in unpaid) if pk is not None]
    charges = {charge.pk: charge for charge in Charge.objects.filter(pk__in=ids).select_related("fiscal_year")}
    charge_names(charges.values())
    found = []
    for state in unpaid:
        charge = charges.get(_charge_id(state.key) or 0)
        if charge is not None:
            found.append({"label": charge.label, "balance": state.balance, "last_day": state.last_day,
                          "reference": reference_display(payment_reference(charge.pk))})
    return found


def _landowner_rows(parcels: list[Parcel]) -> list[dict]:
    """Each of a landowner's parcels with what it owes today (¶13) and its next payment: the
    oldest charge with a balance, by its last day to pay (¶12); and each open charge with its
    payment reference for a bank transfer (issue 19)."""

    today = timezone.localdate()
    states = account_states(parcels=parcels, as_of=today)
    rows = []
    for parcel in parcels:
        state = states[parcel.pk].state
        unpaid = sorted((c for c in state.charges if c.balance > 0), key=lambda c: (c.last_day, c.key))
        rows.append({"parcel": parcel, "owed_now": state.total_due, "next": unpaid[0] if unpaid else None,
                     "late": bool(unpaid) and unpaid[0].last_day < today, "bills": installment_bills(parcel),
                     "open_charges": _open_charges(unpaid)})
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
