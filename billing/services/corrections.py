"""¶9, ¶11: a supplementary entry on a finalized roll line, on the parcel's account."""

from __future__ import annotations

from datetime import date
from decimal import Decimal
from typing import Any

from django.db import transaction
from django.utils.translation import gettext as _

from levy import rules as levy_rules
from levy.models import RollCorrection, RollLine
from levy.services import LevyError, require_role
from parcels.roles import HACIENDA

from .. import chain
from ..accounts import due_and_last_day
from ..models import Charge, LedgerEntry


@transaction.atomic
def correction_post(*, acting_user: Any, correction: Any) -> None:
    """¶9, ¶11: a supplementary roll entry on the parcel's account. More owed is a charge of its
    own (due on the correction's date, with the ¶12 surcharge if left unpaid); less owed is a
    credit on that date, applied like a payment to the oldest balance."""
    chain.link(chain.CORRECTION, correction.pk)
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


@transaction.atomic
def roll_correction_create(
    *, acting_user: Any, roll_line: RollLine, om_charge_delta: Decimal, credit_delta: Decimal, reason: str, due_date: date,
) -> RollCorrection:
    """¶9, ¶11: a supplementary entry after finalization, referencing the line it corrects."""
    require_role(acting_user, HACIENDA)
    if not roll_line.levy.is_final:
        raise LevyError(_("Solo se corrige un padrón finalizado; un borrador se calcula de nuevo."))
    if not reason.strip():
        raise LevyError(_("Una corrección requiere una razón."))
    om_delta = Decimal(str(om_charge_delta)).quantize(levy_rules.CENT)
    credit = Decimal(str(credit_delta)).quantize(levy_rules.CENT)
    if om_delta == 0 and credit == 0:
        raise LevyError(_("Una corrección debe cambiar el cargo o el crédito."))
    correction = RollCorrection(
        roll_line=roll_line, om_charge_delta=om_delta, credit_delta=credit, net_delta=om_delta - credit,
        reason=reason.strip(), due_date=due_date, created_by=acting_user,
    )
    correction.full_clean()
    correction.save()
    # Billed and reconciled as its own charge, in the same transaction.
    correction_post(acting_user=acting_user, correction=correction)
    return correction
