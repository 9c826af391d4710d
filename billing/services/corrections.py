"""¶9, ¶11: a supplementary entry on a finalized roll line, on the parcel's account."""

from __future__ import annotations

from typing import Any

from django.db import transaction

from ..accounts import due_and_last_day
from ..models import Charge, LedgerEntry


@transaction.atomic
def correction_post(*, acting_user: Any, correction: Any) -> None:
    """¶9, ¶11: a supplementary roll entry on the parcel's account. More owed is a charge of its
    own (due on the correction's date, with the ¶12 surcharge if left unpaid); less owed is a
    credit on that date, applied like a payment to the oldest balance."""
    line = correction.roll_line
    net = correction.net_delta.amount
    description = f"Corrección {line.levy.fiscal_year.label}: {correction.reason[:120]}"
    if net > 0:
        due, last_day = due_and_last_day(due=correction.due_date)
        charge = Charge.objects.create(
            parcel_id=line.parcel_id, kind=Charge.Kind.CORRECTION, fiscal_year=line.levy.fiscal_year, roll_line=line,
            correction=correction, description=description, principal=net, due_date=due, last_day_to_pay=last_day,
            created_by=acting_user,
        )
        LedgerEntry.objects.create(parcel_id=line.parcel_id, entry_date=due, kind=LedgerEntry.Kind.CHARGE, debit=net,
                                   charge=charge, description=description, created_by=acting_user)
    elif net < 0:
        LedgerEntry.objects.create(parcel_id=line.parcel_id, entry_date=correction.due_date, kind=LedgerEntry.Kind.CORRECTION,
                                   credit=-net, description=description, created_by=acting_user)
