"""¶11, ¶9, ¶12: finalizing the roll, and the July and January installments it issues."""

from __future__ import annotations

from datetime import date
from typing import Any

from django.db import connection, transaction
from django.utils import timezone
from django.utils.translation import gettext as _

from levy.models import Estimate, FiscalYear, LegalParameterSet, Levy
from levy.services import LevyError, draft_levy, final_levy, fiscal_year_get, registry_fingerprint, require_role
from parcels.roles import HACIENDA

from .. import chain, rules
from ..accounts import due_and_last_day
from ..errors import BillingError
from ..models import Charge
from .bills import zero_notices_issue
from .journal import accrual_journal_for_roll


@transaction.atomic
def installments_issue(*, acting_user: Any, levy: Levy) -> int:
    """¶9, ¶12: for every parcel that pays, the July and January installments of its net charge
    (O&M charge less the water-right credit). Idempotent: running it again creates nothing."""
    if not levy.is_final:
        raise BillingError(_("Solo un padrón finalizado genera plazos."))
    chain.link(chain.ROLL, levy.pk)  # the final roll: a link of the tamper-evident chain (billing.chain)
    params = LegalParameterSet.in_force(levy.finalized_on)  # the late-roll rule of the finalization date
    finalized_on = levy.finalized_on if params.late_roll_due_on_finalization else None
    halves = {}
    for number in (1, 2):
        due = rules.installment_due_date(fiscal_year_start=levy.fiscal_year.start, number=number, finalized_on=finalized_on)
        halves[number] = due_and_last_day(due=due)
    now = timezone.now()
    label = levy.fiscal_year.label
    # Stored in Spanish whatever the session's language: it is the charge's legal name.
    names = {1: f"{label} plazo 1 (julio)", 2: f"{label} plazo 2 (enero)"}
    with connection.cursor() as cursor:
        # Set-based (issue 20: a district of 100,000 parcels has some 150,000 of them): each half of a levied line that
        # owes something and has no charge yet, in cadastre order, then each new charge's ledger entry.
        cursor.execute(
            """
            INSERT INTO billing_charge (parcel_id, kind, fiscal_year_id, number, roll_line_id, description, principal,
                                        principal_currency, due_date, last_day_to_pay, accrues_surcharge, created_by_id, created_at)
            SELECT r.parcel_id, %(kind)s, %(year)s, h.number, r.id, h.name, h.principal, 'USD', h.due, h.last_day, TRUE, %(user)s,
                   %(now)s
              FROM levy_rollline r
             CROSS JOIN LATERAL (VALUES (1, %(name1)s, r.first_installment, %(due1)s::date, %(last1)s::date),
                                        (2, %(name2)s, r.second_installment, %(due2)s::date, %(last2)s::date))
                   AS h (number, name, principal, due, last_day)
             WHERE r.levy_id = %(levy)s AND r.levied AND h.principal > 0
               AND NOT EXISTS (SELECT 1 FROM billing_charge c
                                WHERE c.roll_line_id = r.id AND c.number = h.number AND c.kind = %(kind)s)
             ORDER BY r.parcel_code, r.id, h.number
            """,
            {"kind": Charge.Kind.INSTALLMENT, "year": levy.fiscal_year_id, "user": acting_user.pk, "now": now, "levy": levy.pk,
             "name1": names[1], "due1": halves[1][0], "last1": halves[1][1],
             "name2": names[2], "due2": halves[2][0], "last2": halves[2][1]},
        )
        issued = cursor.rowcount
        if not issued:
            return 0
        cursor.execute(
            """
            INSERT INTO billing_ledgerentry (parcel_id, entry_date, kind, debit, debit_currency, credit, credit_currency,
                                             charge_id, description, created_by_id, created_at)
            SELECT c.parcel_id, c.due_date, 'charge', c.principal, 'USD', 0, 'USD', c.id, c.description, %s, %s
              FROM billing_charge c
              JOIN levy_rollline r ON r.id = c.roll_line_id
             WHERE r.levy_id = %s AND c.kind = 'installment'
               AND NOT EXISTS (SELECT 1 FROM billing_ledgerentry e WHERE e.charge_id = c.id)
            """,
            [acting_user.pk, now, levy.pk],
        )
    return issued


@transaction.atomic
def roll_finalize(*, acting_user: Any, fiscal_year: str, today: date | None = None) -> Levy:
    """¶11: a Hacienda officer who did not certify the estimates finalizes the roll. Due by July 1;
    a late finalization is allowed and recorded as late. Refuses when the registry changed since
    the roll was computed, or when the estimates were replaced."""
    require_role(acting_user, HACIENDA)
    year = fiscal_year_get(fiscal_year)
    year = FiscalYear.objects.select_for_update().get(pk=year.pk)
    if final_levy(year):
        raise LevyError(_("El padrón de %(y)s ya está finalizado.") % {"y": year.label})
    levy = draft_levy(year)
    if levy is None:
        raise LevyError(_("No hay un padrón calculado para %(y)s: calcule primero.") % {"y": year.label})
    estimate = levy.estimate
    if estimate.status != Estimate.Status.CERTIFIED:
        raise LevyError(_("Los estimados cambiaron desde el cálculo: calcule de nuevo."))
    if estimate.certified_by_id == acting_user.pk:
        raise LevyError(_("Quien certificó los estimados no puede finalizar el padrón."))
    if registry_fingerprint() != levy.registry_fingerprint:
        raise LevyError(_("El registro de predios cambió desde el cálculo del padrón: calcule de nuevo."))
    on = today or timezone.localdate()
    levy.status = Levy.Status.FINAL
    levy.finalized_by = acting_user
    levy.finalized_at = timezone.now()
    levy.finalized_on = on
    levy.finalized_late = on > year.roll_deadline
    levy.save(update_fields=["status", "finalized_by", "finalized_at", "finalized_on", "finalized_late"])
    # Billing builds on the finalized roll, in the same transaction.
    installments_issue(acting_user=acting_user, levy=levy)
    # ¶9: a line at 100 % credit still gets its notice: numbered and frozen here in one set-based
    # step, its PDF printed after the commit by the bulk-printing workers (issue 20)
    zero_notices_issue(acting_user=acting_user, levy=levy, issued_on=on)
    accrual_journal_for_roll(acting_user=acting_user, levy=levy)  # issue 19: levy receivable against levy income
    return levy
